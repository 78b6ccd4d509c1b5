//go:build unix

package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var docs = flag.Bool("docs", false, "write the live page's screenshot to docs/live-page.png")

// The live page in a real browser: headless Chromium (Debian's chromium;
// .ci/run installs it) loads the page of `run --emulate --http` and the
// rendered page shows the status, a live value of a signal and a plot per
// port. With -args -docs the screenshot goes to docs/live-page.png.
func TestLivePageInBrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := osexec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("BEAMCONNECT_REQUIRE_BROWSER") != "" {
			t.Fatal("no chromium, and CI requires the browser test (apt-get install -y chromium)")
		}
		t.Skip("no chromium (apt-get install -y chromium)")
	}
	bin := binary(t)
	// A copy of the cruise rig, edited while it runs to see the reload.
	cfg := filepath.Join(t.TempDir(), "rig.json")
	orig, err := os.ReadFile("../../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	run := osexec.Command(bin, "run", "rig.json", "--emulate", "--duration", "60s", "--http", "127.0.0.1:0", "--log-level", "info")
	run.Dir = filepath.Dir(cfg)
	stderr, _ := run.StderrPipe()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Kill(); run.Wait() })
	url := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" {
				select {
				case url <- m:
				default:
				}
			}
		}
	}()
	var page string
	select {
	case page = <-url:
	case <-time.After(20 * time.Second):
		t.Fatal("run --http never said where its page is")
	}

	cdp := startBrowser(t, browser)
	session := cdp.open(t, page)
	type view struct {
		Status string
		Speed  string
		Plots  int
		Health string
		Stream string
	}
	var v view
	var evalErr error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evalErr = cdp.eval(t, session, `JSON.stringify({
			Status: document.getElementById("status").textContent,
			Speed: (document.querySelector('td[data-col="out1.groundspeed"]') || {}).textContent || "",
			Plots: document.querySelectorAll(".uplot canvas").length,
			Health: document.getElementById("health").textContent,
			Stream: document.getElementById("stream").textContent})`, &v)
		speed, err := strconv.ParseFloat(v.Speed, 64)
		if v.Status == "3 connected" && err == nil && speed > 1 && v.Plots == 8 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	speed, err := strconv.ParseFloat(v.Speed, 64)
	if v.Status != "3 connected" || err != nil || speed <= 1 || v.Plots != 8 || v.Health != "healthy" || v.Stream != "live" {
		t.Fatalf("the rendered page shows %+v (%v); want status 3 connected, a groundspeed above 1 m/s, 8 plots, healthy, live", v, evalErr)
	}
	// An edit of the config shows as an applied reload with its diff, and
	// the config shown is the new one.
	edited := strings.Replace(string(orig), `{ "propertyName": "gear" } ]`, `{ "propertyName": "gear" }, { "propertyName": "wheelspeed" } ]`, 1)
	if err := os.WriteFile(cfg, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	var r struct{ Events, Config, Plots string }
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		evalErr = cdp.eval(t, session, `JSON.stringify({
			Events: document.getElementById("events").textContent,
			Config: document.getElementById("config").textContent,
			Plots: [...document.querySelectorAll('td[data-col]')].map(td => td.dataset.col).join(",")})`, &r)
		if strings.Contains(r.Events, "applied") && strings.Contains(r.Config, "wheelspeed") && strings.Contains(r.Plots, "out3.wheelspeed") {
			break
		}
	}
	if !strings.Contains(r.Events, "applied") || !strings.Contains(r.Events, "wheelspeed") || !strings.Contains(r.Config, "wheelspeed") || !strings.Contains(r.Plots, "out3.wheelspeed") {
		t.Fatalf("after the edit the page shows reloads %q, a config with wheelspeed %v, live values %q (%v)",
			r.Events, strings.Contains(r.Config, "wheelspeed"), r.Plots, evalErr)
	}
	if *docs {
		time.Sleep(3 * time.Second) // a few seconds of traces
		png := cdp.screenshot(t, session)
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "live-page.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// chrome talks the DevTools protocol over --remote-debugging-pipe: JSON
// messages ending in a NUL byte, commands on the browser's fd 3, answers
// and events on its fd 4. No WebSocket, no extra dependency.
type chrome struct {
	w  io.Writer
	r  *bufio.Reader
	id int
}

func startBrowser(t *testing.T, path string) *chrome {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	profile, err := os.MkdirTemp("", "beamconnect-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+profile, "--remote-debugging-pipe", "--window-size=1280,1100", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fds 3 and 4
	// Its own process group, so its renderer and helper processes go too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	t.Cleanup(func() {
		cmdW.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		os.RemoveAll(profile)
	})
	return &chrome{w: cmdW, r: bufio.NewReader(outR)}
}

// call sends a command and waits for its answer, skipping events.
func (c *chrome) call(t *testing.T, session, method string, params any, result any) {
	t.Helper()
	c.id++
	msg := map[string]any{"id": c.id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if _, err := c.w.Write(append(b, 0)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		raw, err := c.r.ReadBytes(0)
		if err != nil {
			t.Fatalf("%s: the browser closed its pipe: %v", method, err)
		}
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(raw[:len(raw)-1], &resp); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if resp.ID != c.id {
			continue // an event
		}
		if resp.Error != nil {
			t.Fatalf("%s: %s", method, resp.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
		}
		return
	}
}

// open makes a tab, navigates it to url and returns its session.
func (c *chrome) open(t *testing.T, url string) string {
	var target struct{ TargetID string }
	c.call(t, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	c.call(t, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	c.call(t, attached.SessionID, "Page.navigate", map[string]any{"url": url}, nil)
	return attached.SessionID
}

// eval evaluates a JavaScript expression that returns a JSON string, and
// decodes it into v; an exception (the page not loaded yet) is an error.
func (c *chrome) eval(t *testing.T, session, expr string, v any) error {
	var r struct {
		Result struct {
			Value string
		}
		ExceptionDetails *struct{ Text string }
	}
	c.call(t, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		return fmt.Errorf("in the page: %s", r.ExceptionDetails.Text)
	}
	if err := json.Unmarshal([]byte(r.Result.Value), v); err != nil {
		return fmt.Errorf("%v: %q", err, r.Result.Value)
	}
	return nil
}

func (c *chrome) screenshot(t *testing.T, session string) []byte {
	var r struct{ Data string }
	c.call(t, session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(fmt.Errorf("screenshot: %w", err))
	}
	return b
}

//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/eventually"
)

var docs = flag.Bool("docs", false, "write the live page's screenshot to docs/live-page.png")

// The live page in a real browser: headless Chromium (Debian's chromium;
// .ci/run installs it) loads the page of `run --emulate --http` and the
// rendered page shows the status, a live value of a signal, a group of
// plots per port with each unit on an axis of its own, and how well the
// model controls. With -args -docs the screenshot goes to docs/live-page.png.
func TestLivePageInBrowser(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	// A copy of the cruise rig, edited while it runs to see the reload.
	cfg := filepath.Join(t.TempDir(), "rig.json")
	orig, err := os.ReadFile("../../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	_, page := startRun(t, filepath.Dir(cfg), "run", "rig.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0", "--log-level", "info")

	cdp := startBrowser(t, browser)
	session := cdp.open(t, page)
	type view struct {
		Status string
		Speed  string
		Ports  int
		Health string
		Stream string
	}
	var v view
	_, evalErr := cdp.until(t, session, `JSON.stringify({
			Status: document.getElementById("status").textContent,
			Speed: (document.querySelector('td[data-col="out1.groundspeed"]') || {}).textContent || "",
			Ports: document.querySelectorAll(".port").length,
			Health: document.getElementById("health").textContent,
			Stream: document.getElementById("stream").textContent})`, &v, func() bool {
		speed, err := strconv.ParseFloat(v.Speed, 64)
		return v.Status == "3 connected" && err == nil && speed > 1 && v.Ports == 7
	})
	speed, err := strconv.ParseFloat(v.Speed, 64)
	if v.Status != "3 connected" || err != nil || speed <= 1 || v.Ports != 7 || v.Health != "healthy" || v.Stream != "live" {
		t.Fatalf("the rendered page shows %+v (%v); want status 3 connected, a groundspeed above 1 m/s, 7 ports (port 0 is the timeline; the model's own signals one), healthy, live", v, evalErr)
	}
	// rpm beside gear, time beside a serial number: each on its own axis,
	// the axis saying its unit.
	panels := waitPanels(t, cdp, session, func(ps []panelView) bool {
		return apart(ps, "out3.rpm", "out3.gear") && apart(ps, "out4.time", "out4.serial_number")
	})
	for name, unit := range map[string]string{"out3.rpm": "1/min", "out3.gear": "(no unit)", "out4.time": "s", "out1.groundspeed": "m/s"} {
		if p := panelOf(panels, name); p == nil || p.Axis != unit {
			t.Errorf("%s: its axis says %q, want %q (%+v)", name, p.axis(), unit, panels)
		}
	}
	checkControl(t, cdp, session, "groundspeed", "setSpeed (model parameter)")
	checkPortZero(t, cdp, session)
	// An edit of the config shows as an applied reload with its diff, and
	// the config shown is the new one.
	edited := strings.Replace(string(orig), `{ "propertyName": "gear" } ]`, `{ "propertyName": "gear" }, { "propertyName": "wheelspeed" } ]`, 1)
	if err := os.WriteFile(cfg, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	var r struct{ Events, Config, Plots string }
	_, evalErr = cdp.until(t, session, `JSON.stringify({
			Events: document.getElementById("events").textContent,
			Config: document.getElementById("config").textContent,
			Plots: [...document.querySelectorAll('td[data-col]')].map(td => td.dataset.col).join(",")})`, &r, func() bool {
		return strings.Contains(r.Events, "applied") && strings.Contains(r.Config, "wheelspeed") && strings.Contains(r.Plots, "out3.wheelspeed")
	})
	if !strings.Contains(r.Events, "applied") || !strings.Contains(r.Events, "wheelspeed") || !strings.Contains(r.Config, "wheelspeed") || !strings.Contains(r.Plots, "out3.wheelspeed") {
		t.Fatalf("after the edit the page shows reloads %q, a config with wheelspeed %v, live values %q (%v)",
			r.Events, strings.Contains(r.Config, "wheelspeed"), r.Plots, evalErr)
	}
	checkScopeLayout(t, cdp, session)
	checkSettledSpan(t, cdp, session)
	if *docs {
		// A few seconds more of traces.
		simTime := func() float64 {
			var info string
			cdp.eval(t, session, `JSON.stringify(document.getElementById("scopeinfo").textContent)`, &info)
			var n int
			var at float64
			fmt.Sscanf(info, "%d samples shown, simulation time %g s", &n, &at)
			return at
		}
		from := simTime()
		eventually.True(time.Minute, func() bool { return simTime() >= from+3 })
		png := cdp.screenshot(t, session)
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "live-page.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keepScreenshot(t, cdp, session, "live-page-running.png")
}

// checkControl waits for the page to judge loop name good: its verdict in
// the control table and the header, its figures with their units, and its
// setpoint (from setpoint) drawn dashed in the measured value's panel. A
// loaded machine may make a run's model miss its deadlines (a fault): the
// loop that held is then "held, in a run with faults", never good, and
// the page is not healthy; the verdict must agree with the health.
func checkControl(t *testing.T, cdp *chrome, session, name, setpoint string) {
	t.Helper()
	var v struct {
		Row    map[string]string
		Chip   string
		Class  string
		Health string
	}
	cdp.until(t, session, `JSON.stringify({
			Row: Object.fromEntries([...document.querySelectorAll('td[data-loop="`+name+`"]')].map(td => [td.dataset.figure, td.textContent])),
			Chip: document.getElementById("controlverdict").textContent,
			Class: document.getElementById("controlverdict").className,
			Health: document.getElementById("health").textContent})`, &v, func() bool {
		return v.Row["verdict"] == "good" || v.Row["verdict"] == "held, in a run with faults"
	})
	r := v.Row
	verdict, chip := "good", "control: good"
	if v.Health != "healthy" {
		verdict, chip = "held, in a run with faults", "control: "+name+" held, in a run with faults"
		t.Logf("the run had faults (a loaded machine?): the page says %q", v.Health)
	}
	if r["verdict"] != verdict || v.Chip != chip || strings.Contains(v.Class, "good") != (verdict == "good") || !strings.HasSuffix(r["error now"], " m/s") ||
		!strings.HasSuffix(r["RMS after settling"], " m/s") || !strings.HasSuffix(r["settled after"], " s") ||
		!strings.Contains(r["setpoint"], "20 m/s from "+setpoint) || !strings.Contains(r["why"], "held within ±0.4 m/s") {
		t.Errorf("the page's verdict on %s: %+v; want %s, its figures in m/s, the setpoint 20 m/s from %s", name, v, verdict, setpoint)
	}
	ps := waitPanels(t, cdp, session, func(ps []panelView) bool {
		p := panelOf(ps, "setpoint:out1.groundspeed")
		return p != nil && slices.Contains(p.Fields, "out1.groundspeed")
	})
	if p := panelOf(ps, "setpoint:out1.groundspeed"); p == nil || !slices.Contains(p.Fields, "out1.groundspeed") || !slices.Equal(p.Dashed, []string{"setpoint:out1.groundspeed"}) {
		t.Errorf("the setpoint's panel: %+v; want it dashed beside out1.groundspeed", p)
	}
}

// checkPortZero: port 0 is a status timeline and two values, no panels.
func checkPortZero(t *testing.T, cdp *chrome, session string) {
	t.Helper()
	var tl struct {
		Shown             bool
		Segments          []int
		Status, Directive string
	}
	cdp.until(t, session, `JSON.stringify(timelineCheck())`, &tl, func() bool { return tl.Shown && slices.Contains(tl.Segments, 3) })
	if !tl.Shown || !slices.Contains(tl.Segments, 3) || tl.Status != "3 connected" || tl.Directive != "1 (connect)" {
		t.Errorf("the status timeline: %+v; want it shown with a connected stretch, status 3 connected, directive 1", tl)
	}
	var ps []panelView
	cdp.eval(t, session, `JSON.stringify(scopeCheck())`, &ps)
	for _, p := range ps {
		if p.Port == "out0" || p.Port == "in0" {
			t.Errorf("a panel of port 0: %+v", p)
		}
	}
}

// checkSettledSpan: a settled speed is drawn as the steady line it is: its
// panel spans at least 10 % of 20 m/s, not its noise's hundredths.
func checkSettledSpan(t *testing.T, cdp *chrome, session string) {
	t.Helper()
	// The page's clock when the window changed: the bands are measured
	// again (twice a second, lastCheck) after it.
	var changed float64
	if err := cdp.eval(t, session, `(() => { const w = document.getElementById("window"); w.value = "2";
		w.dispatchEvent(new Event("change")); return JSON.stringify(performance.now()) })()`, &changed); err != nil {
		t.Fatal(err)
	}
	var measured float64
	if ok, err := cdp.until(t, session, `JSON.stringify(lastCheck)`, &measured, func() bool { return measured > changed }); !ok {
		t.Fatalf("the bands were not measured again after the window changed: %v", err)
	}
	var ok bool
	ps := waitPanels(t, cdp, session, func(ps []panelView) bool { return panelOf(ps, "out1.groundspeed") != nil })
	if p := panelOf(ps, "out1.groundspeed"); p.Hi-p.Lo < 2 {
		t.Errorf("the settled speed's panel spans %g to %g m/s: its noise fills it", p.Lo, p.Hi)
	}
	// Regrouped by the values shown, the setpoint is still drawn with the
	// value it is the setpoint of.
	if p := panelOf(ps, "setpoint:out1.groundspeed"); p == nil || !slices.Contains(p.Fields, "out1.groundspeed") {
		t.Errorf("the setpoint's panel after regrouping: %+v", p)
	}
	for _, f := range []string{"out2.throttle", "in1.throttle"} {
		if p := panelOf(ps, f); p != nil && p.Hi-p.Lo < 0.1 {
			t.Errorf("%s's panel spans %g to %g: a steady pedal's last digits fill it", f, p.Lo, p.Hi)
		}
	}
	cdp.eval(t, session, `(() => { const w = document.getElementById("window"); w.value = "10";
		w.dispatchEvent(new Event("change")); return JSON.stringify(true) })()`, &ok)
}

// checkScopeLayout measures the scope as the browser drew it: every plot
// area starts at the same x and is as wide as the others, each value axis'
// labels are distinct and fit the axis, and the time labels fit the
// canvas.
func checkScopeLayout(t *testing.T, cdp *chrome, session string) {
	t.Helper()
	var plots []struct {
		Port       string
		Left       float64
		Width      float64
		Labels     []string
		LabelWidth float64
		Axis       float64
		TimeFits   bool
		Chart, UW  float64
	}
	// A reload re-lays the scope out: give it a few frames to settle.
	aligned := func() bool {
		for _, p := range plots {
			if math.Abs(p.Left-plots[0].Left) > 0.5 || math.Abs(p.Width-plots[0].Width) > 0.5 {
				return false
			}
		}
		return len(plots) > 0
	}
	if _, err := cdp.until(t, session, `JSON.stringify(scopeCheck())`, &plots, aligned); err != nil || len(plots) == 0 {
		t.Fatalf("scopeCheck: %v (%d plots)", err, len(plots))
	}
	for _, p := range plots {
		if math.Abs(p.Left-plots[0].Left) > 0.5 || math.Abs(p.Width-plots[0].Width) > 0.5 {
			t.Errorf("plot of %s: area at x %.1f, %.1f wide; the first at %.1f, %.1f wide (%+v)", p.Port, p.Left, p.Width, plots[0].Left, plots[0].Width, plots)
		}
		seen := map[string]bool{}
		for _, l := range p.Labels {
			if l != "" && seen[l] {
				t.Errorf("plot of %s: the value label %q repeats in %q", p.Port, l, p.Labels)
			}
			seen[l] = true
		}
		if p.LabelWidth+8 > p.Axis {
			t.Errorf("plot of %s: labels %q are %.0f px wide, the axis %.0f px: cut", p.Port, p.Labels, p.LabelWidth, p.Axis)
		}
		if !p.TimeFits {
			t.Errorf("plot of %s: a time label runs off the canvas", p.Port)
		}
	}
}

// panelView is one plot of the scope as the page drew it (scopeCheck).
type panelView struct {
	Port, Unit string
	Fields     []string
	Lo, Hi     float64
	Clipped    []string
	Dashed     []string
	Axis       string `json:"axisLabel"` // the value axis' caption
}

func (p *panelView) axis() string {
	if p == nil {
		return "(no panel)"
	}
	return p.Axis
}

// waitPanels reads the scope's panels until ok says they are as wanted,
// or a minute passed, and returns the last read.
func waitPanels(t *testing.T, cdp *chrome, session string, ok func([]panelView) bool) []panelView {
	t.Helper()
	var ps []panelView
	// Until the page has loaded, scopeCheck is not there yet.
	if _, err := cdp.until(t, session, `JSON.stringify(scopeCheck())`, &ps, func() bool { return ok(ps) }); err != nil {
		t.Fatalf("scopeCheck: %v", err)
	}
	return ps
}

func panelOf(ps []panelView, field string) *panelView {
	for i := range ps {
		if slices.Contains(ps[i].Fields, field) {
			return &ps[i]
		}
	}
	return nil
}

// apart reports whether both fields are drawn, in different panels.
func apart(ps []panelView, a, b string) bool {
	pa, pb := panelOf(ps, a), panelOf(ps, b)
	return pa != nil && pb != nil && pa != pb
}

// The follow rig's relative signals: a time to collision, which reaches
// thousands of seconds while the cars hold their distance, is drawn apart
// from the time gap of about 1.8 s, though both are seconds, and the time
// gap's panel shows its values over a good part of its height.
func TestLivePageScales(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	cdp := startBrowser(t, browser)
	_, page := startRun(t, "../..", "run", "examples/follow.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0")
	session := cdp.open(t, page)
	const ttc, gap = "out2.ego.timeToCollision:lead", "out2.ego.timeGap:lead"
	// The last 2 s: once the start (a time gap of hundreds of seconds while
	// the cars stand) is out of view, the time gap's panel is about it.
	var set bool
	if _, err := cdp.until(t, session, `(() => { const w = document.getElementById("window"); w.value = "2";
			w.dispatchEvent(new Event("change")); return JSON.stringify(true) })()`, &set, func() bool { return set }); err != nil {
		t.Fatal(err)
	}
	narrow := func(ps []panelView) bool {
		p := panelOf(ps, gap)
		return apart(ps, ttc, gap) && p.Hi-p.Lo < 5
	}
	ps := waitPanels(t, cdp, session, narrow)
	if !apart(ps, ttc, gap) {
		t.Fatalf("%s and %s share a panel: %+v", ttc, gap, ps)
	}
	for _, f := range []string{ttc, gap} {
		if p := panelOf(ps, f); p.Axis != "s" {
			t.Errorf("%s: its axis says %q, want s", f, p.Axis)
		}
	}
	if p := panelOf(ps, gap); p.Hi-p.Lo >= 5 {
		t.Errorf("the time gap's panel spans %g to %g s: its 1.8 s are a flat line", p.Lo, p.Hi)
	}
	keepScreenshot(t, cdp, session, "live-page-follow.png")
}

// keepScreenshot writes the page's screenshot into $BEAMCONNECT_SCREENSHOTS,
// when set, to look at.
func keepScreenshot(t *testing.T, cdp *chrome, session, name string) {
	dir := os.Getenv("BEAMCONNECT_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), cdp.screenshot(t, session), 0o644); err != nil {
		t.Error(err)
	}
}

// When the run ends, the page says so plainly and shows no green
// "healthy"; when beamconnect is killed, the page says it lost contact and
// that the health is unknown.
func TestLivePageAfterTheRun(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	cdp := startBrowser(t, browser)
	type view struct{ Status, Health, HealthClass, Stream, Banner, BannerClass string }
	look := func(session string) view {
		var v view
		cdp.eval(t, session, `JSON.stringify({
			Status: document.getElementById("status").textContent,
			Health: document.getElementById("health").textContent,
			HealthClass: document.getElementById("health").className,
			Stream: document.getElementById("stream").textContent,
			Banner: document.getElementById("banner").hidden ? "" : document.getElementById("banner").textContent,
			BannerClass: document.getElementById("banner").className})`, &v)
		return v
	}
	waitFor := func(session, what string, ok func(view) bool) view {
		var v view
		if !eventually.True(time.Minute, func() bool { v = look(session); return ok(v) }) {
			t.Fatalf("the page never showed %s: %+v", what, v)
		}
		return v
	}
	live := func(v view) bool { return v.Status == "3 connected" && v.Health == "healthy" && v.Stream == "live" }

	// A run that ends, stopped as Ctrl-C stops it once the page shows it
	// live. (Its --duration is a bound, should the test end first.)
	run, page := startRun(t, "../..", "run", "examples/cruise-pedals.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0")
	session := cdp.open(t, page)
	waitFor(session, "the run live", live)
	run.Process.Signal(os.Interrupt)
	run.Wait()
	v := waitFor(session, "the run ended", func(v view) bool { return strings.Contains(v.Banner, "This run ended after") })
	if v.Health != "ended: no faults" || strings.Contains(v.HealthClass, "good") || v.Stream != "run ended" || !strings.Contains(v.BannerClass, "ended") {
		t.Errorf("after the run: %+v", v)
	}
	keepScreenshot(t, cdp, session, "live-page-ended.png")
	// And so it stays: the page closed its stream (EventSource.CLOSED),
	// so it does not reconnect to nothing.
	var state int
	if err := cdp.eval(t, session, `JSON.stringify(es.readyState)`, &state); err != nil || state != 2 {
		t.Errorf("after the run the page's stream is in state %d (%v), want closed (2): it would try again", state, err)
	}
	if v2 := look(session); v2 != v {
		t.Errorf("later the page shows %+v", v2)
	}

	// A run that is killed: no last state, the stream lost.
	run, page = startRun(t, "../..", "run", "examples/cruise-pedals.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0")
	session = cdp.open(t, page)
	waitFor(session, "the run live", live)
	run.Process.Kill()
	run.Wait()
	v = waitFor(session, "the stream lost", func(v view) bool { return strings.Contains(v.Banner, "Lost contact with beamconnect") })
	if v.Health != "unknown" || strings.Contains(v.HealthClass, "good") || !strings.Contains(v.Stream, "stream lost") || !strings.Contains(v.BannerClass, "lost") {
		t.Errorf("after the kill: %+v", v)
	}
	keepScreenshot(t, cdp, session, "live-page-lost.png")
}

// browserSlots bounds the browsers at once: the tests that drive one run
// side by side, but a headless Chromium takes a core while it draws.
var browserSlots = make(chan struct{}, 2)

// findBrowser finds Chromium and waits for a slot to run it in, held
// until the test ends.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := osexec.LookPath(name); err == nil {
			browserSlots <- struct{}{}
			t.Cleanup(func() { <-browserSlots })
			return p
		}
	}
	if os.Getenv("BEAMCONNECT_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium, and CI requires the browser test (apt-get install -y chromium)")
	}
	t.Skip("no chromium (apt-get install -y chromium)")
	return ""
}

// startRun starts the binary in dir with args (a run with --http) and
// returns it and the page's address once it says where that is; the
// test's end kills it. (The runs' --duration of 5 m is only a bound, the
// time a page may be looked at: a run that a killed test binary leaves
// behind ends by itself then.)
func startRun(t *testing.T, dir string, args ...string) (*osexec.Cmd, string) {
	t.Helper()
	run := osexec.Command(binary(t), args...)
	run.Dir = dir
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
	select {
	case page := <-url:
		return run, page
	case <-time.After(20 * time.Second):
		t.Fatal("run --http never said where its page is")
	}
	return nil, ""
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
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	c.call(t, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		return fmt.Errorf("in the page: %s %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if err := json.Unmarshal([]byte(r.Result.Value), v); err != nil {
		return fmt.Errorf("%v: %q", err, r.Result.Value)
	}
	return nil
}

// until evaluates expr into v, as eval does, again and again until ok
// says v is as wanted, up to a minute (a bound only a hang reaches); it
// reports whether v came to be so, and the last evaluation's error.
func (c *chrome) until(t *testing.T, session, expr string, v any, ok func() bool) (bool, error) {
	var err error
	held := eventually.True(time.Minute, func() bool {
		err = c.eval(t, session, expr, v)
		return err == nil && ok()
	})
	return held, err
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

// An FMU's cruise control on the page: the verdict of beamng.quality, its
// figures, and its setpoint, a parameter of the FMU, drawn dashed beside
// the speed.
func TestLivePageFMU(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	rig := fmuRig(t, testfmu.Options{FMI: 2, StepSize: 0.005}, `{ "path": "cruise.fmu", "parameters": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 } }`)
	_, page := startRun(t, filepath.Dir(rig), "run", "rig.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0")
	cdp := startBrowser(t, browser)
	session := cdp.open(t, page)
	checkControl(t, cdp, session, "groundspeed", "setSpeed (model parameter)")
	checkPortZero(t, cdp, session)
	keepScreenshot(t, cdp, session, "live-page-fmu.png")
}

// A running page's screenshot by a plain command: headless Chromium with
// --virtual-time-budget waits for the network to go quiet, which the event
// stream never does, unless the page asks for a still view (?still=N): the
// stream then ends after N seconds and the screenshot is taken.
func TestLivePageStillScreenshot(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	_, page := startRun(t, "../..", "run", "examples/cruise-pedals.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0")
	png := filepath.Join(t.TempDir(), "page.png")
	profile := t.TempDir()
	cmd := osexec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir="+profile, "--window-size=1280,2400", "--virtual-time-budget=30000", "--screenshot="+png, page+"?still=4")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the screenshot never finished:\n%s", out.String())
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 50_000 {
		t.Fatalf("no screenshot of the page (%d bytes, %v):\n%s", len(b), err, out.String())
	}
	if dir := os.Getenv("BEAMCONNECT_SCREENSHOTS"); dir != "" {
		os.WriteFile(filepath.Join(dir, "live-page-still.png"), b, 0o644)
	}
}

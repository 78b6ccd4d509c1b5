//go:build unix

package main

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ballProgram is an exec model that names what it answers ("# columns:"):
// a bouncing ball's h and v drive custom1 and custom2, and it appends a
// value as small as the smallest double, one as large as the largest
// UInt64 and a gravity of -9.81 m/s2, recorded and shown, not sent.
const ballProgram = `import math, sys
print("# columns: directive h[m] v[m/s] tiny huge g[m/s2]", flush=True)
for line in sys.stdin:
    if line.startswith("#") or not line.strip():
        continue
    t = float(line.split()[0])
    d = math.fmod(t, 0.9) - 0.45
    h, v = 0.99 - 4.905 * d * d, -9.81 * d
    print(1, h, v, 2.2251e-308, 1.8446744073709552e19, -9.81, flush=True)
`

const ballRig = `{
  "version": 2,
  "outputs": [ { "updatePeriodMs": 10, "ports": [ [ { "propertyName": "groundspeed" } ] ] } ],
  "inputs": [ { "updatePeriodMs": 10, "ports": [ [ { "propertyName": "custom1", "initialValue": 0 }, { "propertyName": "custom2", "initialValue": 0 } ] ] } ],
  "beamng": { "protocol": "fixed", "model": "exec", "modelTimeoutMs": 5000, "modelParams": { "command": "python3 ball.py", "deadlineMs": 2000 } }
}`

// The live page shows a model's own view: the fields an exec program's
// values drive under its names and units (h in m and v in m/s, in panels
// of their own, never one "(no unit)" panel), the values it appends in a
// group of their own, each readable: 2.2251e-308 on one line in its cell,
// its panel and 1.8e19's apart, each with ticks that read apart (not a
// lone "0"); the time axis the simulation's; each name's meaning on hover.
func TestLivePageModelView(t *testing.T) {
	t.Parallel()
	if _, err := osexec.LookPath("python3"); err != nil {
		t.Skip("no python3 for the exec model")
	}
	browser := findBrowser(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ball.py"), []byte(ballProgram), 0o644)
	os.WriteFile(filepath.Join(dir, "rig.json"), []byte(ballRig), 0o644)
	_, page := startRun(t, dir, "run", "rig.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0")
	cdp := startBrowser(t, browser)
	session := cdp.open(t, page)
	ps := waitPanels(t, cdp, session, func(ps []panelView) bool {
		return apart(ps, "in1.h", "in1.v") && apart(ps, "model.tiny", "model.huge") && panelOf(ps, "model.g") != nil
	})
	for name, unit := range map[string]string{"in1.h": "m", "in1.v": "m/s", "model.g": "m/s2", "model.tiny": "(no unit)"} {
		if p := panelOf(ps, name); p == nil || p.Axis != unit {
			t.Errorf("%s: its axis says %q, want %q (%+v)", name, p.axis(), unit, ps)
		}
	}
	if !apart(ps, "in1.h", "in1.v") || !apart(ps, "model.tiny", "model.huge") {
		t.Errorf("h and v, or 2.2e-308 and 1.8e19, share a panel: %+v", ps)
	}
	var v struct {
		Boxes    []string
		Tiny     string
		Lines    int
		Huge     string
		Tip      string
		TimeAxis string
		Info     string
	}
	cdp.until(t, session, `(() => {
			const cell = document.querySelector('td[data-col="model.tiny"]');
			const r = document.createRange();
			if (cell && cell.firstChild) r.selectNodeContents(cell);
			const name = [...document.querySelectorAll('.live td:first-child')].find(td => td.textContent === "model.huge");
			return JSON.stringify({
				Boxes: [...document.querySelectorAll(".port h3")].map(h => h.textContent),
				Tiny: cell ? cell.textContent : "", Lines: cell && cell.firstChild ? r.getClientRects().length : 0,
				Huge: (document.querySelector('td[data-col="model.huge"]') || {}).textContent || "",
				Tip: name ? name.title : "",
				TimeAxis: scopeCheck().map(p => p.timeLabel).join("|"),
				Info: document.getElementById("scopeinfo").textContent});
		})()`, &v, func() bool { return v.Tiny != "" && v.Tip != "" })
	if v.Tiny != "2.225e-308" || v.Lines != 1 || v.Huge != "1.845e+19" {
		t.Errorf("the live values: tiny %q on %d lines, huge %q; want 2.225e-308 on one line, 1.845e+19", v.Tiny, v.Lines, v.Huge)
	}
	if !slices.Contains(v.Boxes, "the model's own variables") || !strings.Contains(v.Tip, "a value the program appends") {
		t.Errorf("the model's group %q, the meaning on hover %q", v.Boxes, v.Tip)
	}
	if !strings.Contains(v.TimeAxis, "simulation time s") || !strings.Contains(v.Info, "simulation time") {
		t.Errorf("the time axis %q, %q: want the simulation's", v.TimeAxis, v.Info)
	}
	// Every panel's value labels read apart: two at least, none repeated,
	// within the axis.
	var plots []struct {
		Fields     []string
		Labels     []string
		LabelWidth float64
		Axis       float64
	}
	cdp.eval(t, session, `JSON.stringify(scopeCheck())`, &plots)
	for _, p := range plots {
		var shown []string
		for _, l := range p.Labels {
			if l != "" {
				shown = append(shown, l)
			}
		}
		seen := map[string]bool{}
		for _, l := range shown {
			if seen[l] {
				t.Errorf("%v: the label %q repeats in %q", p.Fields, l, shown)
			}
			seen[l] = true
		}
		if len(shown) < 2 || p.LabelWidth+8 > p.Axis {
			t.Errorf("%v: value labels %q (%.0f px on an axis of %.0f): want two or more that fit", p.Fields, shown, p.LabelWidth, p.Axis)
		}
	}
	keepScreenshot(t, cdp, session, "live-page-model-view.png")
}

// A run with faults never shows a loop as good: the loop that held is
// "held, in a run with faults", in amber, and so is the header's chip.
func TestLivePageNoGoodWithFaults(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	_, page := startRun(t, "../..", "run", "examples/cruise-pedals.json", "--emulate", "--duration", "5m", "--http", "127.0.0.1:0",
		"--fault", "garbage=0.02")
	cdp := startBrowser(t, browser)
	session := cdp.open(t, page)
	var v struct{ Health, Chip, ChipClass, Verdict string }
	var good string // what the page showed when it called the loop good
	cdp.until(t, session, `JSON.stringify({Health: document.getElementById("health").textContent,
			Chip: document.getElementById("controlverdict").textContent, ChipClass: document.getElementById("controlverdict").className,
			Verdict: (document.querySelector('td[data-figure="verdict"]') || {}).textContent || ""})`, &v, func() bool {
		if good == "" && (strings.Contains(v.Chip, "good") || v.Verdict == "good") {
			good = fmt.Sprintf("%+v", v)
		}
		return v.Verdict == "held, in a run with faults" || good != ""
	})
	if good != "" {
		t.Fatalf("the page calls the loop good in a run with faults: %s", good)
	}
	if v.Health != "NOT HEALTHY" || v.Verdict != "held, in a run with faults" || v.Chip != "control: groundspeed held, in a run with faults" ||
		strings.Contains(v.ChipClass, "good") {
		t.Errorf("the page shows %+v", v)
	}
	keepScreenshot(t, cdp, session, "live-page-faults.png")
}

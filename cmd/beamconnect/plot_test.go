package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plot writes RECORD.svg beside a recording by default, or -o, or standard
// output with -o -; it refuses to write over the recording.
func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.csv")
	if _, errOut, code := exec(t, nil, "run", "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--sim-duration", "1s", "--record", rec); code != exitOK {
		t.Fatalf("run: %d\n%s", code, errOut)
	}
	if _, errOut, code := exec(t, nil, "plot", rec); code != exitOK || !strings.Contains(errOut, "wrote "+filepath.Join(dir, "run.svg")) {
		t.Fatalf("plot: %d\n%s", code, errOut)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "run.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct {
		XMLName xml.Name `xml:"svg"`
	})); err != nil || !strings.Contains(string(svg), "out1.groundspeed") {
		t.Errorf("not an SVG of the recording: %v", err)
	}
	// The rig's loop: its setpoint drawn dashed, its verdict said.
	if !strings.Contains(string(svg), `data-field="setpoint:out1.groundspeed" stroke-dasharray`) || !strings.Contains(string(svg), "control groundspeed: ") {
		t.Errorf("the plot draws no setpoint or says no verdict")
	}
	if _, errOut, code := exec(t, nil, "plot", rec, "--no-clip", "-o", filepath.Join(dir, "all.svg")); code != exitOK || strings.Contains(errOut, "clipped") ||
		!strings.Contains(errOut, "control groundspeed: ") {
		t.Errorf("plot --no-clip: %d\n%s", code, errOut)
	}
	out, _, code := exec(t, nil, "plot", rec, "-o", "-", "--fields", "throttle", "--from", "0.2", "--to", "0.8")
	if code != exitOK || !strings.HasPrefix(out, "<svg") || !strings.Contains(out, "in1.throttle") || strings.Contains(out, "groundspeed") {
		t.Errorf("plot -o - --fields throttle: %d\n%.300s", code, out)
	}
	// A missing recording is named in the system's words ("no such file
	// or directory" on Linux).
	missing := filepath.Join(dir, "missing.csv")
	_, notFound := os.Stat(missing)
	if notFound == nil {
		t.Fatal(missing + " exists")
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plot", rec, "-o", rec}, exitFailed, "is the recording itself"},
		{[]string{"plot"}, exitUsage, "expected one recording"},
		{[]string{"plot", rec, "--from", "2", "--to", "1"}, exitUsage, "--to 1 must be after --from 2"},
		{[]string{"plot", missing}, exitFailed, notFound.Error()},
	} {
		t.Run(argsName(tt.args), func(t *testing.T) {
			if _, errOut, code := exec(t, nil, tt.args...); code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, want %d\n%s\nwant %q", tt.args, code, tt.code, errOut, tt.want)
			}
		})
	}
}

package main

import (
	"encoding/json"
	osexec "os/exec"
	"strings"
	"testing"
)

// bench measures beamconnect (in process and as its own binary) and any
// other responder side by side.
func TestBench(t *testing.T) {
	bin := binary(t)
	args := []string{"bench", "--json", "--duration", "500ms",
		"--responder", "beamconnect=" + bin + " run {config} --no-watch --model hold --log-level error"}
	if _, err := osexec.LookPath("python3"); err == nil {
		args = append(args, "--responder", "python=python3 ../../examples/bench/responder.py {listen} {beamng}")
	}
	out, errOut, code := exec(t, nil, args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rs []benchResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rs) < 2 || rs[0].Name != "beamconnect in process" || rs[1].Name != "beamconnect" || rs[0].AllocsPerRT > 0.01 || rs[0].PerSecond < 1000 {
		t.Errorf("%s", out)
	}
	for _, r := range rs {
		if r.Error != "" || r.RoundTrips < 100 || r.Stalls != 0 || r.P50us <= 0 || r.P999us < r.P50us || r.PeakRSSKiB <= 0 {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if _, errOut, code := exec(t, nil, "bench", "--responder", "noequals"); code != exitUsage || !strings.Contains(errOut, "expected NAME=COMMAND") {
		t.Errorf("bad --responder: %d %q", code, errOut)
	}
}

package main

import (
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/wine"
)

// A verdict a script can use: with --fail-on control (or the config's
// beamng.failOn) a run whose controller never settles exits 4, saying so;
// without it the same run exits 0; a controller that settles exits 0;
// faults still exit 1, and their run's loops are never called good.
func TestFailOnControl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// What is judged is the control, not the machine: the built-in cruise
	// control, whose step takes microseconds, so that no slow step makes
	// BeamNG wait 2 s for a reply (a stall: a fault, which comes before the
	// verdict), with a set speed the car never reaches: the loop never
	// settles. The faults' own row provokes its fault itself.
	src, _ := os.ReadFile(pedals)
	schema := strconv.Quote(mustAbs(t, "../../schemas/config.schema.json")) // a Windows path's backslashes escaped
	pedals150 := strings.Replace(strings.Replace(string(src), `"setSpeed": 20`, `"setSpeed": 150`, 1), `"../schemas/config.schema.json"`, schema, 1)
	never := filepath.Join(dir, "never.json")
	os.WriteFile(never, []byte(pedals150), 0o644)
	neverKey := filepath.Join(dir, "never-key.json")
	os.WriteFile(neverKey, []byte(strings.Replace(pedals150, `"beamng": {`, `"beamng": { "failOn": ["control"],`, 1)), 0o644)
	if !strings.Contains(pedals150, `"setSpeed": 150`) || !strings.Contains(pedals150, schema) {
		t.Fatalf("the example is not as this test edits it:\n%s", pedals150)
	}
	// The same verdict of an FMU's loop, in its child process, as
	// init --from-fmu drafts its config (its model timeout room for a
	// loaded machine: a late step waits, in lockstep).
	fmuPath := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{})
	rig := filepath.Join(filepath.Dir(fmuPath), "rig.json")
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", fmuPath, "-o", rig); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, errOut)
	}
	data, _ := os.ReadFile(rig)
	data = []byte(strings.Replace(string(data), `"model": "fmu",`, `"model": "fmu", "modelTimeoutMs": 5000,`, 1))
	fmuNever := filepath.Join(filepath.Dir(fmuPath), "never.json")
	os.WriteFile(fmuNever, []byte(strings.Replace(string(data), `"setSpeed": 20`, `"setSpeed": 150`, 1)), 0o644)
	if !strings.Contains(string(data), `"setSpeed": 20`) || !strings.Contains(string(data), `"model": "fmu", "modelTimeoutMs"`) {
		t.Fatalf("the draft is not as this test edits it:\n%s", data)
	}
	// 10 s of simulation: the controller that can settle has.
	run := []string{"run", "--emulate", "--free-running", "--sim-duration", "10s"}
	for _, tt := range []struct {
		name     string
		args     []string
		code     int
		says     string // in the text summary
		verdict  string // the loop's in --json
		jsonSays string // control_failed in --json
	}{
		{"never settles, --fail-on control", []string{never, "--fail-on", "control"}, exitControl,
			"healthy, but CONTROL NOT GOOD (exit status 4, as --fail-on control asks):", "not settled", "groundspeed not settled: never within"},
		{"never settles, beamng.failOn", []string{neverKey}, exitControl, "CONTROL NOT GOOD", "not settled", "groundspeed not settled"},
		{"never settles, not asked", []string{never}, exitOK, "healthy: BeamNG coupled in lockstep, no faults", "not settled", ""},
		{"settles", []string{pedals, "--fail-on", "control"}, exitOK, "healthy: BeamNG coupled", "good", ""},
		{"faults come first", []string{pedals, "--fail-on", "control", "--fault", "garbage=0.01"}, exitFailed,
			"FAULTS (exit status 1)", "held, in a run with faults", "groundspeed held, in a run with faults"},
		{"never settles, an FMU", []string{fmuNever, "--fail-on", "control"}, exitControl,
			"healthy, but CONTROL NOT GOOD (exit status 4, as --fail-on control asks):", "not settled", "groundspeed not settled: never within"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.args[0] == fmuNever {
				wine.Skip(t, wine.Wakeups) // the built-in rows judge the verdict there
			}
			out, errOut, code := exec(t, nil, slices.Concat(run, tt.args)...)
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Fatalf("exit %d, want %d, and %q in\n%s\n%s", code, tt.code, tt.says, out, errOut)
			}
			if tt.verdict == "good" && strings.Contains(out, "held, in a run with faults") {
				t.Errorf("a healthy run's loop is not good:\n%s", out)
			}
			out, _, code = exec(t, nil, slices.Concat(run, []string{"--json"}, tt.args)...)
			var sum struct {
				Control []struct{ Name, Verdict string } `json:"control"`
				Failed  string                           `json:"control_failed"`
				On      bool                             `json:"fail_on_control"`
			}
			if err := json.Unmarshal([]byte(out), &sum); err != nil || code != tt.code {
				t.Fatalf("--json: exit %d: %v\n%s", code, err, out)
			}
			if len(sum.Control) != 1 || sum.Control[0].Verdict != tt.verdict || !strings.HasPrefix(sum.Failed, tt.jsonSays) || (tt.jsonSays == "") != (sum.Failed == "") {
				t.Errorf("--json: control %+v, control_failed %q; want the verdict %q, %q", sum.Control, sum.Failed, tt.verdict, tt.jsonSays)
			}
		})
	}
	if _, errOut, code := exec(t, nil, "run", pedals, "--fail-on", "speed"); code != exitUsage || !strings.Contains(errOut, `--fail-on "speed": expected control`) {
		t.Errorf("--fail-on speed: exit %d\n%s", code, errOut)
	}
	// A config that asks to fail on control and names no loop of a model
	// that has none is warned about.
	hold := filepath.Join(dir, "hold.json")
	text, _ := os.ReadFile("../../examples/logging.json")
	os.WriteFile(hold, []byte(strings.Replace(string(text), `"beamng": {`, `"beamng": { "failOn": ["control"],`, 1)), 0o644)
	if out, _, code := exec(t, nil, "validate", hold); code != exitOK || !strings.Contains(out, `warning: beamng.failOn: "control" with no beamng.quality`) {
		t.Errorf("validate: exit %d\n%s", code, out)
	}
}

// A port another program holds is given up after --bind-timeout: the run
// ends with the error and what to check (exit 1), instead of retrying for
// ever; the summary says it never connected.
func TestRunBusyPortGivesUp(t *testing.T) {
	t.Parallel()
	busy, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.LocalAddr().String()
	port := strconv.Itoa(busy.LocalAddr().(*net.UDPAddr).Port)
	text, _ := os.ReadFile(pedals)
	rig := filepath.Join(t.TempDir(), "rig.json")
	os.WriteFile(rig, []byte(strings.Replace(string(text), `"localPort": 64890`, `"localPort": `+port, 1)), 0o644)
	start := time.Now()
	out, errOut, code := exec(t, nil, "run", rig, "--bind-timeout", "1s", "--duration", "30s")
	took := time.Since(start)
	if code != exitFailed || took > 15*time.Second {
		t.Fatalf("exit %d after %v, want 1 soon after the 1 s bind timeout\n%s\n%s", code, took, out, errOut)
	}
	for _, want := range []string{"could not bind " + addr + " for 1s", "another program has " + addr} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "never connected: "+addr+" could not be bound") {
		t.Errorf("the summary:\n%s", out)
	}
}

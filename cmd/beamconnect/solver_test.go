//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/eventually"
	"beamconnect/recording/recordingtest"
)

// The Model Exchange FMUs as a user runs them: the binary against an
// emulated BeamNG on real sockets, the recording read for what BeamNG got.

// meRig writes the cruise-pedals rig at a period of periodMs with the
// Model Exchange FMU at fmuPath as its model (modelParams given without
// its path), its inputs group holding custom1 too (a slot BeamNG leaves
// alone, unclamped: a counter can be read there), beside the FMU, and
// returns its path. local and remote, when not 0, are the ports
// beamconnect binds and replies to.
func meRig(t *testing.T, fmuPath string, periodMs float64, modelParams string, local, remote int) string {
	t.Helper()
	src, err := os.ReadFile(pedals)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `"model": "cruise-pedals",
    "modelParams": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 },
    "quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`, `"model": "fmu",
    "modelTimeoutMs": 500,
    "modelParams": { "path": "`+filepath.Base(fmuPath)+`", "interface": "ModelExchange", "deadlineMs": 100, `+modelParams+` }`, 1)
	cfg = strings.ReplaceAll(cfg, `"updatePeriodMs": 5`, fmt.Sprintf(`"updatePeriodMs": %g`, periodMs))
	cfg = strings.Replace(cfg, `[ { "propertyName": "driveMode", "initialValue": 0 } ]`,
		`[ { "propertyName": "driveMode", "initialValue": 0 }, { "propertyName": "custom1", "initialValue": 0 } ]`, 1)
	if local != 0 {
		cfg = strings.Replace(cfg, `"localPort": 64890`, fmt.Sprintf(`"localPort": %d`, local), 1)
		cfg = strings.Replace(cfg, `"remotePort": 64891`, fmt.Sprintf(`"remotePort": %d`, remote), 1)
	}
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, `"`+mustAbs(t, "../../schemas/config.schema.json")+`"`, 1)
	rig := filepath.Join(filepath.Dir(fmuPath), "rig.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return rig
}

// valuesOnly has the rig at path await every step of its FMU however long
// it takes (a deadline of 4 s, a model timeout of 5 s): for tests of what
// the FMU computes, which a loaded machine's hiccup must not turn into
// neutral replies.
func valuesOnly(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"modelTimeoutMs": 500`, `"modelTimeoutMs": 5000`, 1)
	s = strings.Replace(s, `"deadlineMs": 100`, `"deadlineMs": 4000`, 1)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A derivative that turns NaN at 0.5 s, an output fmin(x, 0.8) that stays
// a number: BeamNG gets the FMU's 0.8 until then, neutral controls from
// the step that meets the NaN on (before: 478 replies at 0.8 computed from
// a NaN state, a healthy run, exit 0), the fault is said naming der(x),
// and the run exits 1; under rk4, euler and dopri5.
func TestRunMENaNStateFaults(t *testing.T) {
	for _, tt := range []struct {
		solver string
		fmi    int
	}{{"rk4", 2}, {"euler", 3}, {"dopri5", 3}} {
		t.Run(fmt.Sprintf("%s FMI %d", tt.solver, tt.fmi), func(t *testing.T) {
			path := testfmu.MEForTest(t, "nan.fmu", testfmu.MEOptions{FMI: tt.fmi, Model: "nan"})
			rig := meRig(t, path, 5, `"solver": "`+tt.solver+`", "outputs": { "y": "throttle" }`, 0, 0)
			valuesOnly(t, rig)
			rec := filepath.Join(t.TempDir(), "run.csv")
			s, errOut := runFaulty(t, rig, "--emulate", "--free-running", "--sim-duration", "5.1s", "--record", rec)
			late, before := 0, 0
			for _, r := range recordingtest.Rows(t, rec) {
				// The reply to message id carries the FMU at (id + 1) × 5 ms.
				switch end := (r["id"] + 1) * 0.005; {
				case end <= 0.4951 && r["in1.y"] != 0.8:
					t.Fatalf("message %v: throttle %v before the NaN, want 0.8", r["id"], r["in1.y"])
				case end <= 0.4951:
					before++
				case end > 0.5051 && r["in1.y"] != 0:
					late++
				}
			}
			if late > 0 || before < 99 {
				t.Errorf("%d replies after 0.5 s carried the FMU's throttle, %d before it did\n%s", late, before, errOut)
			}
			if n, _ := s["model_failed"].(float64); n < 1 || !hasFault(s, "the model faulted") {
				t.Errorf("model_failed %v, faults %v", s["model_failed"], s["faults"])
			}
			if !strings.Contains(errOut, "the FMU's derivative der(x) is NaN at t = 0.5") {
				t.Errorf("the log does not name the derivative:\n%s", errOut)
			}
		})
	}
}

// A fixed step the model's fast dynamics make unstable never reaches
// BeamNG: refused at the first message, a fault for good that names the
// way out, every reply neutral (before: euler at h·λ = 2.5 sent 866
// full-throttle replies from a diverging, sign-flipping state, rk4 at λ =
// 1e7 sent 20).
func TestRunMEUnstableStepFaults(t *testing.T) {
	for _, tt := range []struct {
		name, params, says string
	}{
		{"euler h·λ = 2.5", `"solver": "euler", "parameters": { "lambda": 500 }`,
			"set modelParams.maxStep to 0.004 or less (2 steps a message), or the solver to dopri5"},
		{"rk4 λ = 1e7", `"solver": "rk4", "parameters": { "lambda": 1e7 }`,
			"the model is too stiff for beamconnect's solvers at this period; export the FMU as co-simulation"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := testfmu.MEForTest(t, "stiff.fmu", testfmu.MEOptions{FMI: 3, Model: "stiff"})
			rig := meRig(t, path, 5, tt.params+`, "outputs": { "x": "throttle" }`, 0, 0)
			rec := filepath.Join(t.TempDir(), "run.csv")
			s, errOut := runFaulty(t, rig, "--emulate", "--free-running", "--sim-duration", "5.1s", "--record", rec)
			rows := recordingtest.Rows(t, rec)
			for _, r := range rows {
				if r["in1.x"] != 0 {
					t.Fatalf("message %v: throttle %v from an unstable step", r["id"], r["in1.x"])
				}
			}
			if len(rows) < 100 || s["model_restarts"] != 0.0 || !hasFault(s, "the model faulted 1 times") {
				t.Errorf("%d rows, model_restarts %v, faults %v", len(rows), s["model_restarts"], s["faults"])
			}
			if !strings.Contains(errOut, "is unstable for the model") || !strings.Contains(errOut, tt.says) || !strings.Contains(errOut, "not started again") {
				t.Errorf("the log lacks the fault, or says it was started again:\n%s", errOut)
			}
		})
	}
}

// fmusim is the FMI reference master's path from BEAMCONNECT_FMUSIM, or
// "" (a test then compares with what it computed once, committed), or the
// test fails when BEAMCONNECT_REQUIRE_FMUSIM=1.
func fmusim(t *testing.T) string {
	path := os.Getenv("BEAMCONNECT_FMUSIM")
	if path == "" && os.Getenv("BEAMCONNECT_REQUIRE_FMUSIM") == "1" {
		t.Fatal("BEAMCONNECT_REQUIRE_FMUSIM=1, but BEAMCONNECT_FMUSIM names no fmusim")
	}
	return path
}

// referenceAt reads fmusim's output (a CSV of time and the variables, two
// rows at an event: before and after it) into the value of column after
// any event, by the time's multiple of period.
func referenceAt(t *testing.T, file, column string, period float64) map[int64]float64 {
	t.Helper()
	rows := recordingtest.Rows(t, file)
	if _, ok := rows[0][column]; !ok {
		t.Fatalf("%s has no column %q", file, column)
	}
	out := map[int64]float64{}
	for _, r := range rows {
		out[int64(math.Round(r["time"]/period))] = r[column] // a later row at the same time: after its event
	}
	return out
}

// The stair's counter rises by 1 at every whole second, by time events. At
// a 10 ms period the reply to the message whose step ends on a whole
// second carries the new count, as fmusim computes it (before: the old
// one at 3, 4 and 5 s: the FMU's times were sums of periods, 300 of which
// are 2.99999999999998). beamconnect and BeamNG's side (emulate) run as
// processes of their own, on real sockets. The reference is fmusim's
// output for the same FMU at the same step, from BEAMCONNECT_FMUSIM, or as
// committed in testdata/stair-me-10ms.fmusim.csv (made with fmusim
// reference-fmus-c8d4e6d: fmusim --interface-type me --stop-time 6
// --output-interval 0.01 --output-file … stair3.fmu, the FMU of
// testfmu.BuildME's "stair", FMI 2.0 and 3.0 alike).
func TestRunMETimeEventsOnTheirMessage(t *testing.T) {
	for _, major := range []int{2, 3} {
		t.Run(fmt.Sprintf("FMI %d", major), func(t *testing.T) {
			path := testfmu.MEForTest(t, "stair.fmu", testfmu.MEOptions{FMI: major, Model: "stair"})
			ref := "testdata/stair-me-10ms.fmusim.csv"
			if sim := fmusim(t); sim != "" {
				ref = filepath.Join(t.TempDir(), "fmusim.csv")
				if out, err := osexec.Command(sim, "--interface-type", "me", "--stop-time", "6", "--output-interval", "0.01",
					"--output-file", ref, path).CombinedOutput(); err != nil {
					t.Fatalf("fmusim: %v\n%s", err, out)
				}
			}
			want := referenceAt(t, ref, "counter", 0.01)

			free := freeUDPPorts(t, 2)
			rig := meRig(t, path, 10, `"outputs": { "counter": "custom1" }`, free[0], free[1])
			valuesOnly(t, rig)
			rec := filepath.Join(t.TempDir(), "run.csv")
			run, out, errb := startProcess(t, "run", "--json", rig, "--record", rec)
			errb.WaitFor(t, "waiting for BeamNG")
			// 6 s at 10 ms: 600 messages, each answered before the next.
			emu, emuOut, emuErr := startProcess(t, "emulate", "--json", "--config", rig, "--steps", "12000", "--free-running")
			if code := waitExit(t, emu, 60*time.Second, "emulate"); code != exitOK {
				t.Fatalf("emulate: exit %d\n%s", code, emuErr)
			}
			var em struct{ Sent int }
			if err := json.Unmarshal([]byte(emuOut.String()), &em); err != nil || em.Sent < 590 {
				t.Fatalf("emulate sent %d: %v\n%s", em.Sent, err, emuOut)
			}
			// Every answered message is on disk within 250 ms of its reply.
			if !eventually.True(30*time.Second, func() bool {
				b, _ := os.ReadFile(rec)
				return bytes.Count(b, []byte("\n")) >= em.Sent
			}) {
				t.Fatalf("the recording does not hold the %d replies\n%s", em.Sent, errb)
			}
			run.Process.Signal(os.Interrupt)
			waitExit(t, run, 30*time.Second, "run after SIGINT")
			var s struct {
				ModelFaults  int64 `json:"model_faults"`
				SolverEvents int64 `json:"solver_events"`
			}
			if err := json.Unmarshal([]byte(out.String()), &s); err != nil || s.ModelFaults != 0 || s.SolverEvents < 5 {
				t.Errorf("summary: %v, model faults %d, solver events %d\n%s", err, s.ModelFaults, s.SolverEvents, errb)
			}
			rows := recordingtest.Rows(t, rec)
			var wrong []string
			for _, r := range rows {
				end := int64(r["id"]) + 1 // the message's step ends at (id + 1) × 10 ms
				ref, ok := want[end]
				if !ok {
					continue
				}
				if got := r["in2.counter"]; got != ref || got != float64(1+end/100) {
					wrong = append(wrong, fmt.Sprintf("%g s: %v (fmusim %v)", float64(end)/100, got, ref))
				}
			}
			if len(rows) < 590 || len(wrong) > 0 {
				t.Errorf("%d rows; the counter differs from fmusim's at %d of them: %s", len(rows), len(wrong), strings.Join(wrong, "; "))
			}
		})
	}
}

// referenceFMUs is the folder of the Modelica Association's Reference FMUs
// (fmi2/*.fmu, fmi3/*.fmu) from BEAMCONNECT_REFERENCE_FMUS, and fmusim's
// path: the test skips without both, or fails when
// BEAMCONNECT_REQUIRE_FMUSIM=1.
func referenceFMUs(t *testing.T) (dir, sim string) {
	dir, sim = os.Getenv("BEAMCONNECT_REFERENCE_FMUS"), fmusim(t)
	switch {
	case dir != "" && sim != "":
		return dir, sim
	case os.Getenv("BEAMCONNECT_REQUIRE_FMUSIM") == "1":
		t.Fatal("BEAMCONNECT_REQUIRE_FMUSIM=1, but BEAMCONNECT_REFERENCE_FMUS names no folder of Reference FMUs")
	}
	t.Skip("set BEAMCONNECT_FMUSIM and BEAMCONNECT_REFERENCE_FMUS to compare with the reference master on the Reference FMUs")
	return "", ""
}

// The Reference FMUs' Stair as Model Exchange (its counter rises by 1
// every whole second, by time events, until it ends the simulation at
// 10), at 10 ms and 1 ms, FMI 2.0 and 3.0: the counter BeamNG gets at
// every message is fmusim's at the end of that message's step (before:
// the old count at 3, 4 and 5 s at 10 ms, at 2, 3 and 4 s at 1 ms).
// Robertson's problem (Roberts, stiff) under rk4 at 10 ms is an unstable
// step, said so with the way out (before: "a state event was stepped
// over").
func TestRunMEReferenceFMUs(t *testing.T) {
	parallelOffWine(t)
	dir, sim := referenceFMUs(t)
	for _, tt := range []struct {
		fmi      int
		periodMs float64
	}{{2, 10}, {3, 10}, {2, 1}, {3, 1}} {
		t.Run(fmt.Sprintf("Stair FMI %d at %g ms", tt.fmi, tt.periodMs), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Stair.fmu")
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("fmi%d", tt.fmi), "Stair.fmu"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, b, 0o644)
			period := tt.periodMs / 1000
			ref := filepath.Join(t.TempDir(), "fmusim.csv")
			if out, err := osexec.Command(sim, "--interface-type", "me", "--stop-time", "9", "--output-interval", fmt.Sprint(period),
				"--output-file", ref, path).CombinedOutput(); err != nil {
				t.Fatalf("fmusim: %v\n%s", err, out)
			}
			want := referenceAt(t, ref, "counter", period)
			rig := meRig(t, path, tt.periodMs, `"outputs": { "counter": "custom1" }`, 0, 0)
			valuesOnly(t, rig)
			rec := filepath.Join(t.TempDir(), "run.csv")
			out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "9s", "--record", rec)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			compared := 0
			var wrong []string
			for _, r := range recordingtest.Rows(t, rec) {
				end := int64(r["id"]) + 1
				if ref, ok := want[end]; ok && float64(end)*period < 9-period/2 {
					compared++
					if got := r["in2.counter"]; got != ref {
						wrong = append(wrong, fmt.Sprintf("%g s: %v (fmusim %v)", float64(end)*period, got, ref))
					}
				}
			}
			if compared < int(8/period) || len(wrong) > 0 {
				t.Errorf("%d messages compared; the counter differs from fmusim's at %d: %s", compared, len(wrong), strings.Join(wrong, "; "))
			}
		})
	}
	t.Run("Roberts under rk4", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "Roberts.fmu")
		b, err := os.ReadFile(filepath.Join(dir, "fmi3", "Roberts.fmu"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, b, 0o644)
		rig := meRig(t, path, 10, `"solver": "rk4", "outputs": { "y1": "custom1" }`, 0, 0)
		_, errOut := runFaulty(t, rig, "--emulate", "--free-running", "--sim-duration", "1s")
		if !strings.Contains(errOut, "the rk4 solver's step of 10 ms from t = 0 s is unstable for the model") ||
			!strings.Contains(errOut, "or the solver to dopri5") || strings.Contains(errOut, "a state event was stepped over") {
			t.Errorf("%s", errOut)
		}
	})
}

// The Reference FMUs as co-simulation at a 10 ms period, their
// communication points computed from the messages' ids: what BeamNG gets
// at every message is what fmusim computes at that message's end, to the
// 16 digits it prints; Dahlquist's FMI 3.0 fixed internal step of 100 ms
// multi-rate (stepped every 10 messages, its output held in between).
func TestRunCSReferenceFMUs(t *testing.T) {
	dir, sim := referenceFMUs(t)
	for _, tt := range []struct {
		fmi          int
		model, out   string
		every        int64 // messages an FMU step spans
		stepInterval string
	}{
		{2, "VanDerPol", "x0", 1, "0.01"},
		{3, "VanDerPol", "x0", 1, "0.01"},
		{3, "BouncingBall", "h", 1, "0.01"},
		{2, "Dahlquist", "x", 1, "0.01"},
		{3, "Dahlquist", "x", 10, "0.1"},
	} {
		t.Run(fmt.Sprintf("%s FMI %d", tt.model, tt.fmi), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.model+".fmu")
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("fmi%d", tt.fmi), tt.model+".fmu"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, b, 0o644)
			ref := filepath.Join(t.TempDir(), "fmusim.csv")
			if out, err := osexec.Command(sim, "--interface-type", "cs", "--stop-time", "5", "--output-interval", tt.stepInterval,
				"--output-file", ref, path).CombinedOutput(); err != nil {
				t.Fatalf("fmusim: %v\n%s", err, out)
			}
			want := referenceAt(t, ref, tt.out, 0.01)
			rig := meRig(t, path, 10, `"outputs": { "`+tt.out+`": "custom1" }`, 0, 0)
			valuesOnly(t, rig)
			cfg, err := os.ReadFile(rig) // as co-simulation, the default for an FMU with both
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(rig, []byte(strings.Replace(string(cfg), `"interface": "ModelExchange", `, "", 1)), 0o644)
			rec := filepath.Join(t.TempDir(), "run.csv")
			out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "5.1s", "--record", rec)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			compared, worst := 0, 0.0
			for _, r := range recordingtest.Rows(t, rec) {
				id := int64(r["id"])
				end := (id/tt.every + 1) * tt.every // the end of the FMU's step this message's reply carries
				ref, ok := want[end]
				if !ok || end > 500 {
					continue
				}
				compared++
				if got := r["in2."+tt.out]; math.Abs(got-ref) > 1e-15*math.Abs(ref) {
					worst = max(worst, math.Abs(got-ref))
					if worst == math.Abs(got-ref) {
						t.Errorf("message %d (the FMU at %g s): %v, fmusim %v", id, float64(end)/100, got, ref)
					}
				}
			}
			if compared < 490 {
				t.Errorf("%d messages compared", compared)
			}
		})
	}
}

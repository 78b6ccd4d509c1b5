package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/models/exectest"
	"beamconnect/recording/recordingtest"
)

// runBinaryJSON runs the built binary with args and returns its --json
// summary (nil if it printed none), its stderr and its exit status.
func runBinaryJSON(t *testing.T, args ...string) (map[string]any, string, int) {
	t.Helper()
	out, errOut, code := runBinary(t, args...)
	var s map[string]any
	if json.Unmarshal([]byte(out), &s) != nil {
		s = nil
	}
	return s, errOut, code
}

// saysFault reports whether a --json summary lists a fault holding sub.
func saysFault(s map[string]any, sub string) bool {
	fs, _ := s["faults"].([]any)
	for _, f := range fs {
		if str, _ := f.(string); strings.Contains(str, sub) {
			return true
		}
	}
	return false
}

// jitterRig writes the FMU example's rig around a jittery multi-rate FMU
// (FMI 3.0, a fixed internal step of two periods: stepped every second
// message; each step takes 0 to 9 ms) whose input is the message's id
// (serial_number) and whose output speedUsed, the input its step computed
// from, goes to BeamNG as custom1: every reply says which message's data
// its controls came from. It returns the config's path.
func jitterRig(t *testing.T, inProcess bool) string {
	t.Helper()
	fmuPath := testfmu.ForTest(t, "jitter.fmu", testfmu.Options{FMI: 3, Fault: "jitter", After: 1, FixedStep: 0.01, SpeedUsedOutput: true})
	src, err := os.ReadFile("../../examples/fmu-cruise/cruise.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(src)
	for _, r := range [][2]string{
		{`"../../schemas/config.schema.json"`, strconv.Quote(mustAbs(t, "../../schemas/config.schema.json"))},
		{`[ { "propertyName": "driveMode", "initialValue": 0 } ]`, `[ { "propertyName": "driveMode", "initialValue": 0 } ],
        [ { "propertyName": "custom1" } ]`},
		{`"path": "cruise.fmu",`, `"path": "jitter.fmu", "inProcess": ` + strconv.FormatBool(inProcess) + `,
      "inputs": { "groundspeed": "serial_number" }, "outputs": { "speedUsed": "custom1" },`},
	} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("the example no longer has %s", r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	rig := filepath.Join(filepath.Dir(fmuPath), "jitter.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return rig
}

// whose reads a recording of the jitter rig: how many replies carried the
// controls of their own message's step, how many were neutral, and which
// carried another step's (the id of the message, and of the one whose data
// the controls came from).
func whose(t *testing.T, rec string) (own, neutral int, stale [][2]float64) {
	t.Helper()
	rows := recordingtest.Rows(t, rec)
	if _, ok := rows[0]["in3.speedUsed"]; !ok {
		t.Fatalf("no column in3.speedUsed (custom1, named after the FMU's output) in %v", rows[0])
	}
	first := math.NaN()
	for _, row := range rows {
		id, used := row["id"], row["in3.speedUsed"]
		if first != first {
			first = id
		}
		if used != used {
			neutral++ // NaN: the neutral reply leaves custom1 to BeamNG
			continue
		}
		// The FMU is stepped at every second message from the first: its
		// step for a point computes from the data of a message of that
		// point, up to this one (the first, or the next when the FMU was
		// busy at the first).
		point := first + 2*math.Floor((id-first)/2)
		if used < point || used > id {
			stale = append(stale, [2]float64{id, used})
			continue
		}
		own++
	}
	return own, neutral, stale
}

// An answer is used for its own message only, whatever its step's timing:
// a multi-rate FMU whose steps take a random 0 to 9 ms, in its child
// process and in process, against BeamNG's side free-running. Before, in
// its child process and in real time, about one reply a second carried an
// older step's controls (tens of ms old; the step of message 828's data
// answering message 1207): the host's client collected a late answer on
// its way to the next request, and the next message took it for its own.
// In lockstep (the default) every reply waits for its step: none is
// neutral, and the run is healthy; in real time many are neutral (the
// steps are late), and none carries another step's controls.
func TestJitteryFMUAnswersItsOwnMessage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		inProcess bool
		realTime  bool
	}{
		{"child, lockstep", false, false},
		{"in process, lockstep", true, false},
		{"child, real time", false, true},
		{"in process, real time", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rig := jitterRig(t, tt.inProcess)
			rec := filepath.Join(t.TempDir(), "run.csv")
			args := []string{"run", rig, "--emulate", "--free-running", "--sim-duration", "2s", "--record", rec, "--json"}
			if tt.realTime {
				args = append(args, "--real-time")
			}
			s, errOut, code := runBinaryJSON(t, args...)
			if s == nil {
				t.Fatalf("exit %d, no summary\n%s", code, errOut)
			}
			own, neutral, stale := whose(t, rec)
			t.Logf("%d replies: %d with their own step's controls, %d neutral, %d with another's", own+neutral+len(stale), own, neutral, len(stale))
			if len(stale) > 0 {
				t.Errorf("%d replies carried another step's controls (message id, the id its controls were computed from): %v", len(stale), stale[:min(len(stale), 10)])
			}
			if own+neutral < 200 {
				t.Errorf("only %d replies recorded", own+neutral)
			}
			if tt.realTime {
				// Late steps: neutral replies, each for want of controls in
				// time, all of them in the verdict's figure (before, those
				// while a step ran past the model timeout were left out:
				// "1943 of 2706 messages" for 2697 neutral replies).
				msgs, _ := s["messages"].(float64)
				want := fmt.Sprintf("the model could not keep up: it computed no controls in time for %d of %d messages", neutral, int(msgs))
				if s["no_controls"] != float64(neutral) || s["neutral_replies"] != float64(neutral) || neutral*100 > int(msgs) && !saysFault(s, want) {
					t.Errorf("no_controls %v, neutral replies %v, %d neutral recorded; faults %v, want %q", s["no_controls"], s["neutral_replies"], neutral, s["faults"], want)
				}
				return
			}
			if neutral != 0 || code != exitOK || s["mode"] != "lockstep" {
				t.Errorf("lockstep: %d neutral replies, exit %d, mode %v; faults %v\n%s", neutral, code, s["mode"], s["faults"], errOut)
			}
		})
	}
}

// execRig writes the cruise-pedals rig with an exectest script as its exec
// model (its answers: directive, throttle, brake, driveMode) and returns
// the config's path.
func execRig(t *testing.T, script ...string) string {
	t.Helper()
	src, err := os.ReadFile(pedals)
	if err != nil {
		t.Fatal(err)
	}
	command, _ := json.Marshal(exectest.Command(script...))
	cfg := strings.Replace(string(src), `"model": "cruise-pedals",
    "modelParams": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 },`, `"model": "exec",
    "modelParams": { "command": `+string(command)+`, "restart": false },`, 1)
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, strconv.Quote(mustAbs(t, "../../schemas/config.schema.json")), 1)
	cfg = strings.Replace(cfg, `"setpoint": "setSpeed"`, `"setpoint": 20`, 1) // a program's setpoint is the number it is given
	rig := filepath.Join(t.TempDir(), "rig.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return rig
}

// A program that floors the throttle and then answers nan (its state gone
// NaN) faults: BeamNG gets neutral controls from the first NaN on, each
// counted as non_finite, the fault is logged with the control's name, and
// run exits 1. Before, Gen 1 BeamNG read the NaN as "keep the previous
// value" and held full throttle for the rest of the run, with non_finite 0
// and not a word in the log. "keep" is the protocol's way to ask for that:
// BeamNG keeps the throttle, and it is no fault.
func TestRunExecNaNIsAFault(t *testing.T) {
	t.Parallel()
	t.Run("nan", func(t *testing.T) {
		t.Parallel()
		rec := filepath.Join(t.TempDir(), "run.csv")
		s, errOut, code := runBinaryJSON(t, "run", execRig(t, "header", "answer:100=1 1 0 0", "answer:*=1 nan 0 0"),
			"--emulate", "--free-running", "--sim-duration", "2s", "--json", "--record", rec)
		if s == nil || code != exitFailed || s["non_finite"] == nil {
			t.Fatalf("exit %d, want %d; summary %v\n%s", code, exitFailed, s, errOut)
		}
		n, _ := s["non_finite"].(float64)
		if msgs, _ := s["messages"].(float64); n < msgs-110 || s["neutral_replies"] != n {
			t.Errorf("non_finite %v, neutral replies %v of %v messages: want every message after the 100th", n, s["neutral_replies"], msgs)
		}
		if !saysFault(s, "the model computed NaN or Inf controls") || !strings.Contains(errOut, "the model computed NaN for throttle") {
			t.Errorf("faults %v\n%s", s["faults"], errOut)
		}
		// BeamNG's own throttle (it sends what it applies): floored, then
		// released with the NaNs, never held.
		applied := recordingtest.Column(t, rec, "out2.throttle")
		held := 0
		for _, v := range applied[110:] {
			if v == 1 {
				held++
			}
		}
		if applied[50] != 1 || held > 0 {
			t.Errorf("BeamNG's throttle %v at message 50, held at 1 in %d messages after the NaNs began: want floored, then released", applied[50], held)
		}
	})
	t.Run("keep", func(t *testing.T) {
		t.Parallel()
		rec := filepath.Join(t.TempDir(), "run.csv")
		s, errOut, code := runBinaryJSON(t, "run", execRig(t, "header", "answer:100=1 1 0 0", "answer:*=1 keep 0 0"),
			"--emulate", "--free-running", "--sim-duration", "2s", "--json", "--record", rec)
		if s == nil || code != exitOK || s["non_finite"] != 0.0 || s["neutral_replies"] != 0.0 {
			t.Fatalf("exit %d, non_finite %v, neutral %v\n%s", code, s["non_finite"], s["neutral_replies"], errOut)
		}
		if applied := recordingtest.Column(t, rec, "out2.throttle"); applied[len(applied)-1] != 1 {
			t.Errorf("BeamNG's throttle %v at the end: want it kept at 1", applied[len(applied)-1])
		}
	})
}

// An FMU in process that hangs again and again (every new instance, at its
// first step: asleep 2 s) leaves at most 3 threads behind: after the third
// it is not instantiated again, a fault for good said in the log and the
// summary, which counts the threads. Before, the FMU was instantiated
// again after every hang for as long as the run lasted, a thread lost
// each time, and the summary said only that the model faulted.
//
// The restarts' backoff is of the wall clock: the run is paced, so its 9 s
// of BeamNG's time last at least 9 s, and the third hang (at 5 s) is the
// last whatever time follows.
func TestRunFMUHangingInProcessIsCapped(t *testing.T) {
	t.Parallel()
	fmuPath := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{Fault: "hang-2s", After: 1})
	src, err := os.ReadFile("../../examples/fmu-cruise/cruise.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `"path": "cruise.fmu",`, `"path": "cruise.fmu", "inProcess": true,`, 1)
	cfg = strings.Replace(cfg, `"model": "fmu",`, `"model": "fmu", "modelTimeoutMs": 100,`, 1)
	cfg = strings.Replace(cfg, `"../../schemas/config.schema.json"`, strconv.Quote(mustAbs(t, "../../schemas/config.schema.json")), 1)
	rig := filepath.Join(filepath.Dir(fmuPath), "hang.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// Hangs at 0, 2 and 5 s (the instances come after 1 s, then 2 s of
	// backoff), each abandoned a second in; then nothing more.
	s, errOut, code := runBinaryJSON(t, "run", rig, "--emulate", "--sim-duration", "9s", "--json")
	if s == nil || code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitFailed, errOut)
	}
	if s["abandoned_threads"] != 3.0 || s["model_restarts"] != 2.0 {
		t.Errorf("abandoned threads %v, model restarts %v: want 3 and 2\n%s", s["abandoned_threads"], s["model_restarts"], errOut)
	}
	if !saysFault(s, "3 threads of the FMU in process were abandoned in hung steps") {
		t.Errorf("faults %v", s["faults"])
	}
	if !strings.Contains(errOut, "the FMU's step hung 3 times in process") || !strings.Contains(errOut, "it is not instantiated again; run it in its child process") {
		t.Errorf("the final fault is not said:\n%s", errOut)
	}
}

// Two vehicles share one exec model whose answers take a pseudo-random 0
// to 9 ms at a 5 ms period, and echo each vehicle's time as its request
// carried it (the request of a vehicle's message carries that message's
// time, and the other vehicle's latest) as that vehicle's custom1: a reply
// carries the answer to its own message's request, or neutral controls,
// never another request's answer (the other vehicle's, or an older one
// whose step gave up on it): in lockstep (none neutral) and in real time
// (many neutral).
func TestRunSharedModelAnswersItsOwnMessage(t *testing.T) {
	t.Parallel()
	for _, realTime := range []bool{false, true} {
		t.Run(fmt.Sprint("real time ", realTime), func(t *testing.T) {
			t.Parallel()
			command, _ := json.Marshal(exectest.Command("header", "jitter=9ms", "answer:*=1 $4 $6"))
			cfg := `{
  "version": 2,
  "remoteObject": "ego",
  "outputs": [
    { "updatePeriodMs": 5, "ports": [ [ { "propertyName": "groundspeed" }, { "propertyName": "time", "propertyType": "meta" } ] ] },
    { "updatePeriodMs": 5, "remoteObject": "lead", "ports": [ [ { "propertyName": "groundspeed" }, { "propertyName": "time", "propertyType": "meta" } ] ] }
  ],
  "inputs": [
    { "updatePeriodMs": 5, "ports": [ [ { "propertyName": "custom1" } ] ] },
    { "updatePeriodMs": 5, "remoteObject": "lead", "ports": [ [ { "propertyName": "custom1" } ] ] }
  ],
  "beamng": {
    "vehicles": { "ego": { "localPort": 64890, "remotePort": 64891 }, "lead": { "localPort": 64892, "remotePort": 64893 } },
    "realTime": ` + strconv.FormatBool(realTime) + `,
    "model": "exec",
    "modelParams": { "command": ` + string(command) + ` }
  }
}`
			rig := filepath.Join(t.TempDir(), "fleet.json")
			if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			rec := filepath.Join(t.TempDir(), "run.csv")
			// A message waits for both vehicles' steps of 0 to 9 ms in
			// lockstep: 1 s of simulation is 400 replies. In real time
			// most are neutral, the more so on a loaded machine (21 own
			// answers in 800 replies were measured beside two busy
			// loops): 4 s for enough answers, and late ones.
			sim := map[bool]string{false: "1s", true: "4s"}[realTime]
			s, errOut, code := runBinaryJSON(t, "run", rig, "--emulate", "--free-running", "--sim-duration", sim, "--json", "--record", rec)
			if s == nil {
				t.Fatalf("exit %d, no summary\n%s", code, errOut)
			}
			f, err := os.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil || len(rows) < 2 {
				t.Fatalf("recording: %v", err)
			}
			col := map[string]int{}
			for i, n := range rows[0] {
				col[n] = i
			}
			// The request: t, status, ego's groundspeed and time, lead's
			// groundspeed and time; its answer: the directive, then ego's
			// custom1 and lead's.
			own, neutral, other := 0, 0, 0
			for _, row := range rows[1:] {
				v := row[col["vehicle"]]
				port := map[string]string{"ego": "1", "lead": "2"}[v]
				at, _ := strconv.ParseFloat(row[col["out"+port+"."+v+".time"]], 64)
				got, err := strconv.ParseFloat(row[col["in"+port+"."+v+".custom1"]], 64)
				switch {
				case err != nil || got != got:
					neutral++
				case got == at:
					own++
				default:
					if other++; other <= 10 {
						t.Errorf("%s's message at t = %v carried the answer to the request at t = %v", v, at, got)
					}
				}
			}
			t.Logf("%d replies: %d their own answer, %d neutral, %d another's", own+neutral+other, own, neutral, other)
			// Enough answers to judge by, and in real time enough late
			// ones that a stale answer had its chance to slip through.
			// (Under Wine, whose loopback takes 1–3 ms a round trip, real
			// time leaves some 100 of 800.)
			if own < 10 || other > 0 || realTime && neutral < 10 {
				t.Errorf("%d replies carried their own answer, %d another's, %d were neutral", own, other, neutral)
			}
			// (At the start a vehicle's first message may come before the
			// other's first: neutral, waiting for it.)
			if w, _ := s["waiting_for_vehicles"].(float64); !realTime && (neutral > int(w) || code != exitOK) {
				t.Errorf("lockstep: %d neutral replies (%v waiting for the other vehicle), exit %d; faults %v", neutral, w, code, s["faults"])
			}
		})
	}
}

//go:build unix

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config/configtest"
	"beamconnect/fmu/testfmu"
	"beamconnect/ports"
	"beamconnect/recording/recordingtest"
)

// BeamNG's restarts, pauses and stops, as a user meets them: beamconnect's
// binary coupled to `beamconnect emulate`, each in its own process, on real
// sockets.

// runJSONSummary is what a test reads of run --json's summary.
type runJSONSummary struct {
	Messages        int64    `json:"messages"`
	StallsRecovered int64    `json:"stalls_recovered"`
	Silences        int64    `json:"silences"`
	Pauses          int64    `json:"pauses"`
	Restarts        int64    `json:"restarts"`
	LockstepLost    int64    `json:"lockstep_lost"`
	ModelResets     int64    `json:"model_resets"`
	ModelFaults     int64    `json:"model_faults"`
	Healthy         bool     `json:"healthy"`
	Faults          []string `json:"faults"`
	Notes           []string `json:"notes"`
	Diagnoses       []any    `json:"diagnoses"`
}

// emulateSummary is what a test reads of emulate --json's summary.
type emulateSummary struct {
	Sent, Accepted, Stalls, Pauses, Restarts int64
}

// rigWithModel writes the cruise rig on beamconnect's port local and
// BeamNG's port remote, with the model section given (as the config writes
// "model": … up to the end of beamng), and returns its path.
func rigWithModel(t *testing.T, local, remote int, model string) string {
	t.Helper()
	rig := rigOnPorts(t, local, remote)
	if model == "" {
		return rig
	}
	src, _ := os.ReadFile(rig)
	i := strings.Index(string(src), `"model": "cruise-pedals"`)
	if i < 0 {
		t.Fatal("the cruise rig has changed")
	}
	cfg := string(src[:i]) + model + "\n  }\n}\n"
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return rig
}

// hasNote reports whether one of the summary's notes says sub.
func hasNote(s runJSONSummary, sub string) bool {
	for _, n := range s.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// summaryOf reads the run's --json summary.
func summaryOf(t *testing.T, out string) runJSONSummary {
	t.Helper()
	var s runJSONSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("no summary: %v\n%s", err, out)
	}
	return s
}

// An FMU whose outputs depend on time alone (it reads no BeamNG signal:
// a model exchange x' = -k x, x(0) = 1, driving the throttle) starts over
// when BeamNG's controller is reloaded (ids from 0, a new port): its
// replies from the restart on are those it sent from the run's start, step
// for step. Before, it was not reset (model_resets 0): the first reply after
// the restart repeated the last one before it and the old trajectory went
// on (x 0.6 instead of back to 1), although the log said the controller
// had restarted. (A model that reads the vehicle was reset; one that reads
// nothing was taken for one that does not read the restarted vehicle.)
func TestRestartStartsTheModelOver(t *testing.T) {
	t.Parallel()
	path := testfmu.MEForTest(t, "decay.fmu", testfmu.MEOptions{FMI: 2, Model: "decay"})
	free := freeUDPPorts(t, 2)
	rig := rigWithModel(t, free[0], free[1], `"model": "fmu", "modelTimeoutMs": 500,
    "modelParams": { "path": "`+path+`", "deadlineMs": 100, "outputs": { "x": "throttle" } }`)
	rec := filepath.Join(t.TempDir(), "run.csv")
	run, out, errb := startProcess(t, "run", "--json", "--no-watch", rig, "--record", rec)
	errb.WaitFor(t, "waiting for BeamNG")
	emu, _, emuErr := startProcess(t, "emulate", "--config", rig, "--fault", "restart@1s", "--duration", "2s")
	if code := waitExit(t, emu, 60*time.Second, "emulate"); code != exitOK {
		t.Fatalf("emulate: exit %d\n%s", code, emuErr)
	}
	errb.WaitFor(t, "BeamNG went silent") // BeamNG's coupling stopped
	run.Process.Signal(os.Interrupt)
	waitExit(t, run, 30*time.Second, "run after SIGINT")
	s := summaryOf(t, out.String())
	if s.Restarts != 1 || s.ModelResets != 1 || s.ModelFaults != 0 {
		t.Errorf("restarts %d, model resets %d, model faults %d: want the FMU started over once\n%s", s.Restarts, s.ModelResets, s.ModelFaults, errb)
	}
	// The recording: the replies of the second session, step for step from
	// its first, are those of the first session. (Each session counts from
	// its first answered message: a loaded machine may take the restart a
	// few messages in, answering only the newest of those the new port
	// sent meanwhile. A reply the model had no answer for in time is
	// neutral, 0, and not compared.)
	var sessions [2]map[float64]float64 // by id less the session's first
	session, first := -1, 0.0
	rows := recordingtest.Rows(t, rec)
	for i, r := range rows {
		if i == 0 || r["id"] < rows[i-1]["id"] {
			if session++; session > 1 {
				t.Fatalf("more than one restart in the recording")
			}
			sessions[session], first = map[float64]float64{}, r["id"]
		}
		sessions[session][r["id"]-first] = r["in1.x"] // the FMU's x, driving the throttle
	}
	if session != 1 || len(sessions[1]) < 50 {
		t.Fatalf("%d sessions in the recording, %d replies after the restart", session+1, len(sessions[1]))
	}
	if x := sessions[1][0]; !(x > 0.99) {
		t.Errorf("the first reply after the restart: throttle %v, want the FMU's x back near 1", x)
	}
	compared, differ := 0, 0
	for k, x := range sessions[1] {
		x0, ok := sessions[0][k]
		if !ok || x == 0 || x0 == 0 {
			continue
		}
		compared++
		if math.Abs(x-x0) > 1e-9 {
			if differ++; differ <= 3 {
				t.Errorf("step %v after the restart: throttle %v, from the run's start %v", k, x, x0)
			}
		}
	}
	if differ > 3 {
		t.Errorf("… and %d more replies after the restart unlike those from the run's start", differ-3)
	}
	if compared < 50 {
		t.Errorf("only %d replies to compare", compared)
	}
}

// BeamNG pauses (`--fault pause=D@T`: its physics thread stopped, as its
// pause, a hitch or a debugger stops it) and goes on where it left off: a
// pause, not a fault. The run is healthy with a note, BeamNG never waits 2 s
// for a reply, and nothing is diagnosed. Before, a 1.2 s pause ended the
// run with exit 1 ("BeamNG went silent 1 times while connected"), and
// after a 3 s pause BeamNG stalled (the reply ids re-based as if it had
// waited 2 s; it rejected them and waited) and the verdict diagnosed
// replies sent where BeamNG is not listening.
func TestPausesAreNotFaults(t *testing.T) {
	t.Parallel()
	for _, pause := range []string{"1200ms", "3s"} {
		t.Run(pause, func(t *testing.T) {
			t.Parallel()
			free := freeUDPPorts(t, 2)
			rig := rigOnPorts(t, free[0], free[1])
			run, out, errb := startProcess(t, "run", "--json", "--no-watch", rig)
			errb.WaitFor(t, "waiting for BeamNG")
			emu, emuOut, emuErr := startProcess(t, "emulate", "--json", "--config", rig, "--fault", "pause="+pause+"@1s", "--duration", "2s")
			if code := waitExit(t, emu, 60*time.Second, "emulate"); code != exitOK {
				t.Fatalf("emulate: exit %d\n%s", code, emuErr)
			}
			run.Process.Signal(os.Interrupt) // BeamNG stopped: so is beamconnect
			code := waitExit(t, run, 30*time.Second, "run after SIGINT")
			s := summaryOf(t, out.String())
			var em emulateSummary
			json.Unmarshal([]byte(emuOut.String()), &em)
			if code != exitOK || !s.Healthy || len(s.Faults) != 0 || len(s.Diagnoses) != 0 {
				t.Errorf("exit %d, faults %q, diagnoses %v: want a healthy run\n%s", code, s.Faults, s.Diagnoses, errb)
			}
			// (A machine loaded enough to hold emulate up for a second
			// more is another pause of BeamNG's, rightly counted.)
			if s.Pauses < 1 || s.StallsRecovered != 0 || s.LockstepLost != 0 || !hasNote(s, "BeamNG paused") {
				t.Errorf("pauses %d, stalls %d, lockstep lost %d, notes %q: want the pause noted", s.Pauses, s.StallsRecovered, s.LockstepLost, s.Notes)
			}
			if em.Pauses != 1 || em.Stalls != 0 || em.Accepted < em.Sent-1 {
				t.Errorf("BeamNG's side: %+v: want no 2 s wait, every reply but the last applied", em)
			}
		})
	}
}

// BeamNG's coupling stops, and the user stops beamconnect within BeamNG's
// 2 s wait for a reply (Ctrl-C as soon as BeamNG is said silent, or
// SIGTERM 2 s after its last message): every message was answered, so
// BeamNG was not waiting for a reply, and its silence is its stop: exit 0,
// no fault, a note. Before, both were faults: "BeamNG was not connected
// when the run ended (status connecting): silent for its last 2.1 s
// (BeamNG's own 2 s wait for a reply, or its stop)".
func TestStopInsideBeamNGsWait(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		sig   os.Signal
		after time.Duration // after "BeamNG went silent", which is 1 s after its last message
	}{
		{"Ctrl-C as BeamNG is said silent", os.Interrupt, 0},
		{"SIGTERM 2 s after BeamNG's last message", syscall.SIGTERM, time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			free := freeUDPPorts(t, 2)
			rig := rigOnPorts(t, free[0], free[1])
			run, out, errb := startProcess(t, "run", "--json", "--no-watch", rig)
			errb.WaitFor(t, "waiting for BeamNG")
			emu, _, emuErr := startProcess(t, "emulate", "--config", rig, "--duration", "1s")
			if code := waitExit(t, emu, 60*time.Second, "emulate"); code != exitOK {
				t.Fatalf("emulate: exit %d\n%s", code, emuErr)
			}
			errb.WaitFor(t, "BeamNG went silent")
			time.Sleep(tt.after) // the user's moment: a time, not an event
			run.Process.Signal(tt.sig)
			code := waitExit(t, run, 30*time.Second, "run after the signal")
			s := summaryOf(t, out.String())
			if code != exitOK || !s.Healthy || len(s.Faults) != 0 || !hasNote(s, "before beamconnect was stopped") {
				t.Errorf("exit %d, faults %q, notes %q: want a clean stop\n%s", code, s.Faults, s.Notes, errb)
			}
		})
	}
}

// The recording is the reply BeamNG got: the follow example's two
// vehicles stepping one model, beamconnect's binary against `beamconnect
// emulate` on real sockets, free-running. Every control recorded for ego
// (vehicle 0, whose debug logs emulate writes) equals, value for value,
// what BeamNG's receive log has for the reply id of that row; the lead's
// step, which writes ego's controls too, never shows in ego's rows.
func TestFollowRecordingIsWhatBeamNGGot(t *testing.T) {
	t.Parallel()
	free := freeUDPPorts(t, 4)
	b, err := os.ReadFile(followExample)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i, p := range []string{"64890", "64891", "64892", "64893"} {
		text = strings.Replace(text, p, strconv.Itoa(free[i]), 1)
	}
	dir := t.TempDir()
	rig := filepath.Join(dir, "follow.json")
	os.WriteFile(rig, []byte(strings.Replace(text, `"$schema": "../schemas/config.schema.json",`, "", 1)), 0o644)
	plan := configtest.Plan(t, rig)
	rec, logs := filepath.Join(dir, "run.csv"), t.TempDir()
	run, _, errb := startProcess(t, "run", "--no-watch", rig, "--record", rec)
	errb.WaitForN(t, "waiting for BeamNG", 2)
	emu, _, emuErr := startProcess(t, "emulate", "--config", rig, "--free-running", "--duration", "5s", "--debug-logs", logs)
	if code := waitExit(t, emu, 60*time.Second, "emulate"); code != exitOK {
		t.Fatalf("emulate: exit %d\n%s", code, emuErr)
	}
	errb.WaitFor(t, "BeamNG went silent")
	run.Process.Signal(os.Interrupt)
	waitExit(t, run, 30*time.Second, "run after SIGINT")

	got := byID(readTable(t, filepath.Join(logs, "ego", emulator.ReceiveLogName))) // ego's, by reply id
	lines := recordingtest.Read(t, rec)
	col := map[string]int{}
	for i, name := range lines[0] {
		col[name] = i
	}
	compared, differ := 0, 0
	for _, name := range []string{"throttle", "brake"} {
		port, elem, ok := plan.FindFor(beamng.ToBeamNG, name, 0)
		logCol, _ := logColumn(plan, beamng.ToBeamNG, ports.Element{Port: port, Elem: elem})
		recCol, inRec := col["in1.ego."+name]
		if !ok || !inRec {
			t.Fatalf("ego's %s: in the plan %v, in the recording %v (%q)", name, ok, inRec, lines[0])
		}
		for _, row := range lines[1:] {
			id, _ := strconv.ParseFloat(row[col["reply_id"]], 64)
			r, sent := got[int64(id)]
			if row[col["vehicle"]] != "ego" || !sent {
				continue // the lead's row, or a reply the run's end cut off
			}
			compared++
			if v, _ := strconv.ParseFloat(row[recCol], 64); v != r[logCol] {
				if differ++; differ <= 5 {
					t.Errorf("reply %v: %s recorded %v, BeamNG got %v", id, name, v, r[logCol])
				}
			}
		}
	}
	if differ > 0 || compared < 200 {
		t.Errorf("%d of %d recorded controls differ from what BeamNG got (want none, of at least 200)", differ, compared)
	}
}

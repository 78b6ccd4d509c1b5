//go:build unix

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
	"time"

	"beamconnect/models/exectest"
)

// customRig writes a rig on beamconnect's port local and BeamNG's port
// remote whose exec model runs script and answers one control, custom1
// (BeamNG's bank B1, which it takes as it is: neither clamped nor
// scaled), with extra modelParams (`"reset": "line"`); it returns the
// config's path.
func customRig(t *testing.T, local, remote int, script []string, extra string) string {
	t.Helper()
	command, _ := json.Marshal(exectest.Command(script...))
	cfg := fmt.Sprintf(`{
  "version": 2,
  "remotePort": %d,
  "outputs": [ { "updatePeriodMs": 5, "ports": [ [ { "propertyName": "groundspeed" } ] ] } ],
  "inputs": [ { "updatePeriodMs": 5, "ports": [ [ { "propertyName": "custom1" } ] ] } ],
  "beamng": { "localPort": %d, "model": "exec", "modelParams": { "command": %s%s } }
}`, remote, local, command, extra)
	rig := filepath.Join(t.TempDir(), "rig.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return rig
}

// received reads the emulator's receive log (BeamNG's simulinkReceiveLog.csv):
// each reply's id and custom1 (bank B1), in the order they came.
func received(t *testing.T, dir string) (ids, custom1 []float64) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "simulinkReceiveLog.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("the receive log: %v, %d rows", err, len(rows))
	}
	col := -1
	for i, name := range rows[0] {
		if name == "B1" {
			col = i
		}
	}
	if col < 0 || rows[0][1] != "id" {
		t.Fatalf("the receive log's header %v", rows[0])
	}
	for _, r := range rows[1:] {
		id, _ := strconv.ParseFloat(r[1], 64)
		v, err := strconv.ParseFloat(r[col], 64)
		if err != nil {
			v = math.NaN()
		}
		ids, custom1 = append(ids, id), append(custom1, v)
	}
	return ids, custom1
}

// coupleWithEmulator runs rig against `beamconnect emulate` on real
// sockets (its own process, with --debug-logs) with emulate's extra
// flags, and returns run's --json summary, its log and exit status, and
// the folder of BeamNG's debug logs.
func coupleWithEmulator(t *testing.T, rig string, emulate ...string) (map[string]any, string, int, string) {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "logs")
	run, out, errb := startProcess(t, "run", "--json", "--no-watch", rig)
	errb.WaitFor(t, "waiting for BeamNG")
	emu, _, emuErr := startProcess(t, append([]string{"emulate", "--config", rig, "--debug-logs", logs}, emulate...)...)
	if code := waitExit(t, emu, 2*time.Minute, "emulate"); code != exitOK {
		t.Fatalf("emulate: exit %d\n%s", code, emuErr)
	}
	errb.WaitFor(t, "BeamNG went silent") // BeamNG's coupling stopped
	run.Process.Signal(os.Interrupt)
	code := waitExit(t, run, 30*time.Second, "run after SIGINT")
	var s map[string]any
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatalf("no summary (exit %d): %v\n%s", code, err, errb)
	}
	return s, errb.String(), code, logs
}

// The exec program starts over when BeamNG's controller is reloaded
// (`emulate --fault restart@1s`: ids from 0, a new port). The program
// counts its answers (custom1: how many it gave before, since it started
// or was written "# reset"), so BeamNG sees where it starts from: the
// first reply to the restarted controller carries 0. A program that
// speaks reset is written its reset line; one that does not is started
// again; model_resets 1, healthy. Before, the count went on (0.0201 →
// 0.0202 in the probe's units), model_resets said 1 and the run was
// healthy. A config may keep the program's state on purpose (reset
// "none": the count goes on, no reset counted, healthy), or refuse to
// start it again ("line" for a program that does not speak reset: not
// reset, model_not_reset 1, the run not healthy).
func TestExecStartsOverWhenBeamNGRestarts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		speaks   bool
		extra    string
		reset    bool // it starts over
		healthy  bool
		notReset float64
	}{
		{name: "a program that speaks reset", speaks: true, reset: true, healthy: true},
		{name: "a program started again", reset: true, healthy: true},
		{name: "kept on purpose", speaks: true, extra: `, "reset": "none"`, healthy: true},
		{name: "line, for a program that does not speak it", extra: `, "reset": "line"`, notReset: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script := []string{"header", "answer:*=@$t 1 $n"}
			if tt.speaks {
				script = []string{"header", "say=# protocol: reset", "answer:*=@$t 1 $n"}
			}
			// 3 s of BeamNG's time after the restart: should its reloaded
			// controller run ahead on a late reply to its old self, and what
			// it sent while the program started over be skipped for its
			// newest message, the watchdog has time to bring it back into
			// lockstep, and the new session's replies to be judged.
			free := freeUDPPorts(t, 2)
			s, errOut, code, logs := coupleWithEmulator(t, customRig(t, free[0], free[1], script, tt.extra), "--fault", "restart@1s", "--duration", "4s")
			resets := map[bool]float64{true: 1}[tt.reset]
			if s["restarts"] != 1.0 || s["model_resets"] != resets || s["model_not_reset"] != tt.notReset || restartedHealthy(code, s) != tt.healthy {
				t.Errorf("restarts %v, model resets %v (want %v), not reset %v (want %v), healthy %v, exit %d; faults %v\n%s",
					s["restarts"], s["model_resets"], resets, s["model_not_reset"], tt.notReset, s["healthy"], code, s["faults"], errOut)
			}
			// The count BeamNG got goes one up a reply, but where the program
			// started over: back to 0 there, once, if it was reset. (A late
			// reply may hide the restart in the ids: the count shows it.)
			// Requests while BeamNG was silent are counted too.
			_, count := received(t, logs)
			var backs []int
			for i := 1; i < len(count); i++ {
				if count[i] <= count[i-1] {
					backs = append(backs, i)
				}
			}
			switch {
			case !tt.reset && len(backs) > 0:
				i := backs[0]
				t.Errorf("reply %d carries %v, the one before %v: want the count going on across the restart", i, count[i], count[i-1])
			case tt.reset && (len(backs) != 1 || count[backs[0]] != firstAnswer(s, 0, 1)):
				t.Fatalf("the count went back at replies %v (%d replies): want once, to the program's first answer BeamNG got, %v", backs, len(count), firstAnswer(s, 0, 1))
			case tt.reset:
				at := backs[0]
				t.Logf("the count at the restart: %v → %v, then %d replies", count[at-1], count[at], len(count)-at)
				if len(count)-at < 50 {
					t.Errorf("%d replies after the restart: too few to judge", len(count)-at)
				}
				for i := at + 1; i < len(count); i++ {
					if count[i] != count[i-1]+1 {
						t.Fatalf("reply %d after the restart carries %v, the one before %v: want one more", i-at, count[i], count[i-1])
					}
				}
			}
		})
	}
}

// A program that writes 50 of its answers twice (every 20th of its first
// 1000, the copy 0, 1 or 5 ms later), against the emulator, free-running,
// 1000 messages (5 s of BeamNG's time). Its answer carries its request's time, so BeamNG's
// receive log shows whose data each reply was computed from: reply id
// r answers message r − 1, whose time is (r − 1) × 5 ms.
//
// Echoing "@t": no reply carries another message's controls; every copy
// is dropped and counted as an old answer; healthy. Before, 35 to 52 of
// 1000 applied replies carried another message's controls.
//
// Not echoing: every copy is said as a protocol fault and counted
// (model_discarded 50), the run is not healthy; replies answered before a
// copy was seen may have carried it (how many is logged).
func TestExecDuplicatedAnswersAgainstTheEmulator(t *testing.T) {
	t.Parallel()
	const copies = 50
	for _, echo := range []bool{true, false} {
		for _, after := range []string{"0s", "1ms", "5ms"} {
			t.Run(fmt.Sprintf("echo %v, the copy %s later", echo, after), func(t *testing.T) {
				parallelOffWine(t)
				answer := "1 $t"
				if echo {
					answer = "@$t " + answer
				}
				script := []string{"header", "twice=20:" + after, fmt.Sprintf("answer:%d=%s", 20*copies, answer),
					"twice=1000000000:0s", "answer:*=" + answer}
				free := freeUDPPorts(t, 2)
				s, errOut, code, logs := coupleWithEmulator(t, customRig(t, free[0], free[1], script, ""), "--free-running", "--duration", "5005ms")
				ids, got := received(t, logs)
				own, neutral, other := 0, 0, 0
				for i, r := range ids {
					switch want := (r - 1) * 0.005; {
					case got[i] != got[i]:
						neutral++
					case math.Abs(got[i]-want) < 1e-9:
						own++
					default:
						if other++; other <= 5 && echo {
							t.Errorf("reply id %v carried the answer to the request at t = %v, not its message's (t = %v)", r, got[i], want)
						}
					}
				}
				t.Logf("%d replies: %d their own message's controls, %d neutral, %d another's; old answers %v, discarded %v, model faults %v",
					len(ids), own, neutral, other, s["model_old_answers"], s["model_discarded"], s["model_faults"])
				if len(ids) < 1000 {
					t.Fatalf("BeamNG received %d replies, want 1000\n%s", len(ids), errOut)
				}
				if echo {
					if other != 0 || neutral != 0 || s["model_old_answers"].(float64) < copies || s["model_discarded"] != 0.0 || code != exitOK {
						t.Errorf("echoed: %d replies another's, %d neutral, old answers %v (want at least %d), discarded %v, exit %d; faults %v\n%s",
							other, neutral, s["model_old_answers"], copies, s["model_discarded"], code, s["faults"], errOut)
					}
					return
				}
				if s["model_discarded"] != float64(copies) || s["model_faults"].(float64) < 1 || s["healthy"] != false || code != exitFailed ||
					!strings.Contains(errOut, "a line beyond one answer per request (no request is outstanding") {
					t.Errorf("not echoed: discarded %v (want %d), model faults %v, healthy %v, exit %d; faults %v\n%s",
						s["model_discarded"], copies, s["model_faults"], s["healthy"], code, s["faults"], errOut)
				}
			})
		}
	}
}

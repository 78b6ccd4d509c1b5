package coupling

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"beamconnect/beamng/emulator"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/wine"
	"beamconnect/models"
	"beamconnect/models/exectest"
	"beamconnect/models/kinds"
	"beamconnect/ports"
)

// Every model kind recovers from a fault that ends: BeamNG gets neutral
// controls while it lasts (status 4), then the model's again, and the log
// says both, whatever status the model saw meanwhile (before, a fault set
// status 4 and the FMU, stepping only at status 3, never recovered). Over
// real sockets and real processes, BeamNG paced in real time, since the
// restarts wait out a real backoff.
func TestEveryModelKindRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and C FMUs on the real clock, not under -short")
	}
	skipModelInBusyPoll(t)
	fmuModel := func(o testfmu.Options, extra models.Params) func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model {
		return func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model {
			params := models.Params{"path": testfmu.ForTest(t, "cruise.fmu", o), "deadlineMs": 100.0}
			for k, v := range extra {
				params[k] = v
			}
			m, err := kinds.New("fmu", params, p, log.Logger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.(models.Closer).Close() })
			return m
		}
	}
	for _, tt := range []struct {
		name  string
		model func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model
		says  string // the log line that says the model answers again
	}{
		{"built-in (Go)", func(t *testing.T, p *ports.Plan, _ *logBuffer) models.Model {
			port, elem, _ := p.Find(1, "throttle")
			m := &floorAll{throttles: []ref2{{port, elem}}, at: 200, fault: 100}
			return m
		}, "model recovered"},
		{"exec, its program exits once", func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model {
			// Its first run exits after 200 answers; the one started again
			// answers for good.
			script := exectest.Command("header", "first="+filepath.Join(t.TempDir(), "ran"), "answer:200=1 1 0 0", "exit=1",
				"second", "answer:*=1 1 0 0")
			m, err := kinds.New("exec", models.Params{"command": script, "deadlineMs": 100.0}, p, log.Logger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.(models.Closer).Close() })
			return m
		}, "model program answering again after its restart"},
		{"FMU in its child, one NaN", fmuModel(testfmu.Options{Fault: "nan-once", After: 200}, nil), "model recovered"},
		{"FMU in its child, a crash", fmuModel(testfmu.Options{Fault: "crash", After: 200}, nil), "the FMU is answering again after its restart"},
		{"FMU in process, one NaN", fmuModel(testfmu.Options{Fault: "nan-once", After: 200}, models.Params{"inProcess": true}), "model recovered"},
		{"FMU in process, an error status", fmuModel(testfmu.Options{FMI: 3, Fault: "error", After: 200}, models.Params{"inProcess": true}), "the FMU is instantiated again"},
		{"FMU in process, a hang", fmuModel(testfmu.Options{Fault: "hang-2s", After: 200}, models.Params{"inProcess": true}), "the FMU is instantiated again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Under Wine, FMU hosts started at once by parallel subtests
			// have twice failed to start (an unpacked library's write
			// "Invalid handle", a host ending with status 1): one at a
			// time there.
			if !wine.Running() {
				t.Parallel()
			}
			cfg := load(t, "../examples/cruise-pedals.json")
			cfg.ModelTimeout = 0.2 // a hung step is a fault after 0.2 s, abandoned after 1 s: within the run
			log := &logBuffer{}
			var mu sync.Mutex
			var h *harness
			neutral, after := false, false // the throttle released during the fault, and on again after it
			h = rig{cfg: cfg, model: func(p *ports.Plan) models.Model { return tt.model(t, p, log) },
				opts: func(h *harness, o *Options) { h.log, o.Log = log, log.Logger() },
				em: emulator.Config{Steps: 14000, FPS: 60, Trace: func(*emulator.StepRecord) {
					mu.Lock()
					defer mu.Unlock()
					th := h.em.Vehicle().Throttle
					if h.s.Values()[ModelFaults] > 0 && th == 0 {
						neutral = true
					}
					if neutral && th > 0 {
						after = true
					}
				}}}.udp(t)
			h.run(t)
			mu.Lock()
			defer mu.Unlock()
			if h.s.Values()[ModelFaults] == 0 || !neutral || !after {
				t.Errorf("faults %d, neutral during the fault %v, the model's controls after it %v\n%s", h.s.Values()[ModelFaults], neutral, after, log)
			}
			if !log.Has(tt.says) || !log.Has("model recovered: its controls go to BeamNG again") {
				t.Errorf("the log does not say the model recovered (%q):\n%s", tt.says, log)
			}
			if !strings.Contains(strings.Join(h.s.Faults(), "\n"), "the model faulted") {
				t.Errorf("faults %q", h.s.Faults())
			}
		})
	}
}

// In lockstep (the default) an FMU slower than the period (2 ms a step at
// a 1 ms period) slows BeamNG: every reply waits for the FMU's step on its
// message's data and carries its controls, none is neutral, and the run is
// healthy; the summary's figures say how slow: the steps longer than the
// period, about half of real time at most (a step sleeps 2 ms at least).
func TestSlowFMUSlowsBeamNG(t *testing.T) {
	if testing.Short() {
		t.Skip("C FMUs on the real clock, not under -short")
	}
	skipModelInBusyPoll(t)
	for _, inProcess := range []bool{true, false} {
		t.Run(fmt.Sprint("in process ", inProcess), func(t *testing.T) {
			t.Parallel()
			src := strings.ReplaceAll(string(must(os.ReadFile("../examples/cruise-pedals.json"))), `"updatePeriodMs": 5`, `"updatePeriodMs": 1`)
			path := filepath.Join(t.TempDir(), "fast.json")
			os.WriteFile(path, []byte(src), 0o644)
			h := rig{cfg: load(t, path), model: func(p *ports.Plan) models.Model {
				m, err := kinds.New("fmu", models.Params{"path": testfmu.ForTest(t, "cruise.fmu", testfmu.Options{Fault: "slow", After: 1}), "inProcess": inProcess}, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.(models.Closer).Close() })
				return m
			}, em: emulator.Config{Steps: 1000, FPS: 60}}.udp(t)
			h.run(t)
			st := h.c.Stats()
			if st.Get(NeutralReplies) != 0 || st.Get(Replies) != st.Get(Messages) || h.emSum.Stalls != 0 {
				t.Errorf("%d messages, %d replies, %d neutral; %v", st.Get(Messages), st.Get(Replies), st.Get(NeutralReplies), h.emSum)
			}
			if f := h.s.Faults(); len(f) != 0 {
				t.Errorf("faults %q for a slow model in lockstep", f)
			}
			mt := h.s.ModelTiming()
			if mt.Mode != "lockstep" || mt.OverPeriod < mt.Steps/2 || mt.RealTimeFactor > 0.6 || len(mt.Slowest) != 3 {
				t.Errorf("model timing %+v: want the steps longer than the period, about half of real time at most", mt)
			}
		})
	}
}

// In real time (beamng.realTime) an FMU slower than the period (2 ms a
// step at a 1 ms period) cannot hold BeamNG back: it steps on its own
// thread (in process) or process, the coupling answers every message by
// the deadline, with neutral controls when the FMU has none for it, and
// the run's verdict says the model could not keep up (before, in process:
// 2 ms per step plus catch-ups, BeamNG at 4 % of real time, reported
// healthy).
func TestSlowFMUCannotHoldBeamNGBack(t *testing.T) {
	if testing.Short() {
		t.Skip("C FMUs on the real clock, not under -short")
	}
	for _, inProcess := range []bool{true, false} {
		t.Run(fmt.Sprint("in process ", inProcess), func(t *testing.T) {
			t.Parallel()
			src := strings.ReplaceAll(string(must(os.ReadFile("../examples/cruise-pedals.json"))), `"updatePeriodMs": 5`, `"updatePeriodMs": 1`)
			path := filepath.Join(t.TempDir(), "fast.json")
			os.WriteFile(path, []byte(src), 0o644)
			cfg := load(t, path)
			cfg.ModelTimeout, cfg.RealTime = 0.5, true
			h := rig{cfg: cfg, model: func(p *ports.Plan) models.Model {
				m, err := kinds.New("fmu", models.Params{"path": testfmu.ForTest(t, "cruise.fmu", testfmu.Options{Fault: "slow", After: 1}), "inProcess": inProcess}, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.(models.Closer).Close() })
				return m
			}, em: emulator.Config{Steps: 6000, FPS: 60}}.udp(t)
			h.run(t)
			st := h.c.Stats()
			// Held back, the coupling took the FMU's 2 ms a step and more
			// (catch-ups) for every message, each reply with the FMU's
			// controls (as lockstep does, on purpose), and BeamNG ran at 4 %
			// of real time. Answered by the deadline, most replies go
			// without the FMU's controls, which came too late: the coupling
			// did not wait for them. (The turnaround and the real-time
			// factor are what the machine's load makes them: two busy
			// loops beside the test took the median turnaround to 3 ms and
			// BeamNG to 17 % of real time.)
			if h.emSum.Stalls != 0 {
				t.Errorf("BeamNG stalled: %v", h.emSum)
			}
			if st.Get(NotComputed)*2 < st.Get(Messages) || st.Get(Replies) != st.Get(Messages) {
				t.Errorf("%d messages, %d replies, %d without controls", st.Get(Messages), st.Get(Replies), st.Get(NotComputed))
			}
			if !strings.Contains(strings.Join(h.s.Faults(), "\n"), "the model could not keep up") {
				t.Errorf("faults %q", h.s.Faults())
			}
		})
	}
}

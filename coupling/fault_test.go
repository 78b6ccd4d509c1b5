package coupling

import (
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/models"
	"beamconnect/ports"
)

// throttleTrace records the emulated car's throttle at every step.
type throttleTrace struct {
	h     *harness
	steps []float64
}

func (tt *throttleTrace) trace(*emulator.StepRecord) {
	tt.steps = append(tt.steps, tt.h.em.Vehicle().Throttle)
}

// An exec program that floors the throttle and then exits must not leave
// the throttle on. The exit is logged when it happens, BeamNG gets neutral
// controls and keeps being answered, and the run reports the fault. (A real
// process: over real sockets and the real clock.)
func TestDeadExecModelFailsSafe(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil || testing.Short() {
		t.Skip("needs sh; real sockets and a real process on the real clock, not under -short")
	}
	loggedAt := int64(-1)
	tr := &throttleTrace{}
	log := &logBuffer{}
	h := rig{cfg: load(t, "../examples/cruise-pedals.json"),
		model: func(p *ports.Plan) models.Model {
			m, err := models.New("exec", models.Params{
				"command": []string{"sh", "-c", `read h; i=0; while [ $i -lt 100 ]; do read a; echo "1 1 0 0"; i=$((i+1)); done; exit 1`},
				"restart": false,
			}, p, log.Logger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.(models.Closer).Close() })
			return m
		},
		opts: func(h *harness, o *Options) { h.log, o.Log = log, log.Logger() },
		em: emulator.Config{Steps: 30000, Trace: func(r *emulator.StepRecord) {
			tr.trace(r)
			if loggedAt < 0 && r.Step%100 == 0 && log.Has("model program ended") {
				loggedAt = r.Step
			}
		}}}.udp(t)
	tr.h = h
	h.run(t)
	if loggedAt < 0 || loggedAt > 20000 {
		t.Errorf("the program's end was logged at step %d of 30000: not when it happened", loggedAt)
	}
	if n := len(tr.steps); tr.steps[n/3] != 1 && tr.steps[n-1] != 0 {
		t.Errorf("throttle %v a third in, %v at the end: want 1, then 0", tr.steps[n/3], tr.steps[n-1])
	}
	if tr.steps[len(tr.steps)-1] != 0 {
		t.Errorf("the dead model's throttle %v was left applied", tr.steps[len(tr.steps)-1])
	}
	run, st := h.s.Values(), h.c.Stats()
	if run[ModelFaults] != 1 || st.Get(NeutralReplies) < 1000 || h.emSum.Stalls != 0 || st.Get(Replies) != st.Get(Messages) {
		t.Errorf("faults %d, neutral replies %d, BeamNG %v", run[ModelFaults], st.Get(NeutralReplies), h.emSum)
	}
	if f := h.s.Faults(); !containsAll(f, "the model faulted 1 times") {
		t.Errorf("faults %q", f)
	}
	if !h.log.Has("model fault: BeamNG gets neutral controls") {
		t.Errorf("log:\n%s", h.log)
	}
}

// floorIt is a model that floors the throttle, and misbehaves once at
// message `at`: it panics, or its step hangs for `hang`.
type floorIt struct {
	throttle ref2
	n, at    int
	panics   bool
	hang     time.Duration
}

func (m *floorIt) Step(t float64, out, in [][]float64) {
	in[m.throttle.port][m.throttle.elem] = 1
	if Status(out[0][0]) != Connected {
		return
	}
	if m.n++; m.n == m.at {
		if m.panics {
			panic("index out of range in the user's model")
		}
		time.Sleep(m.hang)
	}
}

func floorModel(at int, panics bool, hang time.Duration) func(*ports.Plan) models.Model {
	return func(p *ports.Plan) models.Model {
		port, elem, _ := p.Find(1, "throttle")
		return &floorIt{throttle: ref2{port, elem}, at: at, panics: panics, hang: hang}
	}
}

// A model that panics does not take the coupling down: the panic is
// recovered and logged, and BeamNG gets neutral controls from then on.
func TestPanickingModelFailsSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &throttleTrace{}
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), model: floorModel(100, true, 0),
			em: emulator.Config{Steps: 10000, Trace: func(r *emulator.StepRecord) { tr.trace(r) }}}.sim(t)
		tr.h = h
		h.run(t)
		st := h.c.Stats()
		if tr.steps[500] != 1 || tr.steps[len(tr.steps)-1] != 0 {
			t.Errorf("throttle %v early, %v at the end: want 1, then 0", tr.steps[500], tr.steps[len(tr.steps)-1])
		}
		if h.s.Values()[ModelFaults] != 1 || h.emSum.Stalls != 0 || st.Get(Replies) != st.Get(Messages) || st.Get(NeutralReplies) < 800 {
			t.Errorf("faults %d, neutral replies %d, BeamNG %v", h.s.Values()[ModelFaults], st.Get(NeutralReplies), h.emSum)
		}
		if !h.log.Has("model panicked") || !h.log.Has("index out of range in the user's model") {
			t.Errorf("log:\n%s", h.log)
		}
	})
}

// A model whose step hangs (here 400 ms, the timeout 25 ms): the watchdog
// answers BeamNG with neutral controls while it hangs, so the throttle is
// released and BeamNG does not stall; when the step returns, the model's
// controls apply again.
func TestHungModelFailsSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &throttleTrace{}
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), model: floorModel(100, false, 400*time.Millisecond),
			em: emulator.Config{Steps: 10000, Trace: func(r *emulator.StepRecord) { tr.trace(r) }}}.sim(t)
		tr.h = h
		h.run(t)
		st := h.c.Stats()
		released := false
		for _, v := range tr.steps[500:] {
			released = released || v == 0
		}
		if !released || tr.steps[len(tr.steps)-1] != 1 {
			t.Errorf("throttle released during the hang %v, at the end %v: want true, then 1 again", released, tr.steps[len(tr.steps)-1])
		}
		if h.s.Values()[ModelFaults] != 1 || st.Get(NeutralReplies) != 1 || st.Get(Late) != 1 || h.emSum.Stalls != 0 {
			t.Errorf("faults %d, neutral %d, late %d, BeamNG %v", h.s.Values()[ModelFaults], st.Get(NeutralReplies), st.Get(Late), h.emSum)
		}
		if !h.log.Has("model fault: its step is hung; answered BeamNG with neutral controls") || !h.log.Has("model recovered") {
			t.Errorf("log:\n%s", h.log)
		}
		if !strings.Contains(strings.Join(h.s.Faults(), "\n"), "the model faulted 1 times") {
			t.Errorf("faults %q", h.s.Faults())
		}
	})
}

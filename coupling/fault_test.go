package coupling

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// faultHarness couples cruise-pedals' ports to a model of the test's
// against the emulator, logging into log. The model timeout is 25 ms.
func faultHarness(t *testing.T, log *logBuffer, model func(*ports.Plan) models.Model, emCfg emulator.Config) *harness {
	t.Helper()
	cfg, err := config.Load("../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessPlan(t, cfg, model, emCfg)
	h.c.log = log.Logger()
	h.c.opt.Log = h.c.log
	return h
}

// throttleTrace records the emulated car's throttle at every step.
type throttleTrace struct {
	h     *harness
	steps []float64
}

func (tt *throttleTrace) trace(r *emulator.StepRecord) {
	tt.steps = append(tt.steps, tt.h.em.Vehicle().Throttle)
}

// Issue 10, defect 2: an exec program that floors the throttle and then
// exits must not leave the throttle on. The exit is logged when it
// happens, BeamNG gets neutral controls and keeps being answered, and the
// run reports the fault.
func TestDeadExecModelFailsSafe(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	log := &logBuffer{}
	loggedAt := int64(-1)
	tr := &throttleTrace{}
	h := faultHarness(t, log, func(p *ports.Plan) models.Model {
		m, err := models.New("exec", models.Params{
			"command": []string{"sh", "-c", `read h; i=0; while [ $i -lt 100 ]; do read a; echo "1 1 0 0"; i=$((i+1)); done; exit 1`},
			"restart": false,
		}, p, log.Logger())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.(models.Closer).Close() })
		return m
	}, emulator.Config{Steps: 30000, Trace: func(r *emulator.StepRecord) {
		tr.trace(r)
		if loggedAt < 0 && r.Step%100 == 0 && log.Has("model program ended") {
			loggedAt = r.Step
		}
	}})
	tr.h = h
	h.run(t)
	st := h.c.Stats()
	if loggedAt < 0 || loggedAt > 20000 {
		t.Errorf("the program's end was logged at step %d of 30000: not when it happened", loggedAt)
	}
	if n := len(tr.steps); tr.steps[n/3] != 1 && tr.steps[n-1] != 0 {
		t.Errorf("throttle %v a third in, %v at the end: want 1, then 0", tr.steps[n/3], tr.steps[n-1])
	}
	if tr.steps[len(tr.steps)-1] != 0 {
		t.Errorf("the dead model's throttle %v was left applied", tr.steps[len(tr.steps)-1])
	}
	if st.ModelFaults.Load() != 1 || st.NeutralReplies.Load() < 1000 || h.emSum.Stalls != 0 || st.Replies.Load() != st.Messages.Load() {
		t.Errorf("faults %d, neutral replies %d, BeamNG %v", st.ModelFaults.Load(), st.NeutralReplies.Load(), h.emSum)
	}
	if f := h.c.Faults(); !containsAll(f, "the model faulted 1 times") {
		t.Errorf("faults %q", f)
	}
	if !log.Has("model fault: BeamNG gets neutral controls") {
		t.Errorf("log:\n%s", log)
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

type ref2 struct{ port, elem int }

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
	log := &logBuffer{}
	tr := &throttleTrace{}
	h := faultHarness(t, log, floorModel(100, true, 0), emulator.Config{Steps: 10000, Trace: func(r *emulator.StepRecord) { tr.trace(r) }})
	tr.h = h
	h.run(t)
	st := h.c.Stats()
	if tr.steps[500] != 1 || tr.steps[len(tr.steps)-1] != 0 {
		t.Errorf("throttle %v early, %v at the end: want 1, then 0", tr.steps[500], tr.steps[len(tr.steps)-1])
	}
	if st.ModelFaults.Load() != 1 || h.emSum.Stalls != 0 || st.Replies.Load() != st.Messages.Load() || h.c.Status() == Unknown {
		t.Errorf("faults %d, BeamNG %v", st.ModelFaults.Load(), h.emSum)
	}
	if !log.Has("model panicked") || !log.Has("index out of range in the user's model") {
		t.Errorf("log:\n%s", log)
	}
}

// A model whose step hangs (here 400 ms, the timeout 25 ms): the watchdog
// answers BeamNG with neutral controls while it hangs, so the throttle is
// released and BeamNG does not stall; when the step returns, the model's
// controls apply again.
func TestHungModelFailsSafe(t *testing.T) {
	log := &logBuffer{}
	tr := &throttleTrace{}
	h := faultHarness(t, log, floorModel(100, false, 400*time.Millisecond), emulator.Config{Steps: 10000, Trace: func(r *emulator.StepRecord) { tr.trace(r) }})
	tr.h = h
	h.run(t)
	st := h.c.Stats()
	released := false
	for _, v := range tr.steps[500:] {
		if v == 0 {
			released = true
		}
	}
	if !released || tr.steps[len(tr.steps)-1] != 1 {
		t.Errorf("throttle released during the hang %v, at the end %v: want true, then 1 again", released, tr.steps[len(tr.steps)-1])
	}
	if st.ModelFaults.Load() != 1 || st.NeutralReplies.Load() != 1 || st.Late.Load() != 1 || h.emSum.Stalls != 0 {
		t.Errorf("faults %d, neutral %d, late %d, BeamNG %v", st.ModelFaults.Load(), st.NeutralReplies.Load(), st.Late.Load(), h.emSum)
	}
	if !log.Has("model fault: its step is hung; answered BeamNG with neutral controls") || !log.Has("model recovered") {
		t.Errorf("log:\n%s", log)
	}
	if !strings.Contains(strings.Join(h.c.Faults(), "\n"), "the model faulted 1 times") {
		t.Errorf("faults %q", h.c.Faults())
	}
}

package coupling

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/internal/wine"
	"beamconnect/models"
	"beamconnect/models/exectest"
	"beamconnect/models/kinds"
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
	if testing.Short() {
		t.Skip("real sockets and a real process on the real clock, not under -short")
	}
	wine.Skip(t, wine.Pipes) // its counts need every answer within the model timeout
	loggedAt := int64(-1)
	tr := &throttleTrace{}
	log := &logBuffer{}
	h := rig{cfg: load(t, "../examples/cruise-pedals.json"),
		model: func(p *ports.Plan) models.Model {
			m, err := kinds.New("exec", models.Params{
				"command": exectest.Command("header", "answer:100=1 1 0 0", "exit=1"),
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

// floorIt is a model that floors the throttle, and panics at message
// `at`.
type floorIt struct {
	throttle ref2
	n, at    int
}

func (m *floorIt) Step(t float64, out, in [][]float64) bool {
	in[m.throttle.port][m.throttle.elem] = 1
	if m.n++; m.n == m.at {
		panic("index out of range in the user's model")
	}
	return true
}

func floorModel(at int) func(*ports.Plan) models.Model {
	return func(p *ports.Plan) models.Model {
		port, elem, _ := p.Find(1, "throttle")
		return &floorIt{throttle: ref2{port, elem}, at: at}
	}
}

// A model that panics does not take the coupling down: the panic is
// recovered and logged, and BeamNG gets neutral controls from then on.
func TestPanickingModelFailsSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &throttleTrace{}
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), model: floorModel(100),
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

// boundedHang is a model that bounds its own step, as every model must:
// from message `at` on, for `hang` of time, its work does not finish by
// the deadline, so Step returns without controls, and after the model
// timeout it reports itself hung; then it answers again.
type boundedHang struct {
	throttle ref2
	n, at    int
	hang     time.Duration
	from     time.Time
	err      error
}

func (m *boundedHang) Step(t float64, out, in [][]float64) bool {
	m.n++
	now := time.Now()
	if m.n == m.at {
		m.from = now
	}
	if !m.from.IsZero() && now.Sub(m.from) < m.hang {
		if now.Sub(m.from) > 25*time.Millisecond {
			m.err = models.Late("its step has not returned after 25 ms")
		}
		return false
	}
	m.err = nil
	in[m.throttle.port][m.throttle.elem] = 1
	return true
}

func (m *boundedHang) Fault() error { return m.err }

// A model whose step hangs bounds its own wait: BeamNG gets neutral
// controls for every message it has no controls for (counted), the hang is
// a fault once it outlasts the model timeout (status 4, logged at once),
// BeamNG never stalls, and when the model answers again its controls apply
// and the fault ends. No watchdog of the coupling's is involved.
func TestHungModelFailsSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &throttleTrace{}
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"),
			model: func(p *ports.Plan) models.Model {
				port, elem, _ := p.Find(1, "throttle")
				return &boundedHang{throttle: ref2{port, elem}, at: 100, hang: 400 * time.Millisecond}
			},
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
		if h.s.Values()[ModelFaults] != 1 || st.Get(NotComputed) < 1 || st.Get(NeutralReplies) < 70 || h.emSum.Stalls != 0 {
			t.Errorf("faults %d, no controls %d, neutral %d, BeamNG %v", h.s.Values()[ModelFaults], st.Get(NotComputed), st.Get(NeutralReplies), h.emSum)
		}
		if !h.log.Has("model fault") || !h.log.Has("model recovered") {
			t.Errorf("log:\n%s", h.log)
		}
		if f := strings.Join(h.s.Faults(), "\n"); !strings.Contains(f, "the model faulted 1 times") {
			t.Errorf("faults %q", h.s.Faults())
		}
	})
}

// In real time, "the model could not keep up" counts every message the
// model had no controls for in time: those after its step's deadline, and
// those while its step, hung past the model timeout, had not answered (a
// fault). The figure is the neutral replies it explains. Before, the
// messages answered while the fault lasted were left out: a model that
// had no controls for 80 of 1000 messages was said to miss 5 (0.5 %, no
// verdict), and one that had none at all "264 of 10000".
func TestCouldNotKeepUpCountsEveryLateMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := load(t, "../examples/cruise-pedals.json")
		cfg.RealTime = true
		h := rig{cfg: cfg, model: func(p *ports.Plan) models.Model {
			port, elem, _ := p.Find(1, "throttle")
			return &boundedHang{throttle: ref2{port, elem}, at: 100, hang: 400 * time.Millisecond}
		}, em: emulator.Config{Steps: 10000}}.sim(t)
		h.run(t)
		st := h.c.Stats()
		if n := st.Get(NotComputed); n < 75 || n != st.Get(NeutralReplies) {
			t.Errorf("no controls %d, neutral replies %d: want every message of the 400 ms hang (about 80), and the two equal", n, st.Get(NeutralReplies))
		}
		want := fmt.Sprintf("the model could not keep up: it computed no controls in time for %d of %d messages", st.Get(NotComputed), st.Get(Messages))
		if f := h.s.Faults(); !containsAll(f, want, "the model faulted 1 times") {
			t.Errorf("faults %q, want %q", f, want)
		}
	})
}

// flaky is a model that can be faulted and healed by the test, and keeps
// the status its port 0 showed at each step.
type flaky struct {
	err  error
	seen []ports.Status
}

func (m *flaky) Step(t float64, out, in [][]float64) bool {
	m.seen = append(m.seen, ports.Status(out[0][0]))
	return true
}
func (m *flaky) Fault() error { return m.err }

// A model fault shows as connection status 4 (error) while it lasts: the
// vehicle's and the run's status, port 0 as the model sees it on its next
// step, and the log, at once; when the model recovers, 3 (connected) again.
func TestModelFaultIsStatusError(t *testing.T) {
	m := &flaky{}
	log := &logBuffer{}
	d := newDirect(t, load(t, "../examples/cruise-pedals.json"), m, log)
	from, now := d.from(50000), d.start()
	d.msg[1] = 12
	step := func() []float64 {
		t.Helper()
		d.msg[0]++
		now = now.Add(5 * time.Millisecond)
		r, ok := d.send(from, now)
		if !ok {
			t.Fatal("no reply")
		}
		return r
	}
	step()
	if d.l.Status() != ports.Connected {
		t.Fatalf("status %v before the fault", d.l.Status())
	}
	m.err = errors.New("the model's program stopped answering")
	step()
	if d.l.Status() != ports.Error || d.s.Status() != ports.Error {
		t.Errorf("during the fault: vehicle %v, run %v; want 4 error", d.l.Status(), d.s.Status())
	}
	if !log.Has("is=error") {
		t.Errorf("the status change is not logged:\n%s", log)
	}
	step()
	if got := m.seen[len(m.seen)-1]; got != ports.Error {
		t.Errorf("the model's port 0 shows %v during the fault; want 4 error", got)
	}
	// The live page's problems say what the summary will: 2 neutral replies.
	if p := strings.Join(d.s.Problems(), "\n"); !strings.Contains(p, "2 replies carried neutral controls") {
		t.Errorf("problems while the run goes on: %q", p)
	}
	m.err = nil
	step()
	if d.l.Status() != ports.Connected || d.s.Status() != ports.Connected {
		t.Errorf("after the fault: vehicle %v, run %v; want 3 connected", d.l.Status(), d.s.Status())
	}
}

// floorAll floors every vehicle's throttle, and faults once, at step `at`
// after connecting, for `fault` steps.
type floorAll struct {
	throttles []ref2
	n, at     int
	fault     int
	err       error
}

func (m *floorAll) Step(t float64, out, in [][]float64) bool {
	for _, r := range m.throttles {
		in[r.port][r.elem] = 1
	}
	m.n++
	m.err = nil
	if m.n >= m.at && m.n < m.at+m.fault {
		m.err = errors.New("the model's program stopped answering")
	}
	return true
}

func (m *floorAll) Fault() error { return m.err }

// With several vehicles, a model fault is every vehicle's: each vehicle's
// messages are answered with neutral controls while it lasts (not only
// the one whose message found it), and each gets the model's again after.
func TestModelFaultFleetFailsSafe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ego, lead []float64 // throttles every step
		var h *harness
		h = rig{cfg: load(t, "../examples/follow.json"),
			model: func(p *ports.Plan) models.Model {
				m := &floorAll{at: 400, fault: 200}
				for v := range p.Vehicles {
					port, elem, _ := p.FindFor(beamng.ToBeamNG, "throttle", v)
					m.throttles = append(m.throttles, ref2{port, elem})
				}
				return m
			},
			em: emulator.Config{Steps: 10000, Trace: func(*emulator.StepRecord) {
				ego, lead = append(ego, h.ems[0].Vehicle().Throttle), append(lead, h.ems[1].Vehicle().Throttle)
			}}}.sim(t)
		h.run(t)
		for v, tr := range [][]float64{ego, lead} {
			released := false
			for _, x := range tr[500:] {
				released = released || x == 0
			}
			if !released || tr[len(tr)-1] != 1 {
				t.Errorf("vehicle %d: throttle released during the fault %v, at the end %v: want true, then 1 again", v, released, tr[len(tr)-1])
			}
			if n := h.s.Link(v).Stats().Get(NeutralReplies); n < 50 {
				t.Errorf("vehicle %d: %d neutral replies during the fault", v, n)
			}
		}
		for v, s := range h.sums {
			if s.Stalls != 0 {
				t.Errorf("vehicle %d's BeamNG stalled: %v", v, s)
			}
		}
		if h.s.Values()[ModelFaults] != 1 || !h.log.Has("model recovered") {
			t.Errorf("faults %d; log:\n%s", h.s.Values()[ModelFaults], h.log)
		}
	})
}

// scripted writes the throttle the test lists, one per step; its step can
// take long (it moves the direct test's clock).
type scripted struct {
	throttle ref2
	values   []float64
	slow     map[int]time.Duration // step → how long it takes
	clock    *manualClock
	n        int
}

func (m *scripted) Step(t float64, out, in [][]float64) bool {
	in[m.throttle.port][m.throttle.elem] = m.values[min(m.n, len(m.values)-1)]
	m.clock.now = m.clock.now.Add(m.slow[m.n])
	m.n++
	return true
}

// On Gen 2 (no NaN filter: a control the model leaves to BeamNG,
// models.Keep, is sent as BeamNG's current value), "BeamNG's current
// value" is that of the last reply that went out: a reply withheld (the
// step took so long BeamNG had moved on) never reached BeamNG, and its
// throttle must not stand in.
func TestKeepIsWhatBeamNGGot(t *testing.T) {
	m := &scripted{values: []float64{0.7, 0.9, models.Keep}, slow: map[int]time.Duration{1: 3 * time.Second}}
	d := newDirect(t, load(t, "../examples/gen2-cruise.json"), m, nil)
	m.clock = d.clock
	port, elem, ok := d.plan.Find(beamng.ToBeamNG, "throttle")
	if !ok {
		t.Fatal("no throttle")
	}
	m.throttle = ref2{port, elem}
	slot := -1
	for _, f := range d.plan.Inputs[port].Fields {
		if elem >= f.Offset && elem < f.Offset+f.Width {
			slot = f.Slot + elem - f.Offset
		}
	}
	from, now := d.from(50000), d.start()
	send := func() ([]float64, bool) {
		d.msg[0]++
		now = d.clock.now.Add(5 * time.Millisecond)
		return d.send(from, now)
	}
	if r, ok := send(); !ok || r[slot] != 0.7 {
		t.Fatalf("first reply %v (sent %v): want throttle 0.7", r, ok)
	}
	if _, ok := send(); ok {
		t.Fatal("the slow step's reply went out: want it withheld")
	}
	r, ok := send()
	if !ok || r[slot] != 0.7 {
		t.Errorf("the model left the throttle unset: the reply carries %v, want 0.7, the last BeamNG got", r[slot])
	}
}

// floorThenNaN floors the throttle for its first n steps, writes NaN for
// the next n (its state gone NaN), then 0.3.
type floorThenNaN struct {
	throttle ref2
	n        int64
	k        atomic.Int64 // steps so far: the emulator's trace reads it too
}

func (m *floorThenNaN) Step(_ float64, _ [][]float64, in [][]float64) bool {
	v, k := 1.0, m.k.Load()
	switch {
	case k >= 2*m.n:
		v = 0.3
	case k >= m.n:
		v = math.NaN()
	}
	in[m.throttle.port][m.throttle.elem] = v
	m.k.Add(1)
	return true
}

// A NaN the model computes is a fault, never "keep the previous value"
// (which a Gen 1 BeamNG makes of a NaN): every message whose controls are
// not all finite is answered with neutral controls, counted as non_finite,
// the fault logged once with the control's name and ended when the
// controls are numbers again. Before, BeamNG held the floored throttle for
// as long as the NaNs lasted, and nothing counted or said it.
func TestNaNControlsAreAFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &floorThenNaN{n: 200}
		log := &logBuffer{}
		held := 0 // BeamNG applying a throttle of 1 while the model wrote NaN
		var h *harness
		h = rig{cfg: load(t, "../examples/cruise-pedals.json"), model: func(p *ports.Plan) models.Model {
			port, elem, _ := p.Find(beamng.ToBeamNG, "throttle")
			m.throttle = ref2{port, elem}
			return m
		}, opts: func(h *harness, o *Options) { h.log, o.Log = log, log.Logger() },
			em: emulator.Config{Steps: 8000, Trace: func(*emulator.StepRecord) {
				if k := m.k.Load(); k > m.n+1 && k < 2*m.n && h.em.Vehicle().Throttle == 1 {
					held++
				}
			}}}.sim(t)
		h.run(t)
		st := h.c.Stats()
		if held > 0 || st.Get(NonFinite) != m.n || st.Get(NeutralReplies) != m.n {
			t.Errorf("BeamNG held the throttle at 1 for %d steps; %d non-finite, %d neutral replies for %d NaN steps", held, st.Get(NonFinite), st.Get(NeutralReplies), m.n)
		}
		if got := h.em.Vehicle().Throttle; got != 0.3 {
			t.Errorf("throttle %v at the end, want the model's 0.3 once its controls are numbers again", got)
		}
		if v := h.s.Values(); v[ModelFaults] != 1 {
			t.Errorf("%d model faults, want 1", v[ModelFaults])
		}
		if !log.Has("the model computed NaN for throttle") || !log.Has("model recovered") {
			t.Errorf("the fault and its end are not said:\n%s", log)
		}
		if f := h.s.Faults(); !containsAll(f, "the model computed NaN or Inf controls for 200 messages", "the model faulted 1 times") {
			t.Errorf("faults %q", f)
		}
	})
}

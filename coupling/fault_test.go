package coupling

import (
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/models"
	"beamconnect/models/exectest"
	"beamconnect/ports"
	"beamconnect/wine"
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
			m, err := models.New("exec", models.Params{
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

// flaky is a model that can be faulted and healed by the test, and keeps
// the status its port 0 showed at each step.
type flaky struct {
	err  error
	seen []Status
}

func (m *flaky) Step(t float64, out, in [][]float64) { m.seen = append(m.seen, Status(out[0][0])) }
func (m *flaky) Fault() error                        { return m.err }

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
	if d.l.Status() != Connected {
		t.Fatalf("status %v before the fault", d.l.Status())
	}
	m.err = errors.New("the model's program stopped answering")
	step()
	if d.l.Status() != Error || d.s.Status() != Error {
		t.Errorf("during the fault: vehicle %v, run %v; want 4 error", d.l.Status(), d.s.Status())
	}
	if !log.Has("is=error") {
		t.Errorf("the status change is not logged:\n%s", log)
	}
	step()
	if got := m.seen[len(m.seen)-1]; got != Error {
		t.Errorf("the model's port 0 shows %v during the fault; want 4 error", got)
	}
	// The live page's problems say what the summary will: 2 neutral replies.
	if p := strings.Join(d.s.Problems(), "\n"); !strings.Contains(p, "2 replies carried neutral controls") {
		t.Errorf("problems while the run goes on: %q", p)
	}
	m.err = nil
	step()
	if d.l.Status() != Connected || d.s.Status() != Connected {
		t.Errorf("after the fault: vehicle %v, run %v; want 3 connected", d.l.Status(), d.s.Status())
	}
}

// endingAnswerer is the link a hung step's message waits on, whose step
// ends just as the watchdog answers: the tightest race there is.
type endingAnswerer struct {
	f        *faultState
	answered []bool // what the step's end said, per answer
}

func (e *endingAnswerer) answerNeutral(float64) { e.answered = append(e.answered, e.f.end()) }

// The watchdog and the end of a step race for the step: when the watchdog
// answers BeamNG for a step that ends at that very moment, the step's end
// must know (its reply is withheld, the model counted as hung once), and
// the next, healthy message must not be taken for hung: a stale "answered"
// would withhold its reply, and BeamNG would stall for 2 s.
func TestWatchdogAndStepEndAgree(t *testing.T) {
	start := time.Unix(1e9, 0)
	f := &faultState{log: slog.New(slog.DiscardHandler), stats: &Stats{}, clock: fixedClock(start),
		watched: true, timeout: time.Millisecond}
	e := &endingAnswerer{f: f}
	w := &waiter{a: e}
	w.await(7)
	w.entered()
	f.begin(w, start)
	f.check(start.Add(2 * time.Millisecond)) // the step ends inside the answer
	if len(e.answered) != 1 || !e.answered[0] {
		t.Fatalf("the watchdog answered; the step's end said answered=%v", e.answered)
	}
	// The next message: a healthy step, ended well within the timeout.
	w.await(8)
	w.entered()
	f.begin(w, start)
	hung := f.step(models.Hold{}, 0, [][]float64{{3}}, [][]float64{{1}})
	if f.end() || hung {
		t.Errorf("a healthy step after the race is taken for hung (faulted %v)", hung)
	}
}

// fixedClock is a clock that always says t.
type fixedClock time.Time

func (c fixedClock) Now() time.Time        { return time.Time(c) }
func (c fixedClock) WaitUntil(t time.Time) {}

// floorAll floors every vehicle's throttle, and its step hangs once, at
// step `at` after connecting, for `hang`.
type floorAll struct {
	throttles []ref2
	n, at     int
	hang      time.Duration
}

func (m *floorAll) Step(t float64, out, in [][]float64) {
	for _, r := range m.throttles {
		in[r.port][r.elem] = 1
	}
	if Status(out[0][0]) != Connected {
		return
	}
	if m.n++; m.n == m.at {
		time.Sleep(m.hang)
	}
}

// With several vehicles, a hung step holds the stage: the other vehicles'
// messages wait for it too. Each of them is answered with neutral controls
// as well (not only the vehicle whose message is in the step), so no
// BeamNG holds the model's last throttle while it hangs. (Over real
// sockets on the real clock: a vehicle waiting on the stage's mutex does
// not let a synctest bubble's time advance.)
func TestHungModelFleetFailsSafe(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets on the real clock, not under -short")
	}
	func(t *testing.T) {
		var ego, lead []float64 // throttles every step
		var h *harness
		h = rig{cfg: load(t, "../examples/follow.json"),
			model: func(p *ports.Plan) models.Model {
				m := &floorAll{at: 200, hang: 400 * time.Millisecond}
				for v := range p.Vehicles {
					port, elem, _ := p.FindFor(beamng.ToBeamNG, "throttle", v)
					m.throttles = append(m.throttles, ref2{port, elem})
				}
				return m
			},
			em: emulator.Config{Steps: 10000, Trace: func(*emulator.StepRecord) {
				ego, lead = append(ego, h.ems[0].Vehicle().Throttle), append(lead, h.ems[1].Vehicle().Throttle)
			}}}.udp(t)
		h.run(t)
		for v, tr := range [][]float64{ego, lead} {
			released := false
			for _, x := range tr[500:] {
				released = released || x == 0
			}
			if !released || tr[len(tr)-1] != 1 {
				t.Errorf("vehicle %d: throttle released during the hang %v, at the end %v: want true, then 1 again", v, released, tr[len(tr)-1])
			}
			if n := h.s.Link(v).Stats().Get(NeutralReplies); n != 1 {
				t.Errorf("vehicle %d: %d neutral replies, want 1", v, n)
			}
		}
		for v, s := range h.sums {
			if s.Stalls != 0 {
				t.Errorf("vehicle %d's BeamNG stalled: %v", v, s)
			}
		}
		if !h.log.Has("answered another vehicle's waiting message") {
			t.Errorf("log:\n%s", h.log)
		}
	}(t)
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

func (m *scripted) Step(t float64, out, in [][]float64) {
	in[m.throttle.port][m.throttle.elem] = m.values[min(m.n, len(m.values)-1)]
	m.clock.now = m.clock.now.Add(m.slow[m.n])
	m.n++
}

// On Gen 2 (no NaN filter: a control the model leaves unset or NaN is sent
// as BeamNG's current value), "BeamNG's current value" is that of the last
// reply that went out: a reply withheld (the step took so long BeamNG had
// moved on) never reached BeamNG, and its throttle must not stand in.
func TestKeepIsWhatBeamNGGot(t *testing.T) {
	m := &scripted{values: []float64{0.7, 0.9, math.NaN()}, slow: map[int]time.Duration{1: 3 * time.Second}}
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

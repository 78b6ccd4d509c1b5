package coupling

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"sync/atomic"
	"time"

	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/quality"
	"beamconnect/recording"
	"beamconnect/timesync"
)

// faultState watches the model. A model fault (an exec program that exited
// or stopped answering, an FMU that failed, crashed or hung, a step that
// panicked, controls computed as NaN or ±Inf) is logged when it begins,
// reported as status 4 (error) by every vehicle, and answered for with
// neutral controls, never the model's last ones; BeamNG keeps getting
// replies, so it does not stall. A fault ends when its cause does (the
// model answers well again), and is logged then too. It is the stage's:
// one model, one fault state, whichever vehicle's message steps it.
//
// Every model bounds its own step (Step waits for a program or a worker up
// to the model timeout, or in real time its deadline), so the loop needs
// no watchdog: a hang is the model's to report, as a fault, while its step
// has returned.
type faultState struct {
	log      *slog.Logger
	stats    *Stats
	clock    timesync.Clock
	faulter  models.Faulter // nil when the model cannot fail on its own
	panicked error          // a panic in Step: the model is not stepped again
	// nonFinite is a control the model's last computed step wrote as NaN
	// or ±Inf (not models.Keep): a fault until a step computes every
	// control finite. bad is where, for its words to be made once.
	nonFinite error
	bad       [2]int
	current   error // the fault in force; nil while healthy
	// why counts the messages answered neutral while current is in force:
	// NonFinite, NotComputed for a step with no answer in time
	// (models.ErrLate), FaultedReplies otherwise.
	why    Counter
	since  time.Time
	record *Recorder   // hears of faults and recoveries (nil: no recording)
	active atomic.Bool // current != nil, for the links' status
}

func (f *faultState) init(m models.Model, stats *Stats, log *slog.Logger, clock timesync.Clock) {
	f.log, f.stats, f.clock = log, stats, clock
	f.faulter, _ = m.(models.Faulter)
}

// step steps the model on a message's data and reports whether it
// computed its controls from them, and whether it is faulted (then BeamNG
// must get neutral controls, whatever it computed). A panic is recovered:
// the model is faulted for good (its state can no longer be trusted), and
// the coupling goes on with neutral controls instead of dying with the
// last controls applied.
//
// The controls of a computed step are checked: one the model wrote as NaN
// or ±Inf (a computation gone wrong; models.Keep is not one) makes the
// step a fault, never "keep the previous value".
func (f *faultState) step(m models.Model, plan *ports.Plan, t float64, outs, ins [][]float64) (computed, faulted bool) {
	if f.panicked == nil {
		computed = f.run(func() bool { return m.Step(t, outs, ins) })
	}
	if computed {
		f.checkControls(plan, ins)
	}
	return computed, f.update()
}

// checkControls sets or clears the non-finite fault from the controls a
// step computed. It allocates only when the fault begins or moves to
// another control.
func (f *faultState) checkControls(plan *ports.Plan, ins [][]float64) {
	for pn, v := range ins {
		for k, x := range v {
			if x-x == 0 || models.IsKeep(x) {
				continue
			}
			if f.nonFinite == nil || f.bad != [2]int{pn, k} {
				f.bad = [2]int{pn, k}
				f.nonFinite = fmt.Errorf("the model computed %v for %s: not a control BeamNG may get (a NaN is a computation gone wrong, not \"keep the value\")", x, controlName(plan, pn, k))
			}
			return
		}
	}
	f.nonFinite = nil
}

// controlName names input port pn's element k.
func controlName(plan *ports.Plan, pn, k int) string {
	if pn < len(plan.Inputs) {
		for _, fd := range plan.Inputs[pn].Fields {
			if k >= fd.Offset && k < fd.Offset+fd.Width {
				if fd.Width > 1 {
					return fmt.Sprintf("%s[%d]", fd.Name, k-fd.Offset)
				}
				return fd.Name
			}
		}
	}
	return fmt.Sprintf("input port %d element %d", pn, k)
}

// idle steps a model that wants to see the status while no data come.
func (f *faultState) idle(m models.Model, t float64, outs, ins [][]float64) {
	if i, ok := m.(models.Idler); ok && f.panicked == nil {
		f.run(func() bool { i.Idle(t, outs, ins); return false })
	}
	f.update()
}

func (f *faultState) run(step func() bool) (computed bool) {
	defer func() {
		if r := recover(); r != nil {
			computed = false
			f.panicked = fmt.Errorf("the model panicked: %v", r)
			f.log.Error("model panicked; it is not stepped again, BeamNG gets neutral controls for the rest of the run",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return step()
}

// update reads the model's fault and logs a change; it reports whether
// the model is faulted.
func (f *faultState) update() bool {
	var err error
	switch {
	case f.panicked != nil:
		err = f.panicked
	case f.faulter != nil:
		err = f.faulter.Fault()
	}
	if err == nil {
		err = f.nonFinite
	}
	if err != f.current {
		f.transition(err)
	}
	return err != nil
}

// transition logs a fault beginning, changing or ending.
func (f *faultState) transition(err error) {
	now := f.clock.Now()
	switch {
	case f.current == nil:
		f.stats.inc(ModelFaults)
		f.since = now
		f.log.Error("model fault: BeamNG gets neutral controls (pedals released, wheel torques 0) until the model recovers",
			"fault", err.Error())
	case err == nil:
		f.log.Info("model recovered: its controls go to BeamNG again", "fault", f.current.Error(), "lasted", now.Sub(f.since).Round(time.Millisecond))
	default:
		f.log.Error("model fault", "fault", err.Error(), "was", f.current.Error())
	}
	f.record.fault(f.current, err, now.Sub(f.since))
	f.current = err
	switch {
	case err != nil && err == f.nonFinite:
		f.why = NonFinite
	case errors.Is(err, models.ErrLate):
		f.why = NotComputed
	default:
		f.why = FaultedReplies
	}
	f.active.Store(err != nil)
}

// modelTiming keeps how long the model's steps took: in lockstep a slow
// step slows BeamNG, so the summary says, as information, how fast the
// model let the simulation run and which steps were the slowest. It is the
// stage's, written under its lock; it allocates nothing.
type modelTiming struct {
	clock    timesync.Clock
	period   float64 // s: the simulation time a message stands for
	vehicles int     // messages per simulation step
	steps    Histogram
	slowest  [3]SlowStep // longest first
}

// SlowStep is one of the model's slowest steps: when, in the model's time,
// and how long it took.
type SlowStep struct {
	T    float64       `json:"t_s"`
	Took time.Duration `json:"-"`
	Ms   float64       `json:"ms"`
}

// observe records a step at model time t that took d.
func (m *modelTiming) observe(t float64, d time.Duration) {
	m.steps.Observe(d)
	if d <= m.slowest[len(m.slowest)-1].Took {
		return
	}
	i := len(m.slowest) - 1
	for i > 0 && m.slowest[i-1].Took < d {
		m.slowest[i] = m.slowest[i-1]
		i--
	}
	m.slowest[i] = SlowStep{T: t, Took: d, Ms: float64(d.Microseconds()) / 1000}
}

// ModelTiming is how long the model's steps took, for the summary.
type ModelTiming struct {
	// Mode is "lockstep" or "real time" (beamng.realTime); Timeout the
	// model timeout, and where it comes from.
	Mode        string
	Timeout     time.Duration
	TimeoutFrom string
	Steps       int64
	P50, P99    time.Duration
	Max         time.Duration
	// OverPeriod counts the steps that took longer than the period: in
	// lockstep each made BeamNG wait.
	OverPeriod int64
	// RealTimeFactor is the simulated time the steps stood for over the
	// time they took: how much faster than real time the model let the
	// simulation run (BeamNG's own work aside); 0 when it took no
	// measurable time.
	RealTimeFactor float64
	Slowest        []SlowStep
}

// ModelTiming reads how long the model's steps took so far.
func (s *Session) ModelTiming() ModelTiming {
	st := s.stage
	st.mu.Lock()
	defer st.mu.Unlock()
	m := &st.timing
	p := st.plan
	t := ModelTiming{Mode: p.Mode(), Timeout: seconds(p.ModelTimeout), TimeoutFrom: p.ModelTimeoutFrom,
		Steps: m.steps.Count(), P50: m.steps.Quantile(0.5), P99: m.steps.Quantile(0.99), Max: m.steps.Max()}
	t.OverPeriod = t.Steps - m.steps.CountAtMost(seconds(m.period))
	if sum := m.steps.Sum(); sum > 0 {
		t.RealTimeFactor = float64(t.Steps) * m.period / float64(max(m.vehicles, 1)) / sum.Seconds()
	}
	for _, s := range m.slowest {
		if s.Took > 0 {
			t.Slowest = append(t.Slowest, s)
		}
	}
	return t
}

// controlLoops are beamng.quality's loops while the run goes on: each one's
// tracker, and each setpoint's value now (a column of the scope and the
// recording, so the setpoint is drawn beside its measured value). They
// are observed under the stage's lock after each whole message, and
// swapped with the plan on a reload, whole; readers take the published set.
type controlLoops struct {
	loops []controlLoop
	set   []float64   // each loop's setpoint now
	group [][]float64 // {set}: a group of the scope's samples
}

type controlLoop struct {
	spec   ports.Loop
	value  float64 // the setpoint of a number or a model parameter
	column string  // the measured value's column: out1.groundspeed
	unit   string
	track  *quality.Tracker
}

// newControlLoops prepares plan's loops: their setpoints' values (a model
// parameter read by param), the measured values' columns and units.
func newControlLoops(plan *ports.Plan, param func(name string) (float64, error)) (*controlLoops, error) {
	c := &controlLoops{}
	if len(plan.Quality) == 0 {
		return c, nil
	}
	columns := elementColumns(plan)
	several := len(plan.Vehicles) > 1
	for _, spec := range plan.Quality {
		l := controlLoop{spec: spec, value: spec.SetValue, column: columns[spec.Measured]}
		if spec.Set == ports.SetParam {
			v, err := param(spec.SetName)
			if err != nil {
				return nil, err
			}
			l.value = v
		}
		if n, ok := recording.ParseName(l.column, several); ok {
			l.unit = n.Unit()
		}
		o := quality.Options{Band: spec.Band, Name: spec.Name, Unit: l.unit}
		if l.unit == "rad" {
			o.Wrap = 2 * math.Pi // an angle: its error the short way round
		}
		l.track = quality.New(o)
		c.loops = append(c.loops, l)
	}
	c.set = make([]float64, len(c.loops))
	for i := range c.set {
		c.set[i] = math.NaN()
	}
	c.group = [][]float64{c.set}
	return c, nil
}

// elementColumns names every output element as a recording's column.
func elementColumns(plan *ports.Plan) map[ports.Element]string {
	out := map[ports.Element]string{}
	for _, c := range recording.LayoutOf(plan, nil).Columns {
		if c.Role == recording.Field && c.Out {
			out[ports.Element{Port: c.Port, Elem: c.Elem, Vehicle: c.Vehicle}] = c.Name
		}
	}
	return out
}

// carry keeps the trackers of loops the reload kept (the same name and
// measured value): a new setpoint is a step they see themselves.
func (c *controlLoops) carry(old *controlLoops) {
	if old == nil {
		return
	}
	for i := range c.loops {
		for j := range old.loops {
			if c.loops[i].spec.Name == old.loops[j].spec.Name && c.loops[i].column == old.loops[j].column {
				c.loops[i].track = old.loops[j].track
				c.set[i] = old.set[j]
			}
		}
	}
}

// observe takes vehicle v's message at time t: each loop measured on v
// compares its measured value with its setpoint. Under the stage's lock;
// it allocates nothing.
func (c *controlLoops) observe(v int, t float64, outs, ins [][]float64) {
	for i := range c.loops {
		l := &c.loops[i]
		if l.spec.Measured.Vehicle != v {
			continue
		}
		set := l.value
		switch l.spec.Set {
		case ports.SetOutput:
			set = l.spec.SetAt.Get(outs)
		case ports.SetInput:
			set = l.spec.SetAt.Get(ins)
		}
		c.set[i] = set
		l.track.Observe(t, l.spec.Measured.Get(outs), set)
	}
}

// reports are the loops' verdicts now; final when the run is over.
func (c *controlLoops) reports(final bool) []quality.Report {
	var out []quality.Report
	for i := range c.loops {
		l := &c.loops[i]
		r := l.track.Report(final)
		r.Signal, r.Setpoint = l.column, l.spec.Setpoint()
		out = append(out, r)
	}
	return out
}

// setpointColumns are the scope's and the recording's columns of plan's
// setpoints, in the loops' order.
func setpointColumns(plan *ports.Plan) []string {
	var out []string
	for _, c := range recording.LayoutOf(plan, nil).Columns {
		if c.Role == recording.Setpoint {
			out = append(out, c.Name)
		}
	}
	return out
}

// setpoints reads the parameters of the config's model under plan p, for
// the setpoints of beamng.quality: through params (Options.Params), or as
// numbers in the config's modelParams.
func setpoints(params models.ParamReader, p *ports.Plan) func(name string) (float64, error) {
	return func(name string) (float64, error) {
		return models.ParamValue(p.Model, params, models.Params(p.ModelParams), p, name)
	}
}

// variables are the model's own values the recording and the scope show
// (models.Sampler): the list the layout was made for, and each message's
// values. Under the stage's lock.
type variables struct {
	sampler models.Sampler // nil: the model has none
	late    models.LateSampler
	list    []models.Variable
	values  []float64 // one per variable, as Sample writes them
	sampled []int     // the variables with columns of their own (recording.Layout.Sampled)
	carried []carried // the sampled variables that are BeamNG's port elements (models.Variable.Carried)
}

// carried is a recorded variable that is a port element as BeamNG's side
// carried it: modelVals[k] is element at of the outputs (out) or of the
// inputs as the reply carried them.
type carried struct {
	k   int
	at  models.Ref
	out bool
}

// useVariables takes the model's variables as they are now, for plan.
// Not on the message path: it allocates.
func (st *stage) useVariables(plan *ports.Plan) {
	v := &st.vars
	if v.sampler == nil {
		return
	}
	v.list = v.sampler.Variables()
	v.values = make([]float64, len(v.list))
	for i := range v.values {
		v.values[i] = math.NaN()
	}
	v.sampled = recording.LayoutOf(plan, v.list).Sampled
	v.carried = nil
	for k, i := range v.sampled {
		if x := v.list[i]; x.Carried {
			v.carried = append(v.carried, carried{k: k, at: x.At, out: x.FromBeamNG})
		}
	}
	st.modelVals = make([]float64, len(v.sampled))
	st.modelGroup = [][]float64{st.modelVals}
}

// sample reads the model's variables after a message's step into
// modelVals. When the model's variables changed, the recording and the
// scope are laid out again first (allocating, once per change). Under the
// stage's lock; otherwise it allocates nothing.
func (st *stage) sample() {
	v := &st.vars
	if v.sampler == nil {
		return
	}
	if list := v.sampler.Variables(); !models.SameVariables(list, v.list) {
		st.useVariables(st.plan)
		if st.onLayout != nil {
			st.onLayout(st.plan, v.list)
		}
	}
	v.sampler.Sample(v.values)
	for k, i := range v.sampled {
		st.modelVals[k] = v.values[i]
	}
}

// carry writes the variables that are BeamNG's port elements into
// modelVals from the message's outputs and the inputs as the reply
// carried them (wire), over what the model sampled. Under the stage's
// lock, after sample.
func (st *stage) carry(wire [][]float64) {
	for _, c := range st.vars.carried {
		from := wire
		if c.out {
			from = st.outs
		}
		st.modelVals[c.k] = c.at.Get(from)
	}
}

// pending says the model has not named its variables yet.
func (v *variables) pending() bool { return v.late != nil && v.late.VariablesPending() }

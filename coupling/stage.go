package coupling

import (
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/relative"
	"beamconnect/timesync"
)

// stage is what every vehicle's link shares: the model, its port vectors,
// the plan they are laid out by, and the lock under which one vehicle's
// message at a time fills its outputs, steps the model and reads its
// controls.
//
// Pairing several vehicles: each vehicle's message steps the model at once,
// with that vehicle's fresh data and every other vehicle's latest (at most
// one period old, since every vehicle sends once a period). No vehicle's
// reply ever waits for another vehicle's message, so the simulation, which
// freezes while any vehicle's controller blocks, never waits on a pairing:
// the only wait is this lock, held for one model step.
type stage struct {
	mu       sync.Mutex
	model    models.Model
	log      *slog.Logger
	plan     *ports.Plan // the plan the port vectors are laid out by (under mu)
	outs     [][]float64 // output port vectors; outs[0][0] is the status
	ins      [][]float64 // input port vectors; ins[0][0] is the directive
	clock    *modelClock // the model's time: the simulation's
	resetter models.Resetter
	ender    models.Ender // nil when the model cannot end the simulation
	reset    bool         // BeamNG started its coupling again: the model starts over at its next step
	fault    faultState
	statuses []*atomic.Int32 // each vehicle's reported status
	fresh    freshness       // whose data are recent enough to step the model on
	// connect is port 0's connection directive (ins[0][0] != 0), published
	// after every step, so a link's loop reads it without the lock.
	connect atomic.Bool

	// Each vehicle's latest position, heading and velocity, for the
	// cross-vehicle properties.
	state []relative.State
	seen  []bool

	// Reloads: a prepared reload waits in reload; the first link to enter
	// the stage after it swaps it in, between two messages. active is the
	// plan replies are built from.
	reload  atomic.Pointer[prepared]
	active  atomic.Pointer[ports.Plan]
	running bool   // a run is in progress (under mu)
	stats   *Stats // the run's counters
	// onLayout, when set, hears of every plan swapped in and every change
	// of the model's variables (the recording's layout, the scope's
	// columns), under the lock.
	onLayout func(*ports.Plan, []models.Variable)
	// vars are the model's own variables; modelVals their values at the
	// latest message (those with columns of their own), modelGroup them as
	// a group of the scope's samples.
	vars       variables
	modelVals  []float64
	modelGroup [][]float64
	// loops are beamng.quality's control loops (under mu), published in
	// shown for readers.
	loops *controlLoops
	shown atomic.Pointer[controlLoops]
	// timing keeps how long the model's steps took (under mu).
	timing modelTiming
}

func newStage(p *ports.Plan, m models.Model, stats *Stats, log *slog.Logger, clock timesync.Clock) *stage {
	st := &stage{model: m, log: log, plan: p, stats: stats,
		state: make([]relative.State, len(p.Vehicles)), seen: make([]bool, len(p.Vehicles))}
	for _, pt := range p.Outputs {
		st.outs = append(st.outs, initial(pt))
	}
	for _, pt := range p.Inputs {
		st.ins = append(st.ins, initial(pt))
	}
	st.active.Store(p)
	st.connect.Store(st.ins[0][0] != 0)
	st.fault.init(m, stats, log, clock)
	st.timing = modelTiming{clock: clock, period: p.Period, vehicles: len(p.Vehicles)}
	st.fresh.init(p, modelReads(m, p))
	st.clock = newModelClock(len(p.Vehicles), p.Period)
	st.resetter, _ = m.(models.Resetter)
	st.ender, _ = m.(models.Ender)
	st.loops = &controlLoops{}
	st.shown.Store(st.loops)
	st.vars.sampler, _ = m.(models.Sampler)
	st.vars.late, _ = m.(models.LateSampler)
	st.useVariables(p)
	return st
}

// initial is a port vector holding its fields' initial values.
func initial(pt ports.Port) []float64 {
	v := make([]float64, pt.Width)
	for _, f := range pt.Fields {
		for k := range f.Width {
			v[f.Offset+k] = f.Initial
		}
	}
	return v
}

// enter takes the stage for one vehicle's step, swapping in a prepared
// reload first if one waits; leave gives it back.
func (st *stage) enter() {
	st.mu.Lock()
	if st.reload.Load() != nil {
		st.swap(st.reload.Swap(nil))
	}
}

func (st *stage) leave() { st.mu.Unlock() }

// directive reads port 0's connection directive, as the last step left it.
func (st *stage) directive() bool { return st.connect.Load() }

// portStatus is port 0's connection status: the one vehicle's, or the run's
// as a whole.
func (st *stage) portStatus() ports.Status {
	s := ports.Status(st.statuses[0].Load())
	for _, v := range st.statuses[1:] {
		s = s.Worse(ports.Status(v.Load()))
	}
	return s
}

// place gives vehicle v's message id its model time, under the lock.
// restart says BeamNG started v's coupling again with it: the model then
// starts over (see modelClock), at its next step.
func (st *stage) place(v int, id float64, restart bool) float64 {
	t, reset := st.clock.place(v, id, restart, st.fresh.reads)
	if reset {
		st.reset = true
	}
	return t
}

// capture keeps vehicle v's state from its message, under the lock, for the
// cross-vehicle properties.
func (st *stage) capture(v int, slots *[len(relative.Quantities)]int, msg []float64) {
	at := func(i int) float64 {
		if i <= 0 || i >= len(msg) {
			return 0
		}
		return msg[i]
	}
	s := &st.state[v]
	s.X, s.Y, s.Z, s.Yaw = at(slots[0]), at(slots[1]), at(slots[2]), at(slots[3])
	s.VX, s.VY, s.Speed = at(slots[4]), at(slots[5]), at(slots[6])
	st.seen[v] = true
}

// relative computes a cross-vehicle field from both vehicles' latest
// states: the other's is at most one period old (it sends once a period).
func (st *stage) relative(f *ports.Field) float64 {
	if !st.seen[f.Vehicle] || !st.seen[f.Other] {
		return f.Invalid
	}
	v, ok := f.Relative.Compute(st.state[f.Vehicle], st.state[f.Other])
	if !ok || v-v != 0 {
		return f.Invalid
	}
	return v
}

// startOver resets the model at time t, BeamNG having started its
// coupling again. Only a reset that happened is counted as one: a model
// that cannot start over keeps its state into the new run, which is
// logged and counted (ModelNotReset), and the run is not healthy; one the
// config tells to keep its state (models.ErrKeepsState) is neither.
func (st *stage) startOver(t float64) {
	if st.resetter == nil {
		st.stats.inc(ModelNotReset)
		st.log.Warn("BeamNG started its coupling again, and the model cannot start over: it keeps its state into the new run (its time starts over)", "model_time", t)
		return
	}
	switch err := st.resetter.Reset(); {
	case errors.Is(err, models.ErrKeepsState):
		st.log.Info("BeamNG started its coupling again: the model keeps its state, as the config says (its time starts over)", "model_time", t, "why", err)
		return
	case err != nil:
		st.stats.inc(ModelNotReset)
		st.log.Warn("BeamNG started its coupling again, and the model could not start over: it keeps its state into the new run (its time starts over)", "model_time", t, "err", err)
		return
	}
	st.stats.inc(ModelResets)
	st.log.Info("BeamNG started its coupling again: the model starts over from its initial state", "model_time", t)
}

// neutral says why a reply carries neutral controls rather than the
// model's: the counter that counts it (NeutralReplies itself for none in
// particular).
type neutral = Counter

// step steps the model at its time t on vehicle v's message (id), under
// the lock. It reports what the reply must carry: the model's controls
// (ok), or neutral ones and why: the model reads another vehicle whose
// data are stale (StaleData) or have not come yet (Waiting), the model
// computed none for these data in time (NotComputed, also while it is
// faulted for a step with no answer in time), it computed controls that
// are not finite (NonFinite), it is faulted otherwise (FaultedReplies), or
// it ended the simulation (ModelEnded).
func (st *stage) step(v int, id, t float64) (why neutral, ok bool) {
	st.outs[0][0] = float64(st.portStatus())
	if why, ok := st.fresh.check(v, id); !ok {
		st.fault.update()
		return why, false
	}
	if st.reset {
		st.reset = false
		st.startOver(t)
	}
	if st.ender != nil && st.ender.Ended() != nil {
		st.fault.update()
		return ModelEnded, false
	}
	began := st.timing.clock.Now()
	computed, faulted := st.fault.step(st.model, st.plan, t, st.outs, st.ins)
	st.timing.observe(t, st.timing.clock.Now().Sub(began))
	if !computed && !faulted && st.ender != nil && st.ender.Ended() != nil {
		return ModelEnded, false // it ended at this step
	}
	st.connect.Store(st.ins[0][0] != 0)
	switch {
	case faulted:
		return st.fault.why, false
	case !computed:
		return NotComputed, false
	}
	return 0, true
}

// idle steps a model that wants to see the status while no data come, at
// its time (which stands still: no simulation step), under the lock.
func (st *stage) idle() {
	st.outs[0][0] = float64(st.portStatus())
	st.fault.idle(st.model, st.clock.now(), st.outs, st.ins)
	st.connect.Store(st.ins[0][0] != 0)
}

// staleAfter is how much simulation time a vehicle may go on without
// another vehicle's data before that vehicle's data are stale for it (at
// least 10 periods): as long as a silent BeamNG port may take before a new
// one is BeamNG's.
const staleAfter = 0.1

// freshness keeps, for each pair of vehicles, how far one has gone on in
// its simulation time since the other's last whole message. The model is
// stepped on a vehicle's message only while every other vehicle it reads
// has sent within staleAfter of that vehicle's time: a model is never
// stepped on the data of a vehicle whose BeamNG went silent (its last
// values would be taken for now). Simulation time, not the wall clock: a
// pause of BeamNG pauses every vehicle, and makes nobody's data stale.
type freshness struct {
	reads []bool      // the vehicles the model reads
	seen  []bool      // the vehicle has sent a whole message
	last  []float64   // each vehicle's latest whole message id
	mark  [][]float64 // mark[a][b]: a's latest id when b's latest whole message came
	limit float64     // in message ids
}

func (f *freshness) init(p *ports.Plan, reads []bool) {
	n := len(p.Vehicles)
	f.reads, f.seen, f.last = reads, make([]bool, n), make([]float64, n)
	f.mark = make([][]float64, n)
	for a := range n {
		f.last[a] = math.NaN()
		f.mark[a] = make([]float64, n)
		for b := range n {
			f.mark[a][b] = math.NaN()
		}
	}
	f.limit = max(10, staleAfter/p.Period)
}

// check notes vehicle v's whole message id and reports whether the data
// of every other vehicle the model reads are fresh for it; otherwise why
// not: Waiting (one has not sent yet) or StaleData (one stopped sending).
func (f *freshness) check(v int, id float64) (Counter, bool) {
	f.last[v], f.seen[v] = id, true
	for a := range f.mark {
		f.mark[a][v] = f.last[a] // NaN for a vehicle yet to send
	}
	for b, reads := range f.reads {
		if b == v || !reads {
			continue
		}
		if !f.seen[b] {
			return Waiting, false
		}
		m := f.mark[v][b]
		if m != m || id < m {
			// v's first message since b's, or v's ids started again (its
			// controller restarted): count from here.
			m = id
			f.mark[v][b] = id
		}
		if id-m > f.limit {
			return StaleData, false
		}
	}
	return 0, true
}

// modelReads are the vehicles whose data model m reads in plan p: what it
// says, if it is a models.Reader, otherwise every vehicle the plan maps
// data of.
func modelReads(m models.Model, p *ports.Plan) []bool {
	reads := make([]bool, len(p.Vehicles))
	if r, ok := m.(models.Reader); ok {
		for v := range reads {
			reads[v] = r.Reads(v)
		}
		return reads
	}
	for _, pt := range p.Outputs[1:] {
		for i := range pt.Fields {
			f := &pt.Fields[i]
			reads[f.Vehicle] = true
			if f.Source == ports.Relative {
				reads[f.Other] = true
			}
		}
	}
	return reads
}

// modelClock is the model's time: the simulation's, what BeamNG simulated,
// never the wall clock, whatever the time sync. BeamNG's message k of a
// vehicle was generated at k × the send period; the model's time is the
// first message's time plus one period per simulation step since. A pause
// of BeamNG is a pause of the model's time; a message lost, or skipped
// after a pause of beamconnect, moves it on by the steps BeamNG simulated
// meanwhile.
//
// With several vehicles every vehicle sends once per simulation step, each
// with ids of its own (counted from its controller's load). A vehicle's
// first message joins the model's current step; from there on each of its
// messages is one step further, so the model's time advances once per
// simulation step, at whichever vehicle's message comes first in it, and a
// message of another vehicle in the same step gets the same time (the model
// computed its controls in that step). The model's time follows the vehicle
// furthest on: one whose BeamNG went silent does not hold it back, and
// joins the current step again when it comes back.
//
// BeamNG starting a vehicle's coupling again (ids from 0, from a new port)
// starts the model over at that message's time, when the model reads the
// vehicle, or reads no vehicle at all (a model of time alone, such as an
// FMU with outputs only: the simulation's time is all it takes from
// BeamNG); its other vehicles join the new start. Couplings started again
// within staleAfter of each other (BeamNG restarting the scenario restarts
// every vehicle's) start the model over once.
type modelClock struct {
	period  float64
	started bool
	t0      float64   // the model's time at its step 0
	n       float64   // the model's step: its time is t0 + n × period
	base    []float64 // per vehicle: the id of its message at step 0 (NaN: it joins at its next)
	reset   bool      // the model started over, and has not gone staleAfter on since
	resets  int64
	// shift is what the recording's time axis adds to the model's time:
	// where BeamNG started its coupling again, the axis goes on one
	// period after the last step instead of running back.
	shift float64
}

func newModelClock(vehicles int, period float64) *modelClock {
	c := &modelClock{period: period, base: make([]float64, vehicles)}
	c.forget()
	return c
}

// forget lets every vehicle join at its next message.
func (c *modelClock) forget() {
	for i := range c.base {
		c.base[i] = math.NaN()
	}
}

// place takes vehicle v's message id and returns the model's time for it.
// restart says BeamNG started v's coupling again with this message, reads
// which vehicles' data the model reads; reset whether the model must start
// over first.
func (c *modelClock) place(v int, id float64, restart bool, reads []bool) (t float64, reset bool) {
	switch {
	case !c.started:
		c.started, c.t0, c.n = true, id*c.period, 0
		c.forget()
		c.base[v] = id
		return c.t0, false
	case restart && startsOver(reads, v) && !(c.reset && c.n*c.period < staleAfter):
		c.shift += c.now() + c.period - id*c.period
		c.t0, c.n, c.reset = id*c.period, 0, true
		c.resets++
		c.forget()
		c.base[v] = id
		return c.t0, true
	case restart || c.base[v] != c.base[v] || id-c.base[v] < c.n-1:
		// A new vehicle, a coupling started again, or one that fell behind
		// (it was silent while another went on): it joins the current step.
		c.base[v] = id - c.n
	}
	if k := id - c.base[v]; k > c.n {
		c.n = k
	}
	if c.n*c.period >= staleAfter {
		c.reset = false
	}
	return c.now(), false
}

// axis is the recording's time of model time t: BeamNG's simulation time,
// which goes on (never back) where BeamNG started its coupling again.
func (c *modelClock) axis(t float64) float64 { return t + c.shift }

// now is the model's time: of its latest step, 0 before the first message.
func (c *modelClock) now() float64 {
	if !c.started {
		return 0
	}
	return c.t0 + c.n*c.period
}

// startsOver reports whether BeamNG starting vehicle v's coupling again
// starts the model over: it reads v's data, or no vehicle's (its time, the
// simulation's, is then all it takes from BeamNG, and that starts over).
func startsOver(reads []bool, v int) bool {
	return v < len(reads) && reads[v] || !slices.Contains(reads, true)
}

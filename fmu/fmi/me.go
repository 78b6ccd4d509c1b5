package fmi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/ebitengine/purego"

	"beamconnect/fmu"
	"beamconnect/fmu/ode"
)

// meFuncs are a Model Exchange FMU's functions, looked up once: they are
// called many times a step.
type meFuncs struct {
	enterEvent, newDiscrete2, enterCT, completed2   uintptr
	setStates, getDerivs, getZ, getStates, nominals uintptr
}

func (in *Instance) meFuncs() (*meFuncs, error) {
	l := in.lib
	f := &meFuncs{}
	var errs []error
	sym := func(to *uintptr, name string) {
		p, err := l.sym(name)
		*to = p
		errs = append(errs, err)
	}
	p := "fmi2"
	if l.Major == 3 {
		p = "fmi3"
	}
	sym(&f.enterEvent, p+"EnterEventMode")
	sym(&f.enterCT, p+"EnterContinuousTimeMode")
	sym(&f.setStates, p+"SetContinuousStates")
	sym(&f.getZ, p+"GetEventIndicators")
	sym(&f.getStates, p+"GetContinuousStates")
	sym(&f.nominals, p+"GetNominalsOfContinuousStates")
	if l.Major == 2 {
		sym(&f.newDiscrete2, "fmi2NewDiscreteStates")
		sym(&f.completed2, "fmi2CompletedIntegratorStep")
		sym(&f.getDerivs, "fmi2GetDerivatives")
		errs = append(errs, l.register(&l.setTime2, func() bool { return l.setTime2 != nil }, "fmi2SetTime"))
	} else {
		sym(&f.getDerivs, "fmi3GetContinuousStateDerivatives")
		errs = append(errs, l.register(&l.setTime3, func() bool { return l.setTime3 != nil }, "fmi3SetTime"),
			l.register(&l.update3, func() bool { return l.update3 != nil }, "fmi3UpdateDiscreteStates"),
			l.register(&l.done3, func() bool { return l.done3 != nil }, "fmi3CompletedIntegratorStep"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// counts asks an FMI 3.0 FMU for its numbers of continuous states and
// event indicators (after initialization: structural parameters may set
// them).
func (in *Instance) counts() (nx, nz int, err error) {
	for i, name := range []string{"GetNumberOfContinuousStates", "GetNumberOfEventIndicators"} {
		in.out.n = 0
		if err := in.callNamed(name, uintptr(unsafe.Pointer(&in.out.n))); err != nil {
			return 0, 0, err
		}
		if in.out.n > 1<<20 {
			return 0, 0, fmt.Errorf("fmi3%s says %d", name, in.out.n)
		}
		if i == 0 {
			nx = int(in.out.n)
		} else {
			nz = int(in.out.n)
		}
	}
	return nx, nz, nil
}

// discrete is what an event update says (FMI 2.0's fmi2EventInfo, FMI 3.0's
// fmi3UpdateDiscreteStates' results).
type discrete struct {
	again, terminate, nominalsChanged, valuesChanged, nextDefined bool
	next                                                          float64
}

func (in *Instance) updateDiscrete(f *meFuncs) (discrete, error) {
	if in.lib.Major == 2 {
		e := &in.out.info2
		*e = eventInfo2{}
		r, _, _ := purego.SyscallN(f.newDiscrete2, in.c, uintptr(unsafe.Pointer(e)))
		d := discrete{e.newDiscreteStatesNeeded != 0, e.terminateSimulation != 0, e.nominalsChanged != 0,
			e.valuesChanged != 0, e.nextEventTimeDefined != 0, e.nextEventTime}
		return d, in.status("NewDiscreteStates", Status(int32(r)), 0)
	}
	var d discrete
	s := in.lib.update3(in.c, &d.again, &d.terminate, &d.nominalsChanged, &d.valuesChanged, &d.nextDefined, &d.next)
	return d, in.status("UpdateDiscreteStates", Status(s), 0)
}

func (in *Instance) completed(f *meFuncs) (event, terminate bool, err error) {
	if in.lib.Major == 2 {
		e := &in.out.info2 // its first two ints serve
		e.newDiscreteStatesNeeded, e.terminateSimulation = 0, 0
		r, _, _ := purego.SyscallN(f.completed2, in.c, 1, uintptr(unsafe.Pointer(&e.newDiscreteStatesNeeded)), uintptr(unsafe.Pointer(&e.terminateSimulation)))
		return e.newDiscreteStatesNeeded != 0, e.terminateSimulation != 0, in.status("CompletedIntegratorStep", Status(int32(r)), 0)
	}
	r := &in.out
	r.event, r.terminate = false, false
	s := in.lib.done3(in.c, true, &r.event, &r.terminate)
	return r.event, r.terminate, in.status("CompletedIntegratorStep", Status(s), 0)
}

func (in *Instance) setTime(t float64) error {
	var s int32
	if in.lib.Major == 2 {
		s = in.lib.setTime2(in.c, t)
	} else {
		s = in.lib.setTime3(in.c, t)
	}
	return in.status("SetTime", Status(s), t)
}

func (in *Instance) vec(name string, fn uintptr, v []float64) error {
	r, _, _ := purego.SyscallN(fn, in.c, ptr(v), uintptr(len(v)))
	return in.status(name, Status(int32(r)), 0)
}

// MissedEvent is a state event a fixed-step solver stepped over: an event
// indicator changed its sign inside a step and back by its end, so the
// trajectory from there on would be wrong.
type MissedEvent struct {
	Indicator int
	From, To  float64 // the step
	Method    ode.Method
}

func (e *MissedEvent) Error() string {
	return fmt.Sprintf("a state event was stepped over: event indicator %d changed its sign inside the step from t = %g s to %g s and back by its end; the %v solver's step of %g ms is too coarse for this FMU: set modelParams.maxStep smaller, or the solver to dopri5, which shortens its step there",
		e.Indicator, e.From, e.To, e.Method, (e.To-e.From)*1000)
}

// maxEvents bounds the state events of one message's period: more are a
// model whose events pile up (a ball that never comes to rest bounces
// infinitely often before a finite time), which no integrator passes.
const maxEvents = 1000

// EventFlood is a model whose state events pile up: more than maxEvents
// in one period.
type EventFlood struct {
	Events   int
	From, To float64
}

func (e *EventFlood) Error() string {
	return fmt.Sprintf("the FMU's state events pile up: %d between t = %.9g s and %.9g s, ever closer (a model that switches infinitely often in a finite time, such as a bouncing ball that never comes to rest): no integrator can pass that point; the model needs a rest condition", e.Events, e.From, e.To)
}

// Unstable is a fixed-step solver's step the FMU's fastest dynamics make
// unstable (ode.Unstable), with the way out.
type Unstable struct {
	ode.Unstable
	Period float64 // the coupling's: how many steps a message the stable step takes
}

// maxStiff is the most steps a message the way out of an unstable step
// may take: past it the model is too stiff for an explicit solver in real
// time, whichever.
const maxStiff = 1000

func (e *Unstable) Error() string {
	msg := e.Unstable.Error()
	n := math.Ceil(e.Period/e.Stable - 1e-9)
	step := strconv.FormatFloat(roundDown(e.Stable), 'g', -1, 64)
	if n <= maxStiff {
		return fmt.Sprintf("%s: set modelParams.maxStep to %s or less (%.0f steps a message), or the solver to dopri5, which adapts its step to the model", msg, step, n)
	}
	return fmt.Sprintf("%s: an explicit solver would need %.3g steps a message (modelParams.maxStep %s), and dopri5 as many: the model is too stiff for beamconnect's solvers at this period; export the FMU as co-simulation, with its own (implicit) solver", msg, n, step)
}

// roundDown is x rounded down to 2 significant digits.
func roundDown(x float64) float64 {
	if !(x > 0) {
		return x
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-1)
	return math.Floor(x/p*(1+1e-12)) * p
}

// BadState is a state or a state derivative of a Model Exchange FMU that
// is NaN or infinite: nothing can be integrated from it, whatever the
// outputs (a model's fmin(x, 0.8) is 0.8 for a NaN x).
type BadState struct {
	Derivative bool   // a derivative; else a state
	Name       string // the variable, as the model description names it
	State      string // a derivative's state
	Value      float64
	X          float64 // a derivative's state's value
	T          float64
	Event      bool // a state the FMU set at its event at T
	Shrunk     bool // dopri5 met it at every step however short
}

func (e *BadState) Error() string {
	switch {
	case e.Derivative && e.Shrunk:
		return fmt.Sprintf("the FMU's derivative %s is %v at t = %g s (its state %s = %v), at every step of the dopri5 solver however short: the model cannot be integrated past it", e.Name, e.Value, e.T, e.State, e.X)
	case e.Derivative:
		return fmt.Sprintf("the FMU's derivative %s is %v at t = %g s (its state %s = %v): the model cannot be integrated past it", e.Name, e.Value, e.T, e.State, e.X)
	case e.Event:
		return fmt.Sprintf("the FMU's state %s is %v after its event at t = %g s: the model cannot be integrated from it", e.Name, e.Value, e.T)
	}
	return fmt.Sprintf("the FMU's state %s became %v in the solver's step to t = %g s: the model cannot be integrated past it", e.Name, e.Value, e.T)
}

// Unfit reports whether err says the FMU cannot run faithfully as
// configured (a state event stepped over, events piling up, an unstable
// step): starting it again would meet the same.
func Unfit(err error) bool {
	return errors.As(err, new(*MissedEvent)) || errors.As(err, new(*EventFlood)) || errors.As(err, new(*Unstable))
}

// SolverStats count a Model Exchange FMU's integration.
type SolverStats struct {
	ode.Stats
	Events int64 // events handled: state, time and step events
}

// me integrates a Model Exchange FMU: it is the FMU's solver and event
// handler, as FMI asks of a master.
type me struct {
	in          *Instance
	f           *meFuncs
	sol         *ode.Solver
	names       []fmu.Derivative // the derivatives' and states' names, when the description has one per state
	period      float64
	nx, nz      int
	x, z        []float64 // the states; the event indicators at the current point
	zEnd, xMid  []float64
	xEnd        []float64 // a step's end, while its inside is looked at
	needStep    bool      // the FMU asked for fmiXCompletedIntegratorStep
	inEvent     bool      // in event mode
	tSet        float64   // the time last set (when timeSet)
	lastState   float64   // the time of the last state event (NaN: none yet)
	timeSet     bool
	nextDefined bool
	next        float64 // the next time event
	events      int64
}

// newME prepares the integration of an instance made for model exchange
// (before initialization; nx and nz are the model description's counts,
// asked of an FMI 3.0 FMU after initialization).
func newME(in *Instance, s *Setup) (*me, error) {
	f, err := in.meFuncs()
	if err != nil {
		return nil, err
	}
	m, err := ode.ParseMethod(s.Solver)
	if s.Solver == "" {
		m, err = ode.DOPRI5, nil
	}
	if err != nil {
		return nil, err
	}
	e := &me{in: in, f: f, needStep: s.CompletedIntegratorStep, lastState: math.NaN(), names: s.Derivatives, period: s.Period}
	if s.Grid > 0 {
		e.period = s.Grid
	}
	e.size(s.States, s.EventIndicators, m)
	e.sol.RelTol, e.sol.AbsTol = s.Tolerance, s.Tolerance
	if e.sol.RelTol <= 0 {
		e.sol.RelTol, e.sol.AbsTol = 1e-6, 1e-6
	}
	e.sol.MaxStep = s.MaxStep
	if e.sol.MaxStep <= 0 && !m.Adaptive() {
		e.sol.MaxStep = s.Period // a fixed step: one per period by default
	}
	return e, nil
}

func (e *me) size(nx, nz int, m ode.Method) {
	e.nx, e.nz = nx, nz
	old := e.sol
	e.sol = ode.New(m, nx)
	if old != nil {
		e.sol.RelTol, e.sol.AbsTol, e.sol.MaxStep, e.sol.Stats = old.RelTol, old.AbsTol, old.MaxStep, old.Stats
	}
	e.x, e.xMid, e.xEnd = make([]float64, nx), make([]float64, nx), make([]float64, nx)
	e.z, e.zEnd = make([]float64, nz), make([]float64, nz)
	e.sol.Scale = make([]float64, nx)
}

// Derivatives is the FMU's right-hand side: a discarded evaluation (a
// model outside its domain) asks the solver for a smaller step.
func (e *me) Derivatives(t float64, x, dx []float64) error {
	if err := e.at(t, x); err != nil {
		return err
	}
	err := e.in.vec("GetDerivatives", e.f.getDerivs, dx)
	var ce *CallError
	if errors.As(err, &ce) && ce.Status == Discard {
		return errors.Join(ode.ErrRetry, err)
	}
	return err
}

// at sets the FMU's time and states.
func (e *me) at(t float64, x []float64) error {
	// The time only when it changed: fmiXSetTime takes a float, which
	// purego passes through its reflective call, which allocates.
	if !e.timeSet || t != e.tSet {
		if err := e.in.setTime(t); err != nil {
			return err
		}
		e.tSet, e.timeSet = t, true
	}
	if e.nx == 0 {
		return nil
	}
	return e.in.vec("SetContinuousStates", e.f.setStates, x)
}

// initialized finishes initialization: the event iteration at the start,
// then continuous-time mode, the states and their nominals.
func (e *me) initialized(major int, t float64) error {
	e.timeSet = false // fmiXEnterInitializationMode set it
	e.lastState, e.sol.Cap = math.NaN(), 0
	if major == 3 {
		nx, nz, err := e.in.counts()
		if err != nil {
			return err
		}
		if nx != e.nx || nz != e.nz {
			e.size(nx, nz, e.sol.Method)
		}
	}
	return e.settle(t, false)
}

// enterEvent enters event mode.
func (e *me) enterEvent() error {
	e.inEvent = true
	return e.in.call("EnterEventMode", e.f.enterEvent, e.in.c)
}

// settle runs an event iteration in event mode until the discrete states
// settle, then returns to continuous-time mode with the states and event
// indicators read again. enter says whether to enter event mode first.
func (e *me) settle(t float64, enter bool) error {
	in, f := e.in, e.f
	if enter {
		if err := e.enterEvent(); err != nil {
			return err
		}
	}
	var d discrete
	for n := 0; ; n++ {
		var err error
		if d, err = in.updateDiscrete(f); err != nil {
			return err
		}
		if d.terminate {
			return &Terminated{Time: t}
		}
		if !d.again {
			break
		}
		if n == 100 {
			return fmt.Errorf("the FMU's discrete states did not settle after 100 event iterations at t = %g s", t)
		}
	}
	e.nextDefined, e.next = d.nextDefined, d.next
	if err := in.call("EnterContinuousTimeMode", f.enterCT, in.c); err != nil {
		return err
	}
	e.inEvent = false
	if e.nx > 0 {
		if err := in.vec("GetContinuousStates", f.getStates, e.x); err != nil {
			return err
		}
		for i, v := range e.x {
			if v-v != 0 {
				name, _ := e.name(i)
				return &BadState{Name: name, Value: v, T: t, Event: true}
			}
		}
		if err := in.vec("GetNominalsOfContinuousStates", f.nominals, e.sol.Scale); err != nil {
			return err
		}
	}
	e.sol.Invalidate()
	return e.indicators(t, e.x, e.z)
}

// indicators reads the event indicators at (t, x) into z.
func (e *me) indicators(t float64, x, z []float64) error {
	if e.nz == 0 {
		return nil
	}
	if err := e.at(t, x); err != nil {
		return err
	}
	return e.in.vec("GetEventIndicators", e.f.getZ, z)
}

// changed says whether the inputs changed the model: the solver starts
// its next step from a fresh derivative.
func (e *me) changed() { e.sol.Invalidate() }

// event handles an event at t, in event mode already (discrete inputs
// set) or not (an event found).
func (e *me) event(t float64) error {
	e.events++
	return e.settle(t, !e.inEvent)
}

// domain is the side of zero an event indicator is on: FMI triggers an
// event when z goes from > 0 to ≤ 0 or back.
func domain(z float64) bool { return z > 0 }

// name is state i's name and its derivative's, as the model description
// has them ("state 2", "its derivative" where it does not).
func (e *me) name(i int) (state, derivative string) {
	state, derivative = fmt.Sprintf("%d (of %d)", i+1, e.nx), fmt.Sprintf("of state %d (of %d)", i+1, e.nx)
	if len(e.names) == e.nx && i < len(e.names) {
		if n := e.names[i].State; n != "" {
			state = n
		}
		if n := e.names[i].Name; n != "" {
			derivative = n
		} else if e.names[i].State != "" {
			derivative = "der(" + state + ")"
		}
	}
	return state, derivative
}

// explain says a solver's fault in the FMU's words: a state or derivative
// that is not a number by its name, an unstable step with the way out.
func (e *me) explain(err error) error {
	if err == nil {
		return nil
	}
	var nf *ode.NonFinite
	var u *ode.Unstable
	switch {
	case errors.As(err, &nf):
		state, der := e.name(nf.Index)
		if !nf.Derivative {
			return &BadState{Name: state, Value: nf.Value, T: nf.T}
		}
		return &BadState{Derivative: true, Name: der, State: state, Value: nf.Value, X: nf.X, T: nf.T, Shrunk: nf.Shrunk}
	case errors.As(err, &u):
		return &Unstable{Unstable: *u, Period: e.period}
	}
	return err
}

// advance integrates from t0 to t1 with the inputs set, handling every
// time, state and step event on the way.
func (e *me) advance(t0, t1 float64) error { return e.explain(e.integrate(t0, t1)) }

func (e *me) integrate(t0, t1 float64) error {
	t := t0
	flood := 0
	for t < t1 {
		tEnd := t1
		// A time event at the communication point, or within rounding of
		// it (an FMU that sums its event times), is handled there, as
		// fmusim does.
		timeEvent := e.nextDefined && e.next > t && e.next <= t1+1e-12*math.Max(1, math.Abs(t1))
		if timeEvent {
			tEnd = math.Min(e.next, t1)
		}
		tNew := tEnd
		if e.nx > 0 {
			var err error
			if tNew, err = e.sol.Step(e, t, e.x, tEnd); err != nil {
				return err
			}
		}
		// The solver may stop short of the time event (its largest step):
		// the event is due at the step that reaches it, not before.
		timeEvent = timeEvent && tNew >= tEnd
		if err := e.indicators(tNew, e.x, e.zEnd); err != nil {
			return err
		}
		// A state event: the earliest indicator to change its domain, or
		// one that changed it and back inside the step (seen at its
		// middle).
		crossed := -1
		for i := range e.zEnd {
			if domain(e.zEnd[i]) != domain(e.z[i]) {
				crossed = i
				break
			}
		}
		if crossed < 0 && e.nz > 0 && e.nx > 0 {
			inside, err := e.inside(t, tNew)
			if err != nil {
				return err
			}
			if inside >= 0 {
				if !e.sol.Method.Adaptive() {
					return &MissedEvent{Indicator: inside, From: t, To: tNew, Method: e.sol.Method}
				}
				t = e.sol.Retry(e.x, 0.25) // a shorter step finds both crossings
				if err := e.indicators(t, e.x, e.z); err != nil {
					return err
				}
				continue
			}
			if err := e.indicators(tNew, e.x, e.zEnd); err != nil {
				return err
			}
		}
		stateEvent := crossed >= 0
		if stateEvent {
			var err error
			if tNew, err = e.locate(t, tNew); err != nil {
				return err
			}
			timeEvent = timeEvent && tNew >= tEnd
			// State events coming closer (a ball's bounces): the step
			// after this one is no longer than the time since the last,
			// so that its probes see the next, however short (while it
			// shrinks by a factor, not ninefold, at a time).
			if !math.IsNaN(e.lastState) && tNew > e.lastState {
				e.sol.Cap = tNew - e.lastState
			}
			e.lastState = tNew
			if flood++; flood > maxEvents {
				return &EventFlood{Events: flood, From: t0, To: tNew}
			}
		}
		if err := e.at(tNew, e.x); err != nil {
			return err
		}
		stepEvent := false
		if e.needStep {
			var terminate bool
			var err error
			if stepEvent, terminate, err = e.in.completed(e.f); err != nil {
				return err
			}
			if terminate {
				return &Terminated{Time: tNew}
			}
		}
		t = tNew
		if stateEvent || timeEvent || stepEvent {
			if err := e.event(t); err != nil {
				return err
			}
			continue
		}
		e.z, e.zEnd = e.zEnd, e.z
	}
	return nil
}

// probes is how many points inside a step the event indicators are
// looked at, on the solver's interpolant, when they end it on the side
// they began it: an indicator that changed its domain and back inside the
// step is an event stepped over. A bounce shorter than a ninth of the step
// can go unseen this way, but a ball's bounces shrink by a factor, not
// ninefold, so the first that is too short for the step is seen.
const probes = 8

// inside looks at the event indicators at probes points inside the last
// step [t0, t1]: the first that is on the other side of zero from where
// it began, or -1.
func (e *me) inside(t0, t1 float64) (int, error) {
	end := e.xEnd
	copy(end, e.x)
	for k := 1; k <= probes; k++ {
		tq := t0 + (t1-t0)*float64(k)/(probes+1)
		if err := e.sol.Dense(e, tq, end, e.xMid); err != nil {
			return -1, err
		}
		if err := e.indicators(tq, e.xMid, e.zEnd); err != nil {
			return -1, err
		}
		for i := range e.zEnd {
			if domain(e.zEnd[i]) != domain(e.z[i]) {
				return i, nil
			}
		}
	}
	return -1, nil
}

// locate finds the time of the earliest change of domain of an event
// indicator within the last step [t0, t1], by bisection on the solver's
// interpolant, to a tolerance of a picosecond (relative for large times);
// it leaves the states just past it, where the indicator has changed.
func (e *me) locate(t0, t1 float64) (float64, error) {
	end := e.xEnd // the step's end: Dense interpolates towards it
	copy(end, e.x)
	lo, hi := t0, t1
	tol := 1e-12 * math.Max(1, math.Abs(t1))
	for n := 0; hi-lo > tol && n < 200; n++ {
		mid := lo + (hi-lo)/2
		if err := e.sol.Dense(e, mid, end, e.xMid); err != nil {
			return 0, err
		}
		if err := e.indicators(mid, e.xMid, e.zEnd); err != nil {
			return 0, err
		}
		switched := false
		for i := range e.zEnd {
			if domain(e.zEnd[i]) != domain(e.z[i]) {
				switched = true
				break
			}
		}
		if switched {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi < t1 {
		if err := e.sol.Dense(e, hi, end, e.x); err != nil {
			return 0, err
		}
	}
	return hi, nil
}

func (e *me) stats() SolverStats {
	return SolverStats{Stats: e.sol.Stats, Events: e.events}
}

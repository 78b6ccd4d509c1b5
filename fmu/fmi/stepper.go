package fmi

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"beamconnect/fmu"
)

// Setup is what a Stepper needs to run an FMU: where it is, what to
// exchange each step, the parameters and the step.
type Setup struct {
	Library   string // the binary for this machine
	Major     int    // FMI version
	Token     string // guid / instantiationToken
	Resources string // the unpacked resources folder
	Name      string // the instance's name, for its log
	// ModelExchange: the FMU is instantiated for model exchange and
	// integrated here; otherwise it is a co-simulation FMU that steps
	// itself.
	ModelExchange bool
	Inputs        []Var // set before every step, from the values Step is given
	Outputs       []Var // read after every step
	// Observed are read after every step too, after the outputs in the
	// same values (Values counts both), only to be recorded: locals,
	// parameters, outputs of no use as controls. A NaN there is no fault.
	Observed []Var
	Params   []Var // set after instantiation; their values are ParamValues
	// ParamValues are the parameters' values, in Params order (one per
	// element).
	ParamValues []float64
	Texts       []Text  // String and Binary parameters, set after instantiation
	Period      float64 // h: each Step advances the FMU by it, seconds
	// Grid is the coupling's period (0: Period): every time Step is given
	// is a whole number of it (BeamNG's message id times its send
	// period), Period is a whole number of it, and every time the FMU is
	// given is computed as such a number times Grid, never summed: summed
	// periods drift below a whole second (300 × 10 ms add up to
	// 2.99999999999998), which would put a time event due at 3 s one
	// message late.
	Grid float64
	// VariableStep is the FMU's canHandleVariableCommunicationStepSize: a
	// gap in the coupling's time is crossed in one step of the gap's size
	// instead of whole periods.
	VariableStep bool
	// Redo: a co-simulation FMU that can save and restore its state and
	// take any step size: a step it discards (without asking to stop) is
	// redone in halves, as the standard suggests.
	Redo bool

	// Model exchange: the solver (ode.ParseMethod's names; "" dopri5),
	// its relative (and absolute, times each state's nominal) tolerance (0:
	// 1e-6) and largest step (0: none for dopri5, Period for the others),
	// the numbers of states and event indicators (FMI 2.0: the model
	// description's; FMI 3.0 asks the FMU), and whether the FMU needs
	// fmiXCompletedIntegratorStep.
	Solver                  string
	Tolerance               float64
	MaxStep                 float64
	States, EventIndicators int
	CompletedIntegratorStep bool
	// Derivatives name the states and their derivatives, for the messages
	// of a state gone NaN (the model description's, in its order).
	Derivatives []fmu.Derivative
}

// Values is how many values a step reads: every output's and observed
// variable's element.
func (s *Setup) Values() int { return Count(s.Outputs) + Count(s.Observed) }

// maxCatchUp bounds the extra whole periods a fixed-step FMU is stepped at
// one message to catch up with the coupling's time, so a long gap cannot
// stall the coupling; the rest is caught up at later messages.
const maxCatchUp = 10

// Terminated is an FMU that asked to end the simulation: it ended cleanly,
// and is not stepped again.
type Terminated struct {
	Time   float64 // how far it got
	Reason string  // what it said last, "" when nothing
}

func (e *Terminated) Error() string {
	why := "it gave no reason"
	if e.Reason != "" {
		why = "it said: " + e.Reason
	}
	// Nine digits: the time as the coupling's periods add up to it, not
	// their rounding (0.2475, not 0.24750000000000014).
	return fmt.Sprintf("the FMU ended the simulation at t = %.9g s (%s)", e.Time, why)
}

// Stepper steps an FMU on the model's time. The FMU is initialized at the
// time of its first step; every step is from the FMU's current time tc to
// the next communication point tc + h, contiguous as FMI requires:
// doStep(tc, h) for co-simulation, the integration from tc to tc + h for
// model exchange, each time computed from the message's id (Setup.Grid),
// never summed. When the model's time runs ahead of tc by half a period or
// more (lost messages), the FMU
// catches up first; Reset (or a time that goes back) brings it back to
// its initial state, initialized again at the next step's time.
type Stepper struct {
	setup   Setup
	lib     *Library
	inst    *Instance
	in, out *Vars
	me      *me
	cont    []int     // model exchange: the inputs set in continuous-time mode (indices of setup.Inputs' values)
	disc    []int     // … and the discrete ones, set in event mode
	lastIn  []float64 // the discrete inputs' values last set
	// Model exchange: the continuous and the discrete inputs apart, and
	// their values for one call.
	inCont, inDisc     *Vars
	contVals, discVals []float64
	started            bool
	broken             bool        // an FMI call failed: the instance may only be freed
	ended              *Terminated // the FMU asked to stop
	// Times are whole numbers of grid: at is the FMU's communication
	// point, last the model time it was last stepped at, every its step.
	grid            float64
	at, last, every int64
	said            string // the FMU's last log message: why it stops, if it does

	// Counters: steps taken to catch up, resets.
	CatchUps, Resets int64
}

// NewStepper loads the library, instantiates the FMU and sets its
// parameters. log hears the FMU's messages (nil: dropped).
func NewStepper(s Setup, log Logger) (*Stepper, error) {
	if !(s.Period > 0) {
		return nil, errors.New("fmi: the period must be positive")
	}
	if len(s.ParamValues) != Count(s.Params) {
		return nil, errors.New("fmi: a value is needed for every parameter")
	}
	st := &Stepper{setup: s, grid: s.Grid}
	if !(st.grid > 0) {
		st.grid = s.Period
	}
	st.every = int64(math.Round(s.Period / st.grid))
	if st.every < 1 || math.Abs(float64(st.every)*st.grid-s.Period) > 1e-9*s.Period {
		return nil, fmt.Errorf("fmi: the step %g s is no whole number of the coupling's period %g s", s.Period, st.grid)
	}
	var err error
	if st.in, err = NewVars(s.Inputs); err != nil {
		return nil, err
	}
	if st.out, err = NewVars(append(slices.Clip(s.Outputs), s.Observed...)); err != nil {
		return nil, err
	}
	if st.lib, err = Load(s.Library, s.Major); err != nil {
		return nil, err
	}
	inner := log
	log = func(status Status, category, msg string) {
		st.said = msg
		if inner != nil {
			inner(status, category, msg)
		}
	}
	if st.inst, err = st.lib.Instantiate(s.Name, s.Token, s.Resources, s.ModelExchange, log); err != nil {
		st.lib.Close()
		return nil, err
	}
	if s.ModelExchange {
		if st.me, err = newME(st.inst, &st.setup); err != nil {
			st.inst.Free()
			st.lib.Close()
			return nil, err
		}
		at := 0
		var cont, disc []Var
		for _, v := range s.Inputs {
			if v.Discrete {
				disc = append(disc, v)
			} else {
				cont = append(cont, v)
			}
			for range v.Elems() {
				if v.Discrete {
					st.disc = append(st.disc, at)
				} else {
					st.cont = append(st.cont, at)
				}
				at++
			}
		}
		st.lastIn = make([]float64, at)
		st.contVals, st.discVals = make([]float64, len(st.cont)), make([]float64, len(st.disc))
		if st.inCont, err = NewVars(cont); err == nil {
			st.inDisc, err = NewVars(disc)
		}
		if err != nil {
			st.inst.Free()
			st.lib.Close()
			return nil, err
		}
	}
	if err := st.setParams(); err != nil {
		st.inst.Free()
		st.lib.Close()
		return nil, fmt.Errorf("setting the parameters: %w", err)
	}
	return st, nil
}

// setParams sets the parameters and String and Binary values, structural
// parameters (FMI 3.0) first, in configuration mode.
func (s *Stepper) setParams() error {
	var structural []Var
	var vals []float64
	at := 0
	for _, p := range s.setup.Params {
		if p.Structural {
			structural = append(structural, p)
			vals = append(vals, s.setup.ParamValues[at:at+p.Elems()]...)
		}
		at += p.Elems()
	}
	if len(structural) > 0 {
		v, err := NewVars(structural)
		if err != nil {
			return err
		}
		if err := s.inst.EnterConfigurationMode(); err != nil {
			return err
		}
		if err := s.inst.Set(v, vals); err != nil {
			return err
		}
		if err := s.inst.ExitConfigurationMode(); err != nil {
			return err
		}
	}
	var rest []Var
	vals = vals[:0]
	at = 0
	for _, p := range s.setup.Params {
		if !p.Structural {
			rest = append(rest, p)
			vals = append(vals, s.setup.ParamValues[at:at+p.Elems()]...)
		}
		at += p.Elems()
	}
	v, err := NewVars(rest)
	if err != nil {
		return err
	}
	if err := s.inst.Set(v, vals); err != nil {
		return err
	}
	for _, t := range s.setup.Texts {
		if err := s.inst.SetText(t); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return nil
}

// Time is the FMU's current communication point (where it ended the
// simulation, once it has); ok is false before its first step.
func (s *Stepper) Time() (t float64, ok bool) {
	if s.ended != nil {
		return s.ended.Time, true
	}
	return s.time(s.at), s.started
}

// time is the time of point n of the grid: n × grid, one rounding.
func (s *Stepper) time(n int64) float64 { return float64(n) * s.grid }

// point is the grid's point nearest t.
func (s *Stepper) point(t float64) int64 { return int64(math.Round(t / s.grid)) }

// Solver says how the integration of a Model Exchange FMU went (zero for
// co-simulation).
func (s *Stepper) Solver() SolverStats {
	if s.me == nil {
		return SolverStats{}
	}
	return s.me.stats()
}

// Step sets the inputs (one value per element of Setup.Inputs), advances
// the FMU from the model's time t by one period and reads the outputs
// into out. It returns false, changing nothing, when t is not later than
// the last step's (no new time). An output that is NaN or infinite is a
// *BadOutput error; the values are still read. An FMU that asks to stop
// is a *Terminated error, and every later Step says so again.
func (s *Stepper) Step(t float64, in, out []float64) (bool, error) {
	switch {
	case s.ended != nil:
		return false, s.ended
	case s.broken:
		return false, errors.New("fmi: the FMU failed before; it must be instantiated again")
	}
	ok, err := s.step(t, in, out)
	if err == nil {
		return ok, nil
	}
	var ce *CallError
	var te *Terminated
	switch {
	case errors.As(err, &te):
		if te.Reason == "" {
			te.Reason = s.said
		}
		s.ended = te
		s.inst.Terminate() // the FMU asked: it is terminated now, and freed at the end
	case errors.As(err, &ce), Unfit(err), errors.As(err, new(*BadState)):
		s.broken = true
	}
	return ok, err
}

// Reset brings the FMU back to its initial state with the parameters set
// so far; it is initialized again at its next step's time.
func (s *Stepper) Reset() error {
	if s.broken {
		return errors.New("fmi: the FMU failed before; it must be instantiated again")
	}
	if !s.started && s.ended == nil {
		return nil
	}
	if err := s.inst.Reset(); err != nil {
		s.broken = true
		return err
	}
	s.Resets++
	s.started, s.ended = false, nil
	if err := s.setParams(); err != nil {
		s.broken = true
		return err
	}
	return nil
}

func (s *Stepper) step(t float64, in, out []float64) (bool, error) {
	n := s.point(t)
	if s.started && n <= s.last {
		if 2*(s.last-n) <= s.every {
			return false, nil
		}
		// Time went back without a reset: start over all the same.
		if err := s.Reset(); err != nil {
			return true, err
		}
	}
	s.last = n
	if !s.started {
		if err := s.init(n, in); err != nil {
			return true, err
		}
	} else if err := s.setInputs(in); err != nil {
		return true, err
	}
	if gap := n - s.at; 2*gap >= s.every {
		if err := s.catchUp(gap); err != nil {
			return true, err
		}
	}
	if err := s.advance(s.every); err != nil {
		return true, err
	}
	if err := s.inst.Get(s.out, out); err != nil {
		return true, err
	}
	for i, v := range out[:Count(s.setup.Outputs)] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return true, &BadOutput{Name: s.outName(i), Value: v}
		}
	}
	return true, nil
}

// outName names output element i: an array's with its index.
func (s *Stepper) outName(i int) string {
	for _, v := range s.setup.Outputs {
		if i < v.Elems() {
			if v.N > 1 {
				return fmt.Sprintf("%s[%d]", v.Name, i+1)
			}
			return v.Name
		}
		i -= v.Elems()
	}
	return "?"
}

// init sets the inputs and initializes the FMU at point n.
func (s *Stepper) init(n int64, in []float64) error {
	if err := s.inst.Set(s.in, in); err != nil {
		return err
	}
	tol := 0.0
	if s.me != nil {
		tol = s.me.sol.RelTol
	}
	t := s.time(n)
	if err := s.inst.EnterInit(t, tol); err != nil {
		return err
	}
	if err := s.inst.ExitInit(); err != nil {
		return err
	}
	s.started, s.at = true, n
	if s.me != nil {
		copy(s.lastIn, in)
		return s.me.initialized(s.setup.Major, t)
	}
	return nil
}

// setInputs gives a started FMU this step's inputs. A Model Exchange FMU
// takes continuous inputs as they come, and discrete ones (Integer,
// Boolean, discrete Real) in event mode, when they changed.
func (s *Stepper) setInputs(in []float64) error {
	if s.me == nil {
		return s.inst.Set(s.in, in)
	}
	for k, i := range s.cont {
		s.contVals[k] = in[i]
	}
	if err := s.inst.Set(s.inCont, s.contVals); err != nil {
		return err
	}
	s.me.changed()
	changed := false
	for k, i := range s.disc {
		s.discVals[k] = in[i]
		if in[i] != s.lastIn[i] {
			changed = true
		}
	}
	copy(s.lastIn, in)
	if !changed {
		return nil
	}
	// FMI lets a discrete input change in event mode only.
	if err := s.me.enterEvent(); err != nil {
		return err
	}
	if err := s.inst.Set(s.inDisc, s.discVals); err != nil {
		return err
	}
	return s.me.event(s.time(s.at))
}

// catchUp advances the FMU over a gap of the model's time (in grid
// points), with the inputs already set.
func (s *Stepper) catchUp(gap int64) error {
	if s.setup.VariableStep || s.me != nil {
		s.CatchUps++
		return s.advance(gap)
	}
	for n := 0; n < maxCatchUp && 2*(s.last-s.at) >= s.every; n++ {
		s.CatchUps++
		if err := s.advance(s.every); err != nil {
			return err
		}
	}
	return nil
}

// advance takes the FMU from its communication point by n grid points:
// from one whole number of the grid times its period to another, as
// fmusim (the FMI reference master) computes its communication points.
func (s *Stepper) advance(n int64) error {
	t0, t1 := s.time(s.at), s.time(s.at+n)
	var err error
	if s.me != nil {
		err = s.me.advance(t0, t1)
	} else {
		err = s.doStep(t0, t1-t0, 0)
	}
	if err == nil {
		s.at += n
	}
	return err
}

// doStep steps a co-simulation FMU from t by h. A step the FMU discards
// without asking to stop is redone in halves where the FMU allows it
// (Redo), down to a sixteenth; otherwise it is an error.
func (s *Stepper) doStep(t, h float64, depth int) error {
	redo := s.setup.Redo && depth < 4
	if redo {
		if err := s.inst.SaveState(); err != nil {
			return err
		}
	}
	info, err := s.inst.DoStep(t, h)
	if info.Terminate {
		return &Terminated{Time: info.Last}
	}
	var ce *CallError
	if errors.As(err, &ce) && ce.Status == Discard {
		if redo {
			if err := s.inst.RestoreState(); err != nil {
				return err
			}
			if err := s.doStep(t, h/2, depth+1); err != nil {
				return err
			}
			return s.doStep(t+h/2, h/2, depth+1)
		}
		ce.Why = "the FMU computed the step only in part and did not ask to stop; "
		if s.setup.Redo {
			ce.Why += "it discarded it in halves down to a sixteenth too"
		} else {
			ce.Why += "the standard has the master redo it with a smaller step, which needs an FMU that can save and restore its state (canGetAndSetFMUstate) and take other step sizes: this one cannot"
		}
		return err
	}
	return err
}

// SetParams sets parameters (only tunable ones once the FMU runs) to
// values. They are set again after a reset, with the others.
func (s *Stepper) SetParams(list []Var, values []float64) error {
	v, err := NewVars(list)
	if err != nil {
		return err
	}
	// A running Model Exchange FMU takes a tunable parameter in event
	// mode, and settles after it, as FMI has it.
	inEvent := s.me != nil && s.started && s.ended == nil
	if inEvent {
		if err := s.me.enterEvent(); err != nil {
			return err
		}
	}
	if err := s.inst.Set(v, values); err != nil {
		return err
	}
	if inEvent {
		if err := s.me.event(s.time(s.at)); err != nil {
			return err
		}
	}
	at := 0
	for _, x := range list {
		vals := values[at : at+x.Elems()]
		at += x.Elems()
		k := slices.IndexFunc(s.setup.Params, func(p Var) bool { return p.VR == x.VR && p.Kind == x.Kind })
		if k < 0 {
			s.setup.Params = append(s.setup.Params, x)
			s.setup.ParamValues = append(s.setup.ParamValues, vals...)
			continue
		}
		off := Count(s.setup.Params[:k])
		copy(s.setup.ParamValues[off:off+x.Elems()], vals)
	}
	return nil
}

// Close terminates the FMU (when it was initialized and has not ended),
// frees it and unloads its library.
func (s *Stepper) Close() error {
	var err error
	if s.started && !s.broken && s.ended == nil {
		err = s.inst.Terminate()
	}
	s.inst.Free()
	s.lib.Close()
	return err
}

// BadOutput is an output the FMU computed as NaN or infinite: no control
// to send.
type BadOutput struct {
	Name  string
	Value float64
}

func (e *BadOutput) Error() string {
	return fmt.Sprintf("the FMU's output %s is %v: not a usable control value", e.Name, e.Value)
}

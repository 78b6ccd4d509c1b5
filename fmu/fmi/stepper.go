package fmi

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Setup is what a Stepper needs to run an FMU: where it is, what to
// exchange each step, the parameters and the coupling's period.
type Setup struct {
	Library   string // the binary for this machine
	Major     int    // FMI version
	Token     string // guid / instantiationToken
	Resources string // the unpacked resources folder
	Name      string // the instance's name, for its log
	Inputs    []Var  // set before every step, from the values Step is given
	Outputs   []Var  // read after every step
	Params    []Var  // set after instantiation; their values are ParamValues
	// ParamValues are the parameters' values, in Params order.
	ParamValues []float64
	Period      float64 // h, seconds
	// VariableStep is the FMU's canHandleVariableCommunicationStepSize: a
	// gap in the coupling's time is crossed in one step of the gap's size
	// instead of whole periods.
	VariableStep bool
}

// maxCatchUp bounds the extra whole periods a fixed-step FMU is stepped at
// one message to catch up with the coupling's time, so a long gap cannot
// stall the coupling; the rest is caught up at later messages.
const maxCatchUp = 10

// Stepper steps an FMU on the coupling's clock. The FMU is initialized at
// the time of its first step, so its communication points are the
// coupling's model times: every step is doStep(tc, h) from the FMU's
// current time tc, h the period, contiguous as FMI requires. When the
// coupling's time runs ahead of tc by half a period or more (lost
// messages), the FMU catches up first; when it goes back (BeamNG restarted
// its coupling), the FMU is reset and initialized again at the new time.
type Stepper struct {
	setup   Setup
	lib     *Library
	inst    *Instance
	in, out *Vars
	par     *Vars
	started bool
	broken  bool    // an FMI call failed: the instance may only be freed
	tc      float64 // the FMU's time
	lastT   float64 // the last coupling time it was stepped at

	// Counters: steps taken to catch up, resets after time went back.
	CatchUps, Resets int64
}

// NewStepper loads the library, instantiates the FMU and sets its
// parameters. log hears the FMU's messages (nil: dropped).
func NewStepper(s Setup, log Logger) (*Stepper, error) {
	if !(s.Period > 0) {
		return nil, errors.New("fmi: the period must be positive")
	}
	if len(s.ParamValues) != len(s.Params) {
		return nil, errors.New("fmi: a value is needed for every parameter")
	}
	st := &Stepper{setup: s}
	var err error
	if st.in, err = NewVars(s.Inputs); err != nil {
		return nil, err
	}
	if st.out, err = NewVars(s.Outputs); err != nil {
		return nil, err
	}
	if st.par, err = NewVars(s.Params); err != nil {
		return nil, err
	}
	if st.lib, err = Load(s.Library, s.Major); err != nil {
		return nil, err
	}
	if log == nil {
		log = func(Status, string, string) {}
	}
	if st.inst, err = st.lib.Instantiate(s.Name, s.Token, s.Resources, log); err != nil {
		st.lib.Close()
		return nil, err
	}
	if err := st.inst.Set(st.par, s.ParamValues); err != nil {
		st.inst.Free()
		st.lib.Close()
		return nil, fmt.Errorf("setting the parameters: %w", err)
	}
	return st, nil
}

// Time is the FMU's current communication point; ok is false before its
// first step.
func (s *Stepper) Time() (t float64, ok bool) { return s.tc, s.started }

// Step sets the inputs (one value per Setup.Inputs), steps the FMU to the
// coupling's time t plus one period and reads the outputs into out. It
// returns false, changing nothing, when t is not later than the last step's
// (no new data). An output that is NaN or infinite is a *BadOutput error;
// the values are still read.
func (s *Stepper) Step(t float64, in, out []float64) (bool, error) {
	if s.broken {
		return false, errors.New("fmi: the FMU failed before; it must be instantiated again")
	}
	ok, err := s.step(t, in, out)
	var ce *CallError
	if errors.As(err, &ce) {
		s.broken = true
	}
	return ok, err
}

func (s *Stepper) step(t float64, in, out []float64) (bool, error) {
	h := s.setup.Period
	if s.started && t <= s.lastT {
		if t >= s.lastT-h/2 {
			return false, nil
		}
		// Time went back: BeamNG started its coupling again.
		if err := s.inst.Reset(); err != nil {
			return true, err
		}
		s.Resets++
		s.started = false
		if err := s.inst.Set(s.par, s.setup.ParamValues); err != nil {
			return true, err
		}
	}
	s.lastT = t
	if err := s.inst.Set(s.in, in); err != nil {
		return true, err
	}
	if !s.started {
		if err := s.inst.EnterInit(t); err != nil {
			return true, err
		}
		if err := s.inst.ExitInit(); err != nil {
			return true, err
		}
		s.started, s.tc = true, t
	}
	if gap := t - s.tc; gap >= h/2 {
		if err := s.catchUp(gap); err != nil {
			return true, err
		}
	}
	if err := s.inst.DoStep(s.tc, h); err != nil {
		return true, err
	}
	s.tc += h
	if err := s.inst.Get(s.out, out); err != nil {
		return true, err
	}
	for i, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return true, &BadOutput{Name: s.setup.Outputs[i].Name, Value: v}
		}
	}
	return true, nil
}

// catchUp steps the FMU over a gap in the coupling's time, with the inputs
// already set.
func (s *Stepper) catchUp(gap float64) error {
	h := s.setup.Period
	if s.setup.VariableStep {
		s.CatchUps++
		err := s.inst.DoStep(s.tc, gap)
		s.tc += gap
		return err
	}
	for n := 0; n < maxCatchUp && s.tc+h/2 <= s.lastT; n++ {
		s.CatchUps++
		if err := s.inst.DoStep(s.tc, h); err != nil {
			return err
		}
		s.tc += h
	}
	return nil
}

// SetParams sets parameters (only tunable ones once the FMU runs) to
// values. They are set again after a reset, with the others.
func (s *Stepper) SetParams(list []Var, values []float64) error {
	v, err := NewVars(list)
	if err != nil {
		return err
	}
	if err := s.inst.Set(v, values); err != nil {
		return err
	}
	for i, x := range list {
		k := slices.IndexFunc(s.setup.Params, func(p Var) bool { return p.VR == x.VR && p.Kind == x.Kind })
		if k < 0 {
			s.setup.Params = append(s.setup.Params, x)
			s.setup.ParamValues = append(s.setup.ParamValues, values[i])
			continue
		}
		s.setup.ParamValues[k] = values[i]
	}
	if s.par, err = NewVars(s.setup.Params); err != nil {
		return err
	}
	return nil
}

// Close terminates the FMU (when it was initialized), frees it and unloads
// its library.
func (s *Stepper) Close() error {
	var err error
	if s.started && !s.broken {
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

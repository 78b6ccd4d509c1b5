package system

import (
	"errors"
	"fmt"
	"log/slog"
	"math"

	"beamconnect/models"
	"beamconnect/models/fmumodel"
	"beamconnect/ports"
)

// Options are how a system runs.
type Options struct {
	// Log hears each FMU's faults, restarts and messages (nil: discarded).
	Log *slog.Logger
	// InProcess loads every FMU into beamconnect (the fmu model's
	// inProcess) instead of a child process each.
	InProcess bool
}

// Model is a system as the coupling's model (models.Model and the
// optional interfaces every model kind offers: faults, resets, ends,
// tallies, notes, variables, live reloads).
type Model struct {
	sys       *System
	log       *slog.Logger
	inProcess bool
	comps     []*runComp // by component, nil for BeamNG's
	steps     []*runComp // the FMUs in the order they are stepped
	// Owned by the coupling's loop, swapped by a reload's commit.
	toBeamNG []beamFeed // the connections into BeamNG
	beam     []beamConn // BeamNG's declared connectors, for the recording
	reads    models.Vehicles
	vars     []models.Variable
	from     []source // where each variable's value is
	fault    cause    // the fault Fault last returned, per component
	end      cause
}

// runComp is an FMU component running: the fmu model, the port vectors
// of its own plan, and what its latest step gave.
type runComp struct {
	comp   *Component
	fmu    *fmumodel.FMU
	plan   *ports.Plan
	out    [][]float64 // its plan's outputs: out[1] its fed inputs
	in     [][]float64 // its plan's inputs: what it drives (unused)
	names  []models.Variable
	vals   []float64 // the fmu model's Sample
	held   []float64 // each variable's latest value (its start before the first step)
	inVals []float64 // what its inputs were given at its latest step
	inIdx  map[string]int
	feeds  []feed
}

// feed fills one of a component's inputs from a connection.
type feed struct {
	link *Link
	k    int // its place in out[1]
	src  source
}

// beamFeed writes one of BeamNG's controls from a connection.
type beamFeed struct {
	link *Link
	at   models.Ref
	src  source
}

// beamConn is one of BeamNG's declared connectors: its element (of the
// inputs for a control, of the outputs for a signal).
type beamConn struct {
	at models.Ref
}

// source is where a value is: an element of BeamNG's message (comp nil),
// a variable of a component's latest step, one of its inputs, or one of
// BeamNG's connectors as recorded.
type source struct {
	comp  *runComp
	k     int
	at    models.Ref
	input bool // comp's input k
	beam  bool // BeamNG's connector m.beam[k]
}

// cause remembers the fault (or end) a component said and the error the
// system says for it, so that one fault is one error, not a new one each
// message (the coupling compares them), and reading it allocates nothing.
type cause struct {
	of      *runComp
	said    error
	wrapped error
}

// New starts the system's FMUs, each as an fmu model on its component's
// plan, for a coupling of plan (BeamNG's, as the run has it: in real time
// or by busy polling, it may differ from the system's own).
func New(s *System, plan *ports.Plan, o Options) (*Model, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Model{sys: s, log: log, inProcess: o.InProcess, comps: make([]*runComp, len(s.Components))}
	base := *plan
	base.Source = s.Plan.Source
	for _, i := range s.Order {
		comp := s.Components[i]
		rc := &runComp{comp: comp, plan: s.componentPlan(comp)}
		rc.plan.RealTime, rc.plan.BusyPoll, rc.plan.ModelTimeout = base.RealTime, base.BusyPoll, base.ModelTimeout
		f, err := fmumodel.New(comp.modelParams(nil, o.InProcess), rc.plan, log.With("component", comp.Name))
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("component %s: %w", comp.Name, err)
		}
		rc.fmu = f
		m.comps[i] = rc
		m.steps = append(m.steps, rc)
		rc.vectors()
	}
	if err := m.wire(plan); err != nil {
		m.Close()
		return nil, err
	}
	m.variables()
	return m, nil
}

// vectors makes a component's port vectors and what it records.
func (rc *runComp) vectors() {
	for _, p := range rc.plan.Outputs {
		rc.out = append(rc.out, make([]float64, p.Width))
	}
	for _, p := range rc.plan.Inputs {
		rc.in = append(rc.in, make([]float64, p.Width))
	}
	rc.out[0][0], rc.in[0][0] = float64(ports.Connected), 1
	rc.names = rc.fmu.Variables()
	rc.vals, rc.held = make([]float64, len(rc.names)), make([]float64, len(rc.names))
	for k, v := range rc.names {
		if fv, ok := rc.comp.Desc.Variable(v.Name); ok {
			rc.held[k] = startOf(fv.Start)
		}
		if x, ok := rc.comp.Params[v.Name].(float64); ok {
			rc.held[k] = x
		}
	}
	in := rc.fmu.InputNames()
	rc.inVals, rc.inIdx = make([]float64, len(in)), map[string]int{}
	for k, n := range in {
		rc.inIdx[n] = k
	}
	rc.fmu.InputValues(rc.inVals)
}

// wire resolves every connection's ends for BeamNG's plan: the elements
// of BeamNG's fields, the components' variables.
func (m *Model) wire(plan *ports.Plan) error {
	beam, feeds, reads, err := m.beamNGEnds(plan)
	if err != nil {
		return err
	}
	for _, rc := range m.steps {
		rc.feeds = feeds[rc]
	}
	m.toBeamNG, m.beam, m.reads = beam.feeds, beam.conns, reads
	return nil
}

// beamEnds are BeamNG's ends of the connections for one plan.
type beamEnds struct {
	feeds []beamFeed
	conns []beamConn
}

// beamNGEnds resolves the connections for BeamNG's plan, changing
// nothing: its controls the connections write, each component's fed
// inputs, BeamNG's declared connectors, the vehicles whose data the
// system reads.
func (m *Model) beamNGEnds(plan *ports.Plan) (beamEnds, map[*runComp][]feed, models.Vehicles, error) {
	s := m.sys
	var b beamEnds
	feeds := map[*runComp][]feed{}
	var reads models.Vehicles
	names := map[int]map[string]beamngVar{}
	elem := func(ci int, cn *Connector) (models.Ref, error) {
		comp := s.Components[ci]
		if names[ci] == nil {
			names[ci] = beamngNames(plan, comp.Vehicle)
		}
		v, ok := names[ci][cn.Name]
		if !ok || v.input != cn.Input {
			return models.Ref{}, fmt.Errorf("BeamNG's field %q, a connector of the system's component %q, is not in the config any more (as %s)", cn.Name, comp.Name, map[bool]string{true: "a control", false: "a signal"}[cn.Input])
		}
		return models.Ref{Port: v.elem.Port, Elem: v.elem.Elem}, nil
	}
	srcOf := func(l *Link) (source, error) {
		if s.Components[l.From].BeamNG {
			at, err := elem(l.From, l.FromConn)
			if err == nil {
				reads = reads.Add(plan, at)
			}
			return source{at: at}, err
		}
		rc := m.comps[l.From]
		return source{comp: rc, k: varIndex(rc.names, l.FromConn.Var.Name)}, nil
	}
	for _, l := range s.Links {
		src, err := srcOf(l)
		if err != nil {
			return b, nil, nil, err
		}
		if s.Components[l.To].BeamNG {
			at, err := elem(l.To, l.ToConn)
			if err != nil {
				return b, nil, nil, err
			}
			b.feeds = append(b.feeds, beamFeed{link: l, at: at, src: src})
			continue
		}
		rc := m.comps[l.To]
		k := 0
		for _, cn := range s.inputs(l.To) {
			if cn == l.ToConn {
				break
			}
			k++
		}
		feeds[rc] = append(feeds[rc], feed{link: l, k: k, src: src})
	}
	for ci, comp := range s.Components {
		if !comp.BeamNG {
			continue
		}
		for _, cn := range comp.Connectors {
			at, err := elem(ci, cn)
			if err != nil {
				return b, nil, nil, err
			}
			b.conns = append(b.conns, beamConn{at: at})
		}
	}
	if reads == nil {
		reads = make(models.Vehicles, len(plan.Vehicles))
	}
	return b, feeds, reads, nil
}

func varIndex(vars []models.Variable, name string) int {
	for k, v := range vars {
		if v.Name == name {
			return k
		}
	}
	return -1
}

func startOf(s string) float64 {
	var x float64
	if _, err := fmt.Sscan(s, &x); err != nil {
		if s == "true" {
			return 1
		}
		return 0
	}
	return x
}

// value is a source's value now.
func (m *Model) value(s source, out [][]float64) float64 {
	switch {
	case s.comp == nil:
		return s.at.Get(out)
	case s.k < 0:
		return math.NaN()
	}
	return s.comp.held[s.k]
}

// Step steps every FMU in order at the model's time t, each fed what the
// connections carry now (BeamNG's message, what the components before it
// computed for this step), then writes BeamNG's controls from the
// connections into BeamNG. The controls were computed for this step only
// when every FMU's step was.
func (m *Model) Step(t float64, out, in [][]float64) bool {
	computed := true
	for _, rc := range m.steps {
		for i := range rc.feeds {
			f := &rc.feeds[i]
			rc.out[1][f.k] = f.link.apply(m.value(f.src, out))
		}
		if !rc.fmu.Step(t, rc.out, rc.in) {
			computed = false
		}
		rc.fmu.Sample(rc.vals)
		for k, x := range rc.vals {
			if x == x { // NaN: no step has answered yet
				rc.held[k] = x
			}
		}
		rc.fmu.InputValues(rc.inVals)
	}
	for i := range m.toBeamNG {
		f := &m.toBeamNG[i]
		f.at.Set(in, f.link.apply(m.value(f.src, out)))
	}
	return computed
}

// Reads reports whether the connections read vehicle v's data.
func (m *Model) Reads(v int) bool { return m.reads.Reads(v) }

// Reset starts every FMU over (BeamNG started its coupling again).
func (m *Model) Reset() error {
	for _, rc := range m.steps {
		rc.fmu.Reset()
	}
	return nil
}

// Fault is the first fault of an FMU, in the order they step, said with
// its component's name; nil while every one is healthy.
func (m *Model) Fault() error {
	for _, rc := range m.steps {
		if err := rc.fmu.Fault(); err != nil {
			return m.fault.of1(rc, err)
		}
	}
	return nil
}

// Ended says why the system ended, once one of its FMUs asked to end the
// simulation: BeamNG gets neutral controls from then on.
func (m *Model) Ended() error {
	for _, rc := range m.steps {
		if err := rc.fmu.Ended(); err != nil {
			return m.end.of1(rc, err)
		}
	}
	return nil
}

// of1 is the system's error for err of rc: the one made before while it
// is the same.
func (c *cause) of1(rc *runComp, err error) error {
	if c.of != rc || !sameError(c.said, err) {
		c.of, c.said, c.wrapped = rc, err, fmt.Errorf("component %s: %w", rc.comp.Name, err)
	}
	return c.wrapped
}

// sameError reports whether a and b are one error (pointers to one, as
// the fmu model keeps them), never panicking on one that is not
// comparable.
func sameError(a, b error) bool {
	defer func() { recover() }()
	return a == b
}

// Tally sums what the FMUs counted.
func (m *Model) Tally() models.Tally {
	var t models.Tally
	for _, rc := range m.steps {
		n := rc.fmu.Tally()
		t.Missed += n.Missed
		t.Discarded += n.Discarded
		t.Failed += n.Failed
		t.Skipped += n.Skipped
		t.Restarts += n.Restarts
		t.Old += n.Old
		t.Abandoned += n.Abandoned
		t.SolverSteps += n.SolverSteps
		t.SolverRejected += n.SolverRejected
		t.Events += n.Events
		t.InputsClamped += n.InputsClamped
	}
	return t
}

// Notes say how each FMU runs (its interface, its step), and why the
// system ended, if it did.
func (m *Model) Notes() []string {
	var out []string
	for _, rc := range m.steps {
		for _, n := range rc.fmu.Notes() {
			out = append(out, rc.comp.Name+": "+n)
		}
	}
	return out
}

// Close stops every FMU (their processes, their unpacked files).
func (m *Model) Close() error {
	var errs []error
	for _, rc := range m.comps {
		if rc != nil && rc.fmu != nil {
			errs = append(errs, rc.fmu.Close())
		}
	}
	return errors.Join(errs...)
}

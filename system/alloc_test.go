package system

import (
	"testing"

	"beamconnect/models"
)

// stepper is the example system's model with port vectors as BeamNG's
// plan lays them out, stepped as the coupling steps it.
type stepper struct {
	m       *Model
	out, in [][]float64
	vals    []float64
	id      int64
}

func newStepper(tb testing.TB) *stepper {
	tb.Helper()
	sys := load(tb, example(tb))
	m, err := New(sys, sys.Plan, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	s := &stepper{m: m, vals: make([]float64, len(m.Variables()))}
	for _, p := range sys.Plan.Outputs {
		s.out = append(s.out, make([]float64, p.Width))
	}
	for _, p := range sys.Plan.Inputs {
		s.in = append(s.in, make([]float64, p.Width))
	}
	return s
}

// step is one message: the system's step, then what the coupling reads of
// it (its fault, its variables).
func (s *stepper) step(tb testing.TB) {
	s.id++
	s.out[1][0] = float64(s.id%400) / 20 // a speed
	if !s.m.Step(float64(s.id)*0.005, s.out, s.in) {
		tb.Fatalf("message %d: not computed: %v", s.id, s.m.Fault())
	}
	if err := s.m.Fault(); err != nil {
		tb.Fatal(err)
	}
	s.m.Sample(s.vals)
}

// The system's step, with its FMUs in their child processes, allocates
// nothing on the message path, as every model's must not.
func TestStepAllocatesNothing(t *testing.T) {
	s := newStepper(t)
	for range 50 {
		s.step(t)
	}
	if n := testing.AllocsPerRun(500, func() { s.step(t) }); n != 0 {
		t.Errorf("%v allocations a message", n)
	}
	var _ models.Sampler = s.m
}

// BenchmarkSystemStep is the example system's step per BeamNG message:
// the controller and the actuator (every second message) in their child
// processes, one after the other.
func BenchmarkSystemStep(b *testing.B) {
	s := newStepper(b)
	for range 50 {
		s.step(b)
	}
	b.ResetTimer()
	for b.Loop() {
		s.step(b)
	}
}

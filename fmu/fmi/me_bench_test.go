package fmi_test

import (
	"testing"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/testfmu"
)

// The solver's cost per message: a Model Exchange FMU of 10 states (five
// Van der Pol oscillators) advanced by one 1 ms period per Step, the
// FMU's calls included, the handoff to its thread or process not:
//
//	go test -run XXX -bench SolverPerMessage ./fmu/fmi
func BenchmarkSolverPerMessage(b *testing.B) {
	path := testfmu.MEForTest(b, "chain.fmu", testfmu.MEOptions{FMI: 3, Model: "chain"})
	f, err := fmu.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	u, err := f.Unpack(b.TempDir(), fmu.ME)
	if err != nil {
		b.Fatal(err)
	}
	x1, _ := f.Desc.Variable("x1")
	for _, solver := range []string{"dopri5", "rk4", "euler"} {
		b.Run(solver, func(b *testing.B) {
			s, err := fmi.NewStepper(fmi.Setup{
				Library: u.Library, Major: 3, Token: f.Desc.Token, Resources: u.Resources, Name: "bench",
				ModelExchange: true, Solver: solver, Period: 0.001, States: f.Desc.States,
				Outputs: []fmi.Var{{VR: x1.VR, Kind: x1.Kind, Name: x1.Name}},
			}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			out := make([]float64, 1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Step(float64(i)*0.001, nil, out); err != nil {
					b.Fatal(err)
				}
			}
			st := s.Solver()
			b.ReportMetric(float64(st.Steps)/float64(b.N), "steps/msg")
			b.ReportMetric(float64(st.Evals)/float64(b.N), "evals/msg")
		})
	}
}

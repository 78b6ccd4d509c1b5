// Package portstest gives tests a compiled plan from a config file, and
// its port vectors.
package portstest

import (
	"testing"

	"beamconnect/config"
	"beamconnect/ports"
)

// Load reads, checks and compiles the config at path, failing the test on
// any error: a test's fixture that does not load is the test's bug.
func Load(t testing.TB, path string) *ports.Plan {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Vectors are a plan's port vectors as a model first sees them: the
// outputs zero but for the status, connected; the inputs at their fields'
// initial values.
func Vectors(p *ports.Plan) (outs, ins [][]float64) {
	for _, pt := range p.Outputs {
		outs = append(outs, make([]float64, pt.Width))
	}
	for _, pt := range p.Inputs {
		v := make([]float64, pt.Width)
		for _, f := range pt.Fields {
			for k := range f.Width {
				v[f.Offset+k] = f.Initial
			}
		}
		ins = append(ins, v)
	}
	outs[0][0] = float64(ports.Connected)
	return outs, ins
}

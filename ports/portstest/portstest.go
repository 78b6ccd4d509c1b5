// Package portstest gives tests a plan's port vectors (a plan from a
// config file is config/configtest's).
package portstest

import "beamconnect/ports"

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

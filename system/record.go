package system

import (
	"math"

	"beamconnect/models"
)

// What a system's recording keeps: every declared connector of every
// component, under the component's name (controller.demand), with its
// unit: BeamNG's as its message and the reply have them (the coupling
// takes them from there, models.Variable.Carried: a fault's neutral
// controls are what the column shows, not what the connections held), an
// FMU's input as its latest step was given it, its outputs, parameters and
// locals as that step left them (read from the FMU). A row's values are
// those of the message's step: the inputs given at its time, the outputs
// at the end of the step (what the reply carries).

// variables lays the recorded variables out, in the components' order,
// each component's connectors in the order the .ssd declares them.
func (m *Model) variables() {
	m.vars, m.from = nil, nil
	b := 0
	for i, comp := range m.sys.Components {
		rc := m.comps[i]
		for _, cn := range comp.Connectors {
			v := models.Variable{Name: cn.Name, Component: comp.Name, Unit: cn.Unit.name, Kind: cn.Kind}
			var src source
			switch {
			case comp.BeamNG:
				v.Description = "BeamNG's " + map[bool]string{true: "control (data to BeamNG, as the reply carried it)", false: "signal (data from BeamNG)"}[cn.Input]
				v.Carried, v.At, v.FromBeamNG = true, m.beam[b].at, !cn.Input
				src = source{beam: true, k: b}
				b++
			case cn.Kind == "input":
				v.Description = cn.Var.Description
				src = source{comp: rc, k: rc.inIdx[cn.Var.Name], input: true}
			default:
				v.Description = cn.Var.Description
				src = source{comp: rc, k: varIndex(rc.names, cn.Var.Name)}
			}
			m.vars = append(m.vars, v)
			m.from = append(m.from, src)
		}
	}
}

// carry places BeamNG's connectors among the recorded variables at their
// elements in the plan m.beam was resolved for (after a reload's commit).
func (m *Model) carry() {
	for i, s := range m.from {
		if s.beam {
			m.vars[i].At = m.beam[s.k].at
		}
	}
}

// nanValue is a recorded value not known yet.
var nanValue = math.NaN()

// Variables are the recorded connectors (models.Sampler).
func (m *Model) Variables() []models.Variable { return m.vars }

// Sample writes each recorded connector's value after the latest step
// (NaN for BeamNG's, which the coupling takes from the message and the
// reply).
func (m *Model) Sample(values []float64) {
	for i, s := range m.from {
		switch {
		case s.beam || s.k < 0: // BeamNG's: the coupling records the message's and the reply's
			values[i] = nanValue
		case s.input:
			values[i] = s.comp.inVals[s.k]
		default:
			values[i] = s.comp.vals[s.k]
		}
	}
}

package fmumodel

import (
	"beamconnect/models"
	"beamconnect/ports"
)

// What a system of FMUs (package system) needs of the fmu model:
// it runs each FMU as an fmu model bound to a plan of the component's own
// (ports.ComponentPlan), which it fills from the connections.

// Check is what validate says of an FMU model's parameters against its
// FMU and plan, without the warnings about FMU inputs and outputs bound to
// no field: in a system an input no connection feeds keeps its value, and
// an output may feed nothing, by design.
func Check(p models.Params, plan *ports.Plan) []models.Finding {
	_, findings := checkFMU(p, plan)
	return findings
}

// InputNames are the names of the FMU's input elements, in the order
// InputValues writes them.
func (m *FMU) InputNames() []string {
	names := make([]string, len(m.inputs))
	for i, in := range m.inputs {
		names[i] = in.name
	}
	return names
}

// InputValues writes the values the FMU's inputs were given with its
// latest step request (len(InputNames()) of them): what it computed its
// outputs from. It allocates nothing.
func (m *FMU) InputValues(values []float64) { copy(values, m.inVals) }

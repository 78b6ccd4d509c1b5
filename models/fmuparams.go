package models

import (
	"beamconnect/fmu"
	"beamconnect/ports"
	"maps"
	"slices"
)

// fmuParams are the FMU adapter's parameters.
var fmuParams = []Param{{Name: "path", Kind: File}, {Name: "inputs", Kind: Names}, {Name: "outputs", Kind: Names},
	{Name: "parameters", Kind: Values}, {Name: "inProcess", Kind: Boolean}, {Name: "restart", Kind: Boolean}, {Name: "deadlineMs", Kind: Positive},
	{Name: "interface", Kind: Choice}, {Name: "solver", Kind: Choice}, {Name: "tolerance", Kind: Positive}, {Name: "maxStep", Kind: Positive}}

// FMUParams are the FMU adapter's parameters, for the catalog.
func FMUParams() []Param { return fmuParams }

// ValidateFMU checks an FMU model's parameters against its FMU and plan,
// for the catalog: the types of the parameters are checked there.
func ValidateFMU(p Params, plan *ports.Plan) []Finding { return validateFMU(p, plan) }

// FMUParamValue is the value of an FMU model's parameter name, as a
// setpoint of beamng.quality reads it: from modelParams.parameters, or
// else its start value in the FMU. Not found, it lists the names there are.
func FMUParamValue(p Params, plan *ports.Plan, name string) (value float64, found bool, known []string) {
	set, _ := p["parameters"].(map[string]any)
	switch v := set[name].(type) {
	case float64:
		return v, true, nil
	case bool:
		if v {
			return 1, true, nil
		}
		return 0, true, nil
	}
	known = slices.Collect(maps.Keys(set))
	if f, err := fmu.Open(fmuFile(p, plan)); err == nil {
		defer f.Close()
		if v, ok := f.Desc.Variable(name); ok && (v.Causality == "parameter" || v.Causality == "input") && !v.Array {
			return startValue(v), true, nil // the FMU's own value: a parameter the config leaves alone
		}
		for _, v := range f.Desc.Variables {
			if v.Causality == "parameter" {
				known = append(known, v.Name)
			}
		}
	}
	return 0, false, known
}

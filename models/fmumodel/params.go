package fmumodel

import (
	"fmt"

	"beamconnect/fmu"
	"beamconnect/models"
	"beamconnect/ports"
	"maps"
	"slices"
)

// Params are the fmu model's parameters.
var Params = []models.Param{{Name: "path", Kind: models.File}, {Name: "inputs", Kind: models.Names}, {Name: "outputs", Kind: models.Names},
	{Name: "parameters", Kind: models.Values}, {Name: "inProcess", Kind: models.Boolean}, {Name: "restart", Kind: models.Boolean},
	{Name: "deadlineMs", Kind: models.Positive}, {Name: "interface", Kind: models.Choice}, {Name: "solver", Kind: models.Choice},
	{Name: "tolerance", Kind: models.Positive}, {Name: "maxStep", Kind: models.Positive}, {Name: "record", Check: checkRecordList}}

// checkRecordList checks modelParams.record's type: a list of names.
func checkRecordList(v any) string {
	list, ok := v.([]string) // a config's arrays of names
	if !ok {
		return "expected a list of the FMU's variables to record, e.g. [\"der(h)\", \"e\"], or [\"*\"] for all of them; got " + models.DescribeValue(v)
	}
	for i, s := range list {
		if s == "" {
			return fmt.Sprintf("element %d: expected a variable's name", i)
		}
	}
	return ""
}

// Validate checks an FMU model's parameters against its FMU and plan
// (their types are checked against Params first): everything the FMU
// would refuse, before it runs.
func Validate(p models.Params, plan *ports.Plan) []models.Finding { return validateFMU(p, plan) }

// Parameters reads an FMU model's parameters before it runs, for a
// setpoint of beamng.quality (models.ParamReader).
type Parameters struct{}

// ParamValue is the value of an FMU model's parameter name, as a
// setpoint of beamng.quality reads it: from modelParams.parameters, or
// else its start value in the FMU. Not found, it lists the names there are.
func (Parameters) ParamValue(p models.Params, plan *ports.Plan, name string) (value float64, found bool, known []string) {
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

package catalog

import (
	"fmt"
	"slices"

	"beamconnect/models"
	"beamconnect/models/builtin"
	"beamconnect/models/fmumodel"
	"beamconnect/ports"
	"beamconnect/suggest"
)

// ParamValue is the value of the plan's model's parameter name, as a
// setpoint of beamng.quality reads it: an FMU's from
// modelParams.parameters, or else its start value in the FMU; a built-in
// controller's from modelParams or its default; another model's from a
// number in modelParams. An unknown name gets a "did you mean" among the
// parameters and the config's fields.
func ParamValue(plan *ports.Plan, name string) (float64, error) {
	model, p, others := plan.Model, models.Params(plan.ModelParams), plan.FieldNames()
	var known []string
	if model == "fmu" {
		v, ok, names := fmumodel.ParamValue(p, plan, name)
		if ok {
			return v, nil
		}
		known = names
	} else if names, defs := builtin.Numbers(model); names != nil {
		if i := slices.Index(names, name); i >= 0 {
			return p.Float(name, defs[i])
		}
		known = names
	} else {
		if v, ok := p[name].(float64); ok {
			return v, nil
		}
		for k, v := range p {
			if _, ok := v.(float64); ok {
				known = append(known, k)
			}
		}
	}
	msg := fmt.Sprintf("%q is neither a field of the config nor a parameter of model %s", name, model)
	if s := suggest.Closest(name, append(slices.Clone(known), others...)); s != "" {
		return 0, fmt.Errorf("%s (did you mean %q?)", msg, s)
	}
	switch {
	case model == "fmu":
		return 0, fmt.Errorf("%s: expected a field, a number, or a parameter of the FMU", msg)
	case len(known) > 0:
		slices.Sort(known)
		return 0, fmt.Errorf("%s: expected a field, a number, or one of its parameters %v", msg, known)
	}
	return 0, fmt.Errorf("%s: expected a field of the config, or a number", msg)
}

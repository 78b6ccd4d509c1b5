package models

import (
	"fmt"
	"maps"
	"slices"

	"beamconnect/fmu"
	"beamconnect/ports"
	"beamconnect/suggest"
)

// builtinNumbers are the numeric parameters of the built-in controllers,
// with their defaults.
var builtinNumbers = map[string]numbers{
	"cruise-pedals": cruisePedalsParams,
	"cruise-torque": cruiseTorqueParams,
	"heading-hold":  headingHoldParams,
	"follow":        followParams,
}

// ParamValue is the value of the plan's model's parameter name, as a
// setpoint of beamng.quality reads it: an FMU's from
// modelParams.parameters, or else its start value in the FMU; a built-in
// controller's from modelParams or its default; another model's from a
// number in modelParams. An unknown name gets a "did you mean" among the
// parameters and the config's fields.
func ParamValue(plan *ports.Plan, name string) (float64, error) {
	model, p, others := plan.Model, Params(plan.ModelParams), plan.FieldNames()
	var known []string
	if model == "fmu" {
		set, _ := p["parameters"].(map[string]any)
		switch v := set[name].(type) {
		case float64:
			return v, nil
		case bool:
			if v {
				return 1, nil
			}
			return 0, nil
		}
		known = slices.Collect(maps.Keys(set))
		if f, err := fmu.Open(fmuFile(p, plan)); err == nil {
			defer f.Close()
			if v, ok := f.Desc.Variable(name); ok && (v.Causality == "parameter" || v.Causality == "input") && !v.Array {
				return startValue(v), nil // the FMU's own value: a parameter the config leaves alone
			}
			for _, v := range f.Desc.Variables {
				if v.Causality == "parameter" {
					known = append(known, v.Name)
				}
			}
		}
	} else if n, ok := builtinNumbers[model]; ok {
		if i := slices.Index(n.names, name); i >= 0 {
			return p.Float(name, n.defs[i])
		}
		known = n.names
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

package models

import (
	"fmt"
	"maps"
	"slices"

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

// ParamValue is the value of the model's parameter name, as a setpoint of
// beamng.quality reads it: an FMU's from modelParams.parameters, a
// built-in controller's from modelParams or its default, another model's
// from a number in modelParams. others are names that are not parameters
// but could have been meant (the config's fields), for a "did you mean".
func ParamValue(model string, p Params, name string, others []string) (float64, error) {
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
		return 0, fmt.Errorf("%s: expected a field, a number, or a parameter set in modelParams.parameters (beamconnect reads its value there)", msg)
	case len(known) > 0:
		slices.Sort(known)
		return 0, fmt.Errorf("%s: expected a field, a number, or one of its parameters %v", msg, known)
	}
	return 0, fmt.Errorf("%s: expected a field of the config, or a number", msg)
}

package models

import (
	"fmt"
	"slices"

	"beamconnect/internal/suggest"
	"beamconnect/ports"
)

// ParamReader reads the parameters of a kind of model, which a setpoint of
// beamng.quality may name: the coupling reads a setpoint's value through
// one it is given (models/kinds has one for every kind), so it needs to
// know nothing of the kinds.
type ParamReader interface {
	// ParamValue is the value of parameter name under p (the config's
	// modelParams), and whether the model has such a number; known names
	// the numbers it has, for a "did you mean".
	ParamValue(p Params, plan *ports.Plan, name string) (v float64, found bool, known []string)
}

// ParamValue is the value of a setpoint that names a parameter of the
// model called kind (beamng.quality): read through r, or (r nil) a number
// in p. An unknown name gets a "did you
// mean" among the model's parameters and the config's fields.
func ParamValue(kind string, r ParamReader, p Params, plan *ports.Plan, name string) (float64, error) {
	var known []string
	if r != nil {
		v, ok, names := r.ParamValue(p, plan, name)
		if ok {
			return v, nil
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
	msg := fmt.Sprintf("%q is neither a field of the config nor a parameter of model %s", name, kind)
	if s := suggest.Closest(name, append(slices.Clone(known), plan.FieldNames()...)); s != "" {
		return 0, fmt.Errorf("%s (did you mean %q?)", msg, s)
	}
	switch {
	case kind == "fmu":
		return 0, fmt.Errorf("%s: expected a field, a number, or a parameter of the FMU", msg)
	case len(known) > 0:
		slices.Sort(known)
		return 0, fmt.Errorf("%s: expected a field, a number, or one of its parameters %v", msg, known)
	}
	return 0, fmt.Errorf("%s: expected a field of the config, or a number", msg)
}

package models

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
)

// tuneChange is one parameter a reload changes.
type tuneChange struct {
	v     *fmu.Variable
	value float64
}

// CheckTune accepts new modelParams when they change only tunable
// parameters of the FMU (and inputs' values); anything else, a fixed
// parameter or another key of modelParams, needs a restart and is named.
func (m *FMU) CheckTune(p Params) error {
	_, err := m.tuneChanges(p)
	return err
}

func (m *FMU) tuneChanges(p Params) ([]tuneChange, error) {
	var problems []string
	for _, k := range union(m.params, p) {
		if k != "parameters" && !reflect.DeepEqual(m.params[k], p[k]) {
			problems = append(problems, fmt.Sprintf("modelParams.%s (restart-only)", k))
		}
	}
	was, _ := m.params["parameters"].(map[string]any)
	now, _ := p["parameters"].(map[string]any)
	var out []tuneChange
	for _, name := range union(was, now) {
		nv, given := now[name]
		if ov, ok := was[name]; ok && given && reflect.DeepEqual(nv, ov) {
			continue
		}
		v, ok := m.desc.Variable(name)
		switch {
		case !ok:
			problems = append(problems, "modelParams.parameters."+name+": "+unknownVariable(m.desc, name, "parameter"))
			continue
		case !v.Tunable():
			problems = append(problems, fmt.Sprintf("modelParams.parameters.%s (the FMU's %s has variability %s: restart-only)", name, v.Causality, v.Variability))
			continue
		}
		value := startValue(v) // a parameter taken out goes back to its start
		if given {
			var msg string
			if value, msg = paramValue(v, nv); msg != "" {
				problems = append(problems, "modelParams.parameters."+name+": "+msg)
				continue
			}
		}
		out = append(out, tuneChange{v, value})
	}
	if len(problems) > 0 {
		return nil, errors.New("cannot change while the FMU runs (restart beamconnect for them): " + strings.Join(problems, "; "))
	}
	return out, nil
}

func union[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Tune applies parameters CheckTune accepted, between two messages: in
// process at once, to a child process with its next step request. Inputs'
// values change at once either way.
func (m *FMU) Tune(p Params) {
	changes, err := m.tuneChanges(p)
	if err != nil {
		m.log.Error("model fmu: tuning refused", "err", err)
		return
	}
	var list []fmi.Var
	var vals []float64
	m.setupMu.Lock()
	for _, c := range changes {
		if c.v.Causality == "input" {
			for i := range m.inputs {
				if m.inputs[i].v.Name == c.v.Name {
					m.inputs[i].start = c.value
				}
			}
			continue
		}
		fv := fmiVar(c.v)
		list, vals = append(list, fv), append(vals, c.value)
		if k := slices.IndexFunc(m.setup.Params, func(x fmi.Var) bool { return x.VR == fv.VR && x.Kind == fv.Kind }); k >= 0 {
			m.setup.ParamValues[k] = c.value
		} else {
			m.setup.Params = append(m.setup.Params, fv)
			m.setup.ParamValues = append(m.setup.ParamValues, c.value)
		}
	}
	m.setupMu.Unlock()
	m.params = p
	if len(list) == 0 {
		return
	}
	if m.local != nil {
		m.local.tune(m, list, vals)
		return
	}
	for i, v := range list {
		if k := slices.IndexFunc(m.tune, func(x fmi.Var) bool { return x.VR == v.VR && x.Kind == v.Kind }); k >= 0 {
			m.tuneVal[k] = vals[i]
			continue
		}
		m.tune, m.tuneVal = append(m.tune, v), append(m.tuneVal, vals[i])
	}
}

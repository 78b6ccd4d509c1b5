package fmumodel

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/host"
	"beamconnect/internal/suggest"
	"beamconnect/models"
	"beamconnect/ports"
)

// tuneChange is one parameter a reload changes: its new values, one per
// element.
type tuneChange struct {
	v      *fmu.Variable
	values []float64
}

// tuneChanges are the parameter changes from running to params: tunable
// parameters of the FMU (and inputs' values) only; anything else, a fixed
// parameter or another key of modelParams, needs a restart and is named,
// as are unknown names and bad values.
func (m *FMU) tuneChanges(running, p models.Params) ([]tuneChange, error) {
	var restart, bad []string
	for _, k := range union(running, p) {
		if k == "parameters" || reflect.DeepEqual(running[k], p[k]) {
			continue
		}
		if _, given := p[k]; given && !slices.ContainsFunc(Params, func(s models.Param) bool { return s.Name == k }) {
			// A key the fmu model does not have: an unknown name, not a
			// restart-only change (a tunable parameter written outside
			// "parameters" is said so).
			msg := models.UnknownParam("fmu", k, Params)
			if v, ok := m.desc.Variable(k); ok && v.Tunable() {
				msg = fmt.Sprintf("model fmu has no parameter %q: the FMU's parameters go under modelParams.parameters (\"parameters\": {%q: …})", k, k)
			} else if s := suggest.Closest(k, m.desc.Names()); s != "" {
				msg = fmt.Sprintf("model fmu has no parameter %q (did you mean parameters.%s?)", k, s)
			}
			bad = append(bad, "modelParams."+k+": "+msg)
			continue
		}
		restart = append(restart, fmt.Sprintf("modelParams.%s (%s → %s)", k, models.ParamText(running[k]), models.ParamText(p[k])))
	}
	was, _ := running["parameters"].(map[string]any)
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
			bad = append(bad, "modelParams.parameters."+name+": "+unknownVariable(m.desc, name, "parameter"))
			continue
		case !v.Tunable():
			restart = append(restart, fmt.Sprintf("modelParams.parameters.%s (the FMU's %s has variability %s)", name, v.Causality, v.Variability))
			continue
		case !v.Kind.Numeric():
			restart = append(restart, fmt.Sprintf("modelParams.parameters.%s (the FMU's %s is a %s, set before it starts)", name, v.Causality, v.Type))
			continue
		}
		n := 1
		if v.Array {
			ds, err := dims(m.desc, v, now)
			if err != nil {
				bad = append(bad, "modelParams.parameters."+name+": "+err.Error())
				continue
			}
			n = len(elems(v, ds))
		}
		values := starts(v, n) // a parameter taken out goes back to its start
		if given {
			var msg string
			if values, _, msg = paramValues(v, n, nv); msg != "" {
				bad = append(bad, "modelParams.parameters."+name+": "+msg)
				continue
			}
		}
		out = append(out, tuneChange{v, values})
	}
	// An unknown name is an unknown name, whatever else the reload changes.
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "; "))
	}
	if len(restart) > 0 {
		return nil, errors.New("these cannot change while the FMU runs (restart beamconnect for them): " + strings.Join(restart, "; "))
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

// Rebind prepares the FMU for a reloaded plan and modelParams, off the
// message path: its inputs and outputs bound by name to the new plan, the
// parameter changes checked (tunable ones only), and the new values tried
// on a scratch instance of the FMU in a process of its own, which must
// take them, so a value the FMU refuses is a refused reload rather than a
// broken instance. commit binds, changes inputs' values at once and sends
// the parameters with the next step; a restarted FMU gets them too.
func (m *FMU) Rebind(plan *ports.Plan, running, params models.Params) (func(), error) {
	changes, err := m.tuneChanges(running, params)
	if err != nil {
		return nil, err
	}
	b, findings := bindFMU(m.desc, params, plan)
	var warn, bad []string
	for _, f := range findings {
		if f.Warning {
			warn = append(warn, f.Error())
		} else {
			bad = append(bad, f.Error())
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("model fmu: %s", strings.Join(bad, "; "))
	}
	if len(b.inputs) != len(m.inputs) || len(b.outputs) != len(m.outputs) {
		return nil, errors.New("model fmu: the FMU's variables changed") // the same description: not expected
	}
	for i := range b.inputs {
		b.inputs[i].start = m.inputs[i].start // as tuned so far
	}
	var list []fmi.Var
	var vals []float64
	for _, c := range changes {
		if c.v.Causality == "input" {
			if first := firstOf(b.inputs, c.v); first >= 0 {
				for e, x := range c.values {
					b.inputs[first+e].start = x
				}
			}
			continue
		}
		fv := fmiVar(c.v)
		if c.v.Array {
			fv.N = len(c.values)
		}
		list, vals = append(list, fv), append(vals, c.values...)
	}
	if len(list) > 0 {
		if err := m.trial(b, list, vals); err != nil {
			return nil, err
		}
	}
	reads := b.reads(plan)
	return func() {
		for _, w := range warn {
			m.log.Warn("after the reload", "model", "fmu", "problem", w)
		}
		m.inputs, m.outputs, m.vehicles = b.inputs, b.outputs, reads
		m.vars = m.variables() // the outputs may drive other fields now
		if len(list) > 0 {
			m.tuneTo(list, vals)
		}
	}, nil
}

// trial sets parameters on a scratch instance of the FMU, in a host
// process of its own, made as the running one was made: an error is why
// the FMU refused them.
func (m *FMU) trial(b *fmuBinding, list []fmi.Var, vals []float64) error {
	argv, err := FMUHost()
	if err != nil {
		return fmt.Errorf("model fmu: trying the new parameters: %w", err)
	}
	var said []string // what the FMU logs: why it refuses
	cl, err := host.Start(argv, m.dir, m.currentSetup(), models.StartGrace, func(line string) {
		if len(said) < 8 {
			said = append(said, line)
		}
	})
	if err != nil {
		return fmt.Errorf("model fmu: trying the new parameters on a scratch instance: %w", err)
	}
	defer cl.Close()
	inputs := make([]float64, len(b.inputs))
	for i, in := range b.inputs {
		inputs[i] = in.start
	}
	if !cl.Send(1, 0, false, list, vals, inputs) {
		return errors.New("model fmu: trying the new parameters: the scratch instance took no request")
	}
	outs := make([]float64, len(b.outputs))
	var a host.Answer
	if !cl.Wait(time.Now().Add(models.StartGrace)) || !cl.Take(outs, &a) {
		select {
		case <-cl.Done():
			return fmt.Errorf("model fmu: trying the new parameters, the scratch instance ended: %s", cl.Why())
		default:
			return fmt.Errorf("model fmu: trying the new parameters: the scratch instance did not answer within %v", models.StartGrace)
		}
	}
	if a.Result == host.TuneFailed {
		why := strings.TrimPrefix(a.Err, "setting parameters: ")
		cl.Close() // its stderr read to the end
		if len(said) > 0 {
			why += "; it said: " + strings.Join(said, "; ")
		}
		return fmt.Errorf("model fmu: the FMU refused the new parameters (%s): nothing of the reload is applied", why)
	}
	return nil
}

// tuneTo makes list take vals (one per element): in the setup a
// restarted instance is made from, and with the next step. The values they
// replace are kept until the running instance has taken them.
func (m *FMU) tuneTo(list []fmi.Var, vals []float64) {
	m.setupMu.Lock()
	at := 0
	for _, fv := range list {
		v := vals[at : at+fv.Elems()]
		at += fv.Elems()
		k, off := paramAt(m.setup.Params, fv)
		if k < 0 {
			m.setup.Params = append(m.setup.Params, fv)
			m.setup.ParamValues = append(m.setup.ParamValues, v...)
			m.untuned = append(m.untuned, untuned{fv, startValuesOf(m, fv)})
			continue
		}
		old := m.setup.ParamValues[off : off+fv.Elems()]
		m.untuned = append(m.untuned, untuned{fv, slices.Clone(old)})
		copy(old, v)
	}
	m.setupMu.Unlock()
	at = 0
	for _, fv := range list {
		v := vals[at : at+fv.Elems()]
		at += fv.Elems()
		if k, off := paramAt(m.tune, fv); k >= 0 {
			copy(m.tuneVal[off:off+fv.Elems()], v)
			continue
		}
		m.tune, m.tuneVal = append(m.tune, fv), append(m.tuneVal, v...)
	}
}

// paramAt finds fv in list: its index, and where its values begin among
// the list's; -1 when it is not there.
func paramAt(list []fmi.Var, fv fmi.Var) (k, off int) {
	for i, x := range list {
		if x.VR == fv.VR && x.Kind == fv.Kind {
			return i, off
		}
		off += x.Elems()
	}
	return -1, 0
}

// untuned is a parameter's values before a reload changed them.
type untuned struct {
	v      fmi.Var
	values []float64
}

// startValuesOf are the start values of the FMU's variable fv.
func startValuesOf(m *FMU, fv fmi.Var) []float64 {
	for i := range m.desc.Variables {
		if v := &m.desc.Variables[i]; v.VR == fv.VR && v.Kind == fv.Kind {
			return starts(v, fv.Elems())
		}
	}
	return make([]float64, fv.Elems())
}

// sentTune notes that the queued parameter changes went out with a step.
func (m *FMU) sentTune() { m.tune, m.tuneVal = m.tune[:0], m.tuneVal[:0] }

// tuneTaken notes that the running instance answered a step after taking
// every change sent: the values before them are forgotten.
func (m *FMU) tuneTaken() {
	if len(m.untuned) > 0 && len(m.tune) == 0 {
		m.untuned = m.untuned[:0]
	}
}

// tuneRefused is the running instance refusing parameters that a scratch
// instance took: a model fault. The setup goes back to the values before
// the reload, so the instance made next does not refuse them again.
func (m *FMU) tuneRefused(err error) {
	m.failures.Add(1)
	m.setupMu.Lock()
	for _, u := range slices.Backward(m.untuned) { // the oldest value wins
		if k, off := paramAt(m.setup.Params, u.v); k >= 0 {
			copy(m.setup.ParamValues[off:off+u.v.Elems()], u.values)
		}
	}
	m.setupMu.Unlock()
	m.untuned, m.tune, m.tuneVal = m.untuned[:0], m.tune[:0], m.tuneVal[:0]
	m.setFault(fmt.Errorf("the FMU refused the tuned parameters although a scratch instance took them (%w): it is made again with the parameters it had before", err))
}

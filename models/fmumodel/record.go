package fmumodel

import (
	"fmt"
	"slices"
	"strings"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/models"
)

// What of an FMU a recording keeps, besides the fields it is bound to:
// every output (one that drives a field names that field's column; one
// that drives nothing has a column of its own), and the variables
// modelParams.record names, read after every step as the outputs are.

// recordAll in modelParams.record names every variable that can be read.
const recordAll = "*"

// observed is a variable recorded besides the outputs: its elements'
// names.
type observed struct {
	v     *fmu.Variable
	names []string
}

// checkRecord reads modelParams.record: a list of the FMU's variables
// (an array's name takes all its elements, u[2] one of them; "*" every
// variable that can be read). Outputs are recorded anyway, and an input
// bound to a field is that field's column: neither is read twice.
func (c *fmuCheck) checkRecord(p models.Params) []models.Finding {
	raw, ok := p["record"]
	if !ok {
		return nil
	}
	list, _ := raw.([]string) // its type is checked with Params
	d := c.desc
	values, _ := p["parameters"].(map[string]any)
	var out []models.Finding
	seen := map[*fmu.Variable]bool{}
	add := func(v *fmu.Variable, names []string) {
		switch {
		case seen[v], v.Causality == "output", v.Causality == "independent":
			return // named twice; recorded anyway; the time is the row's
		case v.Causality == "input" && c.bind.inputBound(v):
			return // its field's column
		}
		seen[v] = true
		c.observed = append(c.observed, observed{v: v, names: names})
	}
	for i, name := range list {
		param := fmt.Sprintf("record/%d", i)
		if name == recordAll {
			for j := range d.Variables {
				v := &d.Variables[j]
				if !v.Kind.Numeric() {
					continue
				}
				if ds, err := dims(d, v, values); err == nil {
					add(v, elems(v, ds))
				}
			}
			continue
		}
		v, msg := recordable(d, name, values)
		if msg != "" {
			out = append(out, models.Finding{Param: param, Msg: msg})
			continue
		}
		ds, err := dims(d, v, values)
		if err != nil {
			out = append(out, models.Finding{Param: param, Msg: err.Error()})
			continue
		}
		add(v, elems(v, ds))
	}
	return out
}

// recordable finds the variable a name of modelParams.record names: a
// variable, or an array by one of its elements (an array is recorded
// whole); msg says why it cannot be recorded.
func recordable(d *fmu.Description, name string, values map[string]any) (v *fmu.Variable, msg string) {
	v, ok := d.Variable(name)
	if !ok {
		if base, _, isElem := strings.Cut(name, "["); isElem {
			if av, found := d.Variable(base); found && av.Array {
				ds, err := dims(d, av, values)
				if err != nil {
					return nil, err.Error()
				}
				all := elems(av, ds)
				if !slices.Contains(all, name) {
					return nil, fmt.Sprintf("the FMU's %q has the elements %s…%s: %q is none of them", base, all[0], all[len(all)-1], name)
				}
				return av, checkReadable(av)
			}
		}
		return nil, unknownVariable(d, name, "local")
	}
	return v, checkReadable(v)
}

// checkReadable says why a variable cannot be recorded, "" when it can.
func checkReadable(v *fmu.Variable) string {
	if v.Kind.Numeric() {
		return ""
	}
	return fmt.Sprintf("the FMU's %q is %s: a recording keeps numbers (Real/Float, the integer types, Boolean, Enumeration)", v.Name, describeType(v))
}

// inputBound reports whether any element of input v is bound to a field.
func (b *fmuBinding) inputBound(v *fmu.Variable) bool {
	for _, in := range b.inputs {
		if in.v == v && in.bound {
			return true
		}
	}
	return false
}

// observedCount is how many values the observed variables take.
func observedCount(list []observed) int {
	n := 0
	for _, o := range list {
		n += len(o.names)
	}
	return n
}

// observedVars are the fmi.Setup.Observed of the variables recorded
// besides the outputs.
func (c *fmuCheck) observedVars() []fmi.Var {
	var out []fmi.Var
	for _, o := range c.observed {
		fv := fmiVar(o.v)
		if o.v.Array {
			fv.N = len(o.names)
		}
		out = append(out, fv)
	}
	return out
}

// variables lists the FMU's variables for a recording (models.Sampler):
// every output element, then the observed ones, in the order a step reads
// their values.
func (m *FMU) variables() []models.Variable {
	var out []models.Variable
	for _, o := range m.outputs {
		out = append(out, models.Variable{Name: o.name, Unit: o.v.Unit, Description: o.v.Description, Kind: o.v.Causality,
			Drives: o.bound, At: o.r})
	}
	for _, o := range m.check.observed {
		for _, n := range o.names {
			out = append(out, models.Variable{Name: n, Unit: o.v.Unit, Description: o.v.Description, Kind: o.v.Causality})
		}
	}
	return out
}

// Variables are the FMU's variables a recording keeps: its outputs, and
// those modelParams.record names. The list changes only when a reload
// binds the outputs anew.
func (m *FMU) Variables() []models.Variable { return m.vars }

// Sample writes the outputs' and observed variables' values after the
// latest step that answered (NaN before the first).
func (m *FMU) Sample(values []float64) { copy(values, m.outVals) }

package fmumodel

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"beamconnect/beamng"
	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/internal/suggest"
	"beamconnect/models"
	"beamconnect/ports"
)

// The FMU model binds by name. An FMU input takes the value of the
// outputs field (data from BeamNG) of the same name; an FMU output drives
// the inputs field (data to BeamNG) of its name; ports.Plan.Names says
// what a field answers to. An unprefixed name that several vehicles have
// is ambiguous.

// resolve finds the one port element name binds to (ports.Plan.Resolve).
func resolve(names map[string][]ports.Element, plan *ports.Plan, name string) (models.Ref, bool, error) {
	e, ok, err := plan.Resolve(names, name)
	return models.Ref{Port: e.Port, Elem: e.Elem}, ok, err
}

// fmuPort is one FMU input or output element (an array variable has one
// per element) and where it is bound.
type fmuPort struct {
	v     *fmu.Variable
	name  string // the element's name: the variable's, or u[2] for an array's
	r     models.Ref
	bound bool
	// mapped: modelParams.inputs or .outputs names its field (a name that
	// fails is an error, not a warning)
	mapped bool
	field  string  // the config's name for it, when bound
	start  float64 // an unbound input's value: its start, or modelParams.parameters'
	fit    fit     // an input: what it holds of the values BeamNG sends
}

// fmuBinding is the FMU's inputs and outputs bound to a plan's ports, in
// the order they are exchanged each step (element by element), and the
// variables they belong to with their numbers of elements.
type fmuBinding struct {
	inputs, outputs   []fmuPort
	inVars, outVars   []fmi.Var
	inFirst, outFirst []int // where each variable's elements begin in inputs/outputs
}

// reads are the vehicles whose data the bound inputs carry.
func (b *fmuBinding) reads(plan *ports.Plan) models.Vehicles {
	r := make(models.Vehicles, len(plan.Vehicles))
	for _, in := range b.inputs {
		if in.bound {
			r = r.Add(plan, in.r)
		}
	}
	return r
}

// bindFMU binds every FMU input and output that beamconnect can exchange
// (numbers: scalars, and arrays element by element), by name or by the
// maps in modelParams. Findings name what is wrong or unbound.
func bindFMU(d *fmu.Description, p models.Params, plan *ports.Plan) (*fmuBinding, []models.Finding) {
	b := &fmuBinding{}
	var out []models.Finding
	values, _ := p["parameters"].(map[string]any)
	for _, side := range []struct {
		causality, key string
		dir            beamng.Direction
		list           *[]fmuPort
		vars           *[]fmi.Var
		first          *[]int
	}{
		{"input", "inputs", beamng.FromBeamNG, &b.inputs, &b.inVars, &b.inFirst},
		{"output", "outputs", beamng.ToBeamNG, &b.outputs, &b.outVars, &b.outFirst},
	} {
		names := plan.Names(side.dir)
		explicit, _ := p[side.key].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(explicit)) {
			out = append(out, checkMapped(d, side.key, side.causality, k, explicit[k], values)...)
		}
		for i := range d.Variables {
			v := &d.Variables[i]
			if v.Causality != side.causality {
				continue
			}
			if !v.Kind.Numeric() {
				field, mapped := explicit[v.Name].(string)
				if !mapped {
					field = v.Name
				}
				if _, ok := names[field]; ok || mapped {
					out = append(out, models.Finding{Param: side.key + "/" + escape(v.Name),
						Msg: fmt.Sprintf("the FMU's %s %q is %s: beamconnect exchanges numbers (Real/Float, the integer types, Boolean, Enumeration) at every step; a String or Binary is set once, in modelParams.parameters", side.causality, v.Name, describeType(v))})
				}
				continue
			}
			ds, err := dims(d, v, values)
			if err != nil {
				out = append(out, models.Finding{Param: side.key, Msg: err.Error()})
				continue
			}
			elemNames := elems(v, ds)
			st := starts(v, len(elemNames))
			*side.first = append(*side.first, len(*side.list))
			fv := fmiVar(v)
			if v.Array {
				fv.N = len(elemNames)
			}
			*side.vars = append(*side.vars, fv)
			for e, name := range elemNames {
				field, mapped := explicit[name].(string)
				if !mapped {
					field = name
				}
				fp := fmuPort{v: v, name: name, start: st[e], mapped: mapped, fit: newFit(v)}
				r, found, err := resolve(names, plan, field)
				switch {
				case err != nil:
					out = append(out, models.Finding{Param: side.key + "/" + escape(name), Msg: err.Error()})
				case found:
					fp.r, fp.bound, fp.field = r, true, field
				case mapped:
					out = append(out, models.Finding{Param: side.key + "/" + escape(name), Msg: notAField(names, side.dir, field)})
				}
				*side.list = append(*side.list, fp)
			}
		}
	}
	out = append(out, b.checkDrivers()...)
	out = append(out, b.fitFindings(plan, p)...)
	return b, out
}

// checkMapped checks one entry of modelParams.inputs or .outputs: the key
// must be an FMU variable (or an array's element, u[2]) of the right
// causality, the value a name.
func checkMapped(d *fmu.Description, key, causality, name string, field any, values map[string]any) []models.Finding {
	param := key + "/" + escape(name)
	if _, ok := field.(string); !ok {
		return []models.Finding{{Param: param, Msg: fmt.Sprintf("expected the name of a config field, got %s", models.DescribeValue(field))}}
	}
	v, ok := d.Variable(name)
	if !ok {
		if base, _, isElem := strings.Cut(name, "["); isElem {
			if av, found := d.Variable(base); found && av.Array {
				ds, err := dims(d, av, values)
				if err != nil {
					return []models.Finding{{Param: param, Msg: err.Error()}}
				}
				all := elems(av, ds)
				if !slices.Contains(all, name) {
					return []models.Finding{{Param: param, Msg: fmt.Sprintf("the FMU's %q has the elements %s…%s: %q is none of them", base, all[0], all[len(all)-1], name)}}
				}
				v, ok = av, true
			}
		}
	}
	if !ok {
		return []models.Finding{{Param: param, Msg: unknownVariable(d, name, causality)}}
	}
	if v.Causality != causality {
		hint := ""
		switch v.Causality {
		case "input":
			hint = ": map it under modelParams.inputs"
		case "output":
			hint = ": map it under modelParams.outputs"
		case "parameter":
			hint = ": set it under modelParams.parameters"
		}
		return []models.Finding{{Param: param, Msg: fmt.Sprintf("the FMU's %q is a%s %s, not an %s%s", name, article(v.Causality), v.Causality, causality, hint)}}
	}
	if v.Array && name == v.Name {
		return []models.Finding{{Param: param, Msg: fmt.Sprintf("the FMU's %q is an array: map its elements one by one, e.g. %q", name, name+"[1]")}}
	}
	return nil
}

func article(word string) string {
	if strings.ContainsRune("aeiouAEIO", rune(word[0])) { // "a UInt8", but "an Int8"
		return "n"
	}
	return ""
}

// checkDrivers refuses two FMU outputs driving one field.
func (b *fmuBinding) checkDrivers() []models.Finding {
	var out []models.Finding
	seen := map[models.Ref]string{}
	for _, o := range b.outputs {
		if !o.bound {
			continue
		}
		if other, ok := seen[o.r]; ok {
			out = append(out, models.Finding{Param: "outputs/" + escape(o.name),
				Msg: fmt.Sprintf("the FMU's outputs %q and %q both drive %s: expected one output per field", other, o.name, o.field)})
			continue
		}
		seen[o.r] = o.name
	}
	return out
}

func unknownVariable(d *fmu.Description, name, causality string) string {
	if s := suggest.Closest(name, d.Names()); s != "" {
		return fmt.Sprintf("the FMU has no variable %q (did you mean %q?)", name, s)
	}
	var list []string
	for _, v := range d.Variables {
		if v.Causality == causality {
			list = append(list, v.Name)
		}
	}
	if len(list) == 0 {
		return fmt.Sprintf("the FMU has no variable %q, and no %ss at all", name, causality)
	}
	return fmt.Sprintf("the FMU has no variable %q: its %ss are %s", name, causality, strings.Join(list, ", "))
}

func notAField(names map[string][]ports.Element, dir beamng.Direction, field string) string {
	side := "outputs (data from BeamNG)"
	if dir == beamng.ToBeamNG {
		side = "inputs (data to BeamNG)"
	}
	if s := suggest.Closest(field, slices.Collect(maps.Keys(names))); s != "" {
		return fmt.Sprintf("%q is not a field of the config's %s (did you mean %q?)", field, side, s)
	}
	return fmt.Sprintf("%q is not a field of the config's %s: map it there first", field, side)
}

// startValue is a scalar variable's start as a number (booleans 0 or 1),
// 0 when it has none.
func startValue(v *fmu.Variable) float64 { return startNumber(v, strings.TrimSpace(v.Start)) }

// escape makes a name one segment of a JSON Pointer.
func escape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// unboundFindings are the warnings validate gives for FMU inputs and
// outputs bound to nothing, so an unmatched name is never dropped in
// silence: an input that keeps a value nobody gave it (one given in
// modelParams.parameters is meant), an output that BeamNG does not get
// (it is recorded all the same).
func (b *fmuBinding) unboundFindings(p models.Params) []models.Finding {
	var out []models.Finding
	at := func(key string) string {
		if _, ok := p[key]; ok {
			return key
		}
		return ""
	}
	values, _ := p["parameters"].(map[string]any)
	for _, in := range b.inputs {
		if _, given := values[in.v.Name]; !in.bound && !in.mapped && !given {
			out = append(out, models.Finding{Param: at("inputs"), Warning: true,
				Msg: fmt.Sprintf("the FMU's input %q is bound to no field and given no value: it keeps the value %v; map it with modelParams.inputs {%q: \"FIELD\"}, or give its value in modelParams.parameters", in.name, in.start, in.name)})
		}
	}
	for _, o := range b.outputs {
		if !o.bound && !o.mapped {
			out = append(out, models.Finding{Param: at("outputs"), Warning: true,
				Msg: fmt.Sprintf("the FMU's output %q drives no field: it is recorded (%s%s), BeamNG does not get it; map it with modelParams.outputs {%q: \"FIELD\"} to send it", o.name, recordingModelPrefix, o.name, o.name)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Param < out[j].Param })
	return out
}

// recordingModelPrefix is how a recording names a variable of the model's
// that drives no field (recording.ModelPrefix; models do not import the
// recording).
const recordingModelPrefix = "model."

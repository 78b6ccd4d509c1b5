package fmumodel

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"beamconnect/beamng"
	"beamconnect/fmu"
	"beamconnect/models"
	"beamconnect/ports"
)

// What an FMU input holds of the values BeamNG sends it. BeamNG sends
// doubles; an FMU input may be an integer of a few bits, an enumeration
// of a few items, or bounded by its min and max, which FMI forbids a
// master to set it beyond (an FMU may refuse such a value with an error
// status). So at every message a bound input's value is made to fit:
// rounded to a whole number for an integer or enumeration (documented, not
// counted), true whenever it is not 0 for a Boolean, and clamped where it
// is beyond what the input holds: its type's range within its min and
// max, or an enumeration's nearest item. Each clamp is counted
// (inputs_clamped) and the first of each input said, as the coupling does
// for controls beyond what BeamNG accepts. validate refuses a binding
// whose field's documented values the input can never hold, and warns
// where some of them are beyond it.

// fit is what one FMU input element holds.
type fit struct {
	check  bool      // a value can be beyond it (else it takes anything as it is)
	kind   fmu.Kind  //
	lo, hi float64   // the range it holds (whole numbers for an integer)
	items  []float64 // an enumeration's items' values, ascending
	warned bool      // a clamp has been said
}

// newFit is what variable v holds.
func newFit(v *fmu.Variable) fit {
	f := fit{kind: v.Kind}
	f.lo, f.hi = v.Kind.Limits()
	if v.Kind == fmu.Float32 {
		f.lo, f.hi = -math.MaxFloat32, math.MaxFloat32
	}
	if v.Min != nil {
		f.lo = max(f.lo, *v.Min)
	}
	if v.Max != nil {
		f.hi = min(f.hi, *v.Max)
	}
	if v.Kind.Integer() {
		f.lo, f.hi = math.Ceil(f.lo), math.Floor(f.hi)
	}
	if v.Kind == fmu.Enum {
		for _, it := range v.Items {
			if x := float64(it.Value); x >= f.lo && x <= f.hi {
				f.items = append(f.items, x)
			}
		}
		slices.Sort(f.items)
	}
	f.check = v.Kind != fmu.Bool && (v.Kind != fmu.Float64 || !math.IsInf(f.lo, -1) || !math.IsInf(f.hi, 1))
	return f
}

// take is x made to fit, and whether that clamped it; last is the value
// the input has, which a NaN (no whole number, no item) leaves it.
func (f *fit) take(x, last float64) (float64, bool) {
	if x != x {
		if f.kind == fmu.Float64 || f.kind == fmu.Float32 {
			return x, false // a floating-point input takes NaN as it is
		}
		return last, true
	}
	if f.kind.Integer() {
		x = math.Round(x)
	}
	if len(f.items) > 0 {
		i, found := slices.BinarySearch(f.items, x)
		switch {
		case found:
			return x, false
		case i == 0:
			return f.items[0], true
		case i == len(f.items):
			return f.items[i-1], true
		case f.items[i]-x < x-f.items[i-1]:
			return f.items[i], true
		}
		return f.items[i-1], true // the lower of two as near
	}
	switch {
	case x < f.lo:
		return f.lo, true
	case x > f.hi:
		return f.hi, true
	}
	return x, false
}

// holds says what an input holds, for messages: "-128 to 127", "the items
// Eco (1), Sport (2)", "0 or more".
func (f *fit) holds(v *fmu.Variable) string {
	if v.Kind == fmu.Enum && len(v.Items) > 0 {
		return "the items " + itemList(v)
	}
	return rangeText(f.lo, f.hi)
}

// rangeText says a range: "0 to 1", "0 or more", "at most 5", "any".
func rangeText(lo, hi float64) string {
	n := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return "any value"
	case math.IsInf(hi, 1):
		return n(lo) + " or more"
	case math.IsInf(lo, -1):
		return "at most " + n(hi)
	}
	return n(lo) + " to " + n(hi)
}

// fitFindings are what validate says of the fields bound to the FMU's
// inputs whose values BeamNG documents (beamng.Signal.Values): an error
// where the input can hold none of them; a warning where some are beyond
// it (clamped at every message) or where its fractions are rounded.
func (b *fmuBinding) fitFindings(plan *ports.Plan, p models.Params) []models.Finding {
	var out []models.Finding
	explicit, _ := p["inputs"].(map[string]any)
	for i := range b.inputs {
		in := &b.inputs[i]
		v := in.v
		if !in.bound || v.Kind == fmu.Bool {
			continue
		}
		f := plan.FieldAt(beamng.FromBeamNG, in.r.Port, in.r.Elem)
		if f == nil || f.Source != ports.Slot {
			continue
		}
		slo, shi, whole, ok := f.Signal(beamng.FromBeamNG, in.r.Elem-f.Offset).Values()
		if !ok {
			continue // BeamNG documents nothing of it: the run clamps what must be
		}
		param := ""
		if _, mapped := explicit[in.name]; mapped {
			param = "inputs/" + escape(in.name)
		} else if explicit != nil {
			param = "inputs"
		}
		what := fmt.Sprintf("the FMU's input %q (%s, holding %s)", in.name, describeKind(v), in.fit.holds(v))
		field := fmt.Sprintf("%s (%s: %s%s)", in.field, f.Path, rangeText(slo, shi), map[bool]string{true: ", whole numbers"}[whole])
		never, beyond := false, false
		if v.Kind == fmu.Enum && len(in.fit.items) > 0 {
			never = true
			for _, x := range in.fit.items {
				if x >= slo && x <= shi {
					never = false
				}
			}
			beyond = !never && (max(slo, -reach) < in.fit.items[0] || min(shi, reach) > in.fit.items[len(in.fit.items)-1])
		} else {
			never = shi < in.fit.lo || slo > in.fit.hi
			beyond = max(slo, -reach) < in.fit.lo || min(shi, reach) > in.fit.hi
		}
		switch {
		case never:
			out = append(out, models.Finding{Param: param, Msg: fmt.Sprintf("%s is bound to %s, none of whose values it can hold: bind the input to another field with modelParams.inputs, or leave it unbound", what, field)})
			continue
		case beyond:
			out = append(out, models.Finding{Param: param, Warning: true, Msg: fmt.Sprintf("%s is bound to %s, whose values can be beyond it: those are clamped to it at every message, counted as inputs_clamped and said once", what, field)})
		}
		switch {
		case v.Kind == fmu.Enum && !whole:
			out = append(out, models.Finding{Param: param, Warning: true, Msg: fmt.Sprintf("%s is bound to %s, a quantity that is not whole-numbered: its value is rounded to the nearest whole number at every message, and one that is no item clamped to the nearest item", what, field)})
		case v.Kind.Integer() && !whole:
			out = append(out, models.Finding{Param: param, Warning: true, Msg: fmt.Sprintf("%s is bound to %s, which is not whole-numbered: its value is rounded to the nearest whole number at every message", what, field)})
		}
	}
	return out
}

// reach is how far validate takes a field whose values BeamNG documents
// as open-ended (an engine's speed, 0 or more) to go: an input that holds
// 16 bits of it holds what a vehicle reaches, one of 8 bits or a few
// items does not.
const reach = 32767

// describeKind says a variable's type: "an Int8", "an enumeration (Mode)".
func describeKind(v *fmu.Variable) string {
	if v.Kind == fmu.Enum {
		return "an enumeration (" + v.DeclaredType + ")"
	}
	return "a" + article(v.Type) + " " + v.Type
}

package fmumodel

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"beamconnect/fmu"
	"beamconnect/models"
)

// What a config may give an FMU variable (modelParams.parameters), per
// type: a number (an integer type's whole, within the type and the
// variable's min and max), true or false for a Boolean, a number or an
// item's name for an enumeration, text for a String, hexadecimal text for
// a Binary; an array variable takes an array of its elements.

// elems is a variable's elements' names: the variable's own for a
// scalar, name[i] (name[i,j]…, from 1, the last index fastest: the order
// FMI 3.0 lays arrays out in) for an array.
func elems(v *fmu.Variable, dims []uint64) []string {
	if !v.Array {
		return []string{v.Name}
	}
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	out := make([]string, 0, n)
	idx := make([]uint64, len(dims))
	for range n {
		parts := make([]string, len(idx))
		for i, x := range idx {
			parts[i] = strconv.FormatUint(x+1, 10)
		}
		out = append(out, v.Name+"["+strings.Join(parts, ",")+"]")
		for i := len(idx) - 1; i >= 0; i-- {
			if idx[i]++; idx[i] < dims[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// dims are an array's dimensions, structural parameters' from their
// values in params (or their start values).
func dims(d *fmu.Description, v *fmu.Variable, params map[string]any) ([]uint64, error) {
	out := make([]uint64, len(v.Dims))
	for i, dim := range v.Dims {
		out[i] = dim.Start
		if !dim.Param {
			continue
		}
		p, ok := d.ByVR(dim.VR)
		if !ok {
			return nil, fmt.Errorf("the FMU's %q is sized by value reference %d, which no variable has", v.Name, dim.VR)
		}
		if x, given := params[p.Name].(float64); given && x >= 0 && x == math.Trunc(x) {
			out[i] = uint64(x)
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(p.Start), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("the FMU's %q is sized by %q, whose start %q is not a whole number", v.Name, p.Name, p.Start)
		}
		out[i] = n
	}
	size := uint64(1)
	for _, n := range out {
		if n > 0 && size > fmu.MaxVariables/n {
			return nil, fmt.Errorf("the FMU's %q has more than %d elements", v.Name, fmu.MaxVariables)
		}
		size *= n
	}
	return out, nil
}

// starts are a numeric variable's start values, one per element (0 where
// it has none).
func starts(v *fmu.Variable, n int) []float64 {
	out := make([]float64, n)
	for i, f := range strings.Fields(v.Start) {
		if i >= n {
			break
		}
		out[i] = startNumber(v, f)
	}
	if !v.Array && n == 1 {
		out[0] = startNumber(v, strings.TrimSpace(v.Start))
	}
	return out
}

// startNumber reads one start value as written in the model description
// (booleans true and false, or 1 and 0).
func startNumber(v *fmu.Variable, s string) float64 {
	switch s {
	case "", "false":
		return 0
	case "true":
		return 1
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// paramValues reads a config value for variable v of n elements: its
// numbers (one per element), or for a String or Binary its texts; msg says
// what is wrong with it.
func paramValues(v *fmu.Variable, n int, x any) (nums []float64, texts []string, msg string) {
	list := []any{x}
	if v.Array {
		arr, ok := x.([]any)
		if !ok {
			return nil, nil, fmt.Sprintf("the FMU's %q is an array of %d: expected an array of %d values, got %s", v.Name, n, n, models.DescribeValue(x))
		}
		if len(arr) != n {
			return nil, nil, fmt.Sprintf("the FMU's %q is an array of %d: expected %d values, got %d", v.Name, n, n, len(arr))
		}
		list = arr
	}
	for i, e := range list {
		name := v.Name
		if v.Array {
			name = fmt.Sprintf("%s[%d]", v.Name, i+1)
		}
		switch v.Kind {
		case fmu.String:
			s, ok := e.(string)
			if !ok {
				return nil, nil, fmt.Sprintf("the FMU's %q is a String: expected text, got %s", name, models.DescribeValue(e))
			}
			texts = append(texts, s)
		case fmu.Binary:
			s, ok := e.(string)
			if _, err := hex.DecodeString(s); !ok || err != nil {
				return nil, nil, fmt.Sprintf("the FMU's %q is a Binary: expected its bytes as hexadecimal text, e.g. \"0a1bff\", got %s", name, models.DescribeValue(e))
			}
			texts = append(texts, s)
		default:
			f, msg := numericValue(v, name, e)
			if msg != "" {
				return nil, nil, msg
			}
			nums = append(nums, f)
		}
	}
	return nums, texts, ""
}

// numericValue reads one element's value for a numeric variable.
func numericValue(v *fmu.Variable, name string, x any) (float64, string) {
	switch v.Kind {
	case fmu.Bool:
		switch b := x.(type) {
		case bool:
			if b {
				return 1, ""
			}
			return 0, ""
		case float64:
			if b == 0 || b == 1 {
				return b, ""
			}
		}
		return 0, fmt.Sprintf("the FMU's %q is a Boolean: expected true or false, got %s", name, models.DescribeValue(x))
	case fmu.Enum:
		var f float64
		switch e := x.(type) {
		case float64:
			f = e
		case string:
			for _, it := range v.Items {
				if it.Name == e {
					return float64(it.Value), ""
				}
			}
			return 0, fmt.Sprintf("the FMU's %q is an enumeration (%s) with no item %q: expected one of %s", name, v.DeclaredType, e, itemList(v))
		default:
			return 0, fmt.Sprintf("the FMU's %q is an enumeration (%s): expected an item's name or value, one of %s; got %s", name, v.DeclaredType, itemList(v), models.DescribeValue(x))
		}
		if _, ok := v.Item(int64(f)); f != math.Trunc(f) || !ok && len(v.Items) > 0 {
			return 0, fmt.Sprintf("the FMU's %q is an enumeration (%s) with no item of value %v: expected one of %s", name, v.DeclaredType, f, itemList(v))
		}
		return f, ""
	}
	f, ok := x.(float64)
	if !ok {
		return 0, fmt.Sprintf("the FMU's %q is a%s %s: expected a number, got %s", name, article(v.Type), v.Type, models.DescribeValue(x))
	}
	if v.Kind.Integer() {
		lo, hi := v.Kind.Limits()
		if f != math.Trunc(f) || f < lo || f > hi {
			return 0, fmt.Sprintf("the FMU's %q is a%s %s: expected a whole number from %s to %s, got %v", name, article(v.Type), v.Type,
				strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64), f)
		}
	}
	if msg := outOfRange(v, name, f); msg != "" {
		return 0, msg
	}
	return f, ""
}

// outOfRange says why f is outside v's min and max, "" when it is not.
func outOfRange(v *fmu.Variable, name string, f float64) string {
	switch {
	case v.Min != nil && f < *v.Min && v.Max != nil:
		return fmt.Sprintf("the FMU's %q takes %v to %v (its min and max): %v is below", name, *v.Min, *v.Max, f)
	case v.Min != nil && f < *v.Min:
		return fmt.Sprintf("the FMU's %q takes at least %v (its min): %v is below", name, *v.Min, f)
	case v.Max != nil && f > *v.Max && v.Min != nil:
		return fmt.Sprintf("the FMU's %q takes %v to %v (its min and max): %v is above", name, *v.Min, *v.Max, f)
	case v.Max != nil && f > *v.Max:
		return fmt.Sprintf("the FMU's %q takes at most %v (its max): %v is above", name, *v.Max, f)
	}
	return ""
}

func itemList(v *fmu.Variable) string {
	parts := make([]string, len(v.Items))
	for i, it := range v.Items {
		parts[i] = fmt.Sprintf("%s (%d)", it.Name, it.Value)
	}
	return strings.Join(parts, ", ")
}

// describeType says what a variable is, for a message: "an array of 3
// Float64", "of type String".
func describeType(v *fmu.Variable) string {
	if v.Array {
		return "an array of " + v.Type
	}
	return "of type " + v.Type
}

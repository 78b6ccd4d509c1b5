package models

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"beamconnect/internal/suggest"
)

// Finding is one thing wrong, or doubtful, about a model and its
// parameters, found before anything starts.
type Finding struct {
	Param   string // the modelParams key it concerns; "" for the model itself
	Msg     string
	Warning bool
}

func (f Finding) Error() string {
	if f.Param == "" {
		return f.Msg
	}
	// Param is a JSON Pointer below modelParams (inputs/throttleCmd): say
	// it as the config's paths are said.
	segs := strings.Split(f.Param, "/")
	for i, s := range segs {
		segs[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return "modelParams." + strings.Join(segs, ".") + ": " + f.Msg
}

// Param is what a model accepts under one modelParams key.
type Param struct {
	Name string
	Kind ParamKind
	// Check, when set, checks the value instead of Kind: the message says
	// what is wrong, "" when nothing is.
	Check func(v any) string
}

// ParamKind is the type of value a parameter takes.
type ParamKind uint8

const (
	Number   ParamKind = iota // any number
	Positive                  // a number > 0
	Command                   // a string, or an array of strings, naming a program
	Boolean
	Text   // a vehicle's name
	File   // a file name
	Names  // an object of strings: names mapped to names
	Values // an object of numbers and booleans
	Choice // a string naming one of a few things
)

// CheckParams checks p against a model's specs: every key one of them,
// every value of its kind, in key order.
func CheckParams(model string, specs []Param, p Params) []Finding {
	var out []Finding
	for _, k := range slices.Sorted(maps.Keys(p)) {
		i := slices.IndexFunc(specs, func(s Param) bool { return s.Name == k })
		if i < 0 {
			out = append(out, Finding{Param: k, Msg: UnknownParam(model, k, specs)})
			continue
		}
		if msg := specs[i].check(p[k]); msg != "" {
			out = append(out, Finding{Param: k, Msg: msg})
		}
	}
	return out
}

// UnknownParam says that model has no parameter key, and which it has.
func UnknownParam(model, key string, specs []Param) string {
	if len(specs) == 0 {
		return fmt.Sprintf("model %s takes no parameters", model)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	if s := suggest.Closest(key, names); s != "" {
		return fmt.Sprintf("model %s has no parameter %q (did you mean %q?)", model, key, s)
	}
	return fmt.Sprintf("model %s has no parameter %q: expected one of %s", model, key, strings.Join(names, ", "))
}

func (s Param) check(v any) string {
	if s.Check != nil {
		return s.Check(v)
	}
	switch s.Kind {
	case Number, Positive:
		f, ok := v.(float64)
		if !ok {
			return fmt.Sprintf("expected a number, got %s", DescribeValue(v))
		}
		if s.Kind == Positive && !(f > 0) {
			return fmt.Sprintf("expected a number above 0, got %v", f)
		}
	case Command:
		if len(Argv(v)) == 0 {
			return "expected the program to run: a string such as \"python3 model.py\", or an array of strings"
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("expected true or false, got %s", DescribeValue(v))
		}
	case Text:
		if s, ok := v.(string); !ok || s == "" {
			return fmt.Sprintf("expected a vehicle's name (its remoteObject), got %s", DescribeValue(v))
		}
	case File:
		if s, ok := v.(string); !ok || s == "" {
			return fmt.Sprintf("expected the FMU's file, e.g. \"controller.fmu\" (relative to the config), got %s", DescribeValue(v))
		}
	case Choice:
		if s, ok := v.(string); !ok || s == "" {
			return fmt.Sprintf("expected a name, got %s", DescribeValue(v))
		}
	case Names, Values:
		if _, ok := v.(map[string]any); !ok {
			if s.Kind == Names {
				return fmt.Sprintf("expected an object of FMU variable names and config field names, e.g. {\"throttleCmd\": \"throttle\"}, got %s", DescribeValue(v))
			}
			return fmt.Sprintf("expected an object of FMU variable names and values, e.g. {\"setSpeed\": 20}, got %s", DescribeValue(v))
		}
	}
	return ""
}

// DescribeValue says what a parameter's value is, for a message that
// says what was expected instead.
func DescribeValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case []string:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

// Argv is a command parameter as program and arguments.
func Argv(v any) []string {
	switch c := v.(type) {
	case string:
		return strings.Fields(c)
	case []string:
		if len(c) > 0 && c[0] != "" {
			return c
		}
	}
	return nil
}

// ParamText writes a parameter's value as the config writes it.
func ParamText(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// RefuseChanges refuses any change of the modelParams of a model that
// takes them at its start only, naming each.
func RefuseChanges(model string, running, params Params) error {
	all := maps.Clone(running)
	if all == nil {
		all = Params{}
	}
	maps.Copy(all, params)
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if !reflect.DeepEqual(running[k], params[k]) {
			changed = append(changed, fmt.Sprintf("modelParams.%s (%s → %s)", k, ParamText(running[k]), ParamText(params[k])))
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("model %s takes its parameters at the start only (restart beamconnect for them): %s", model, strings.Join(changed, "; "))
	}
	return nil
}

// Refusal is the error that the findings about model make, leaving the
// warnings out: nil when none is an error.
func Refusal(model string, fs []Finding) error {
	var errs []string
	for _, f := range fs {
		if !f.Warning {
			errs = append(errs, f.Error())
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("model %s: %s", model, strings.Join(errs, "; "))
}

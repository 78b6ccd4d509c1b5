package models

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"beamconnect/ports"
	"beamconnect/suggest"
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

// param is what a model accepts under one modelParams key.
type param struct {
	name string
	kind paramKind
}

type paramKind uint8

const (
	number   paramKind = iota // any number
	positive                  // a number > 0
	command                   // a string, or an array of strings, naming a program
	boolean
	text    // a string
	profile // an array of "seconds:speed" strings
	file    // a file name
	names   // an object of strings: names mapped to names
	values  // an object of numbers and booleans
	choice  // a string naming one of a few things
)

// params lists each model's parameters.
var paramSpecs = map[string][]param{
	"hold":          nil,
	"cruise-pedals": {{"setSpeed", number}, {"kp", number}, {"ki", number}},
	"cruise-torque": {{"setSpeed", number}, {"kp", number}, {"ki", number}, {"maxTorque", positive}},
	"heading-hold":  {{"headingDeg", number}, {"setSpeed", number}, {"kp", number}},
	"exec":          {{"command", command}, {"deadlineMs", positive}, {"restart", boolean}},
	"fmu": {{"path", file}, {"inputs", names}, {"outputs", names}, {"parameters", values},
		{"inProcess", boolean}, {"restart", boolean}, {"deadlineMs", positive},
		{"interface", choice}, {"solver", choice}, {"tolerance", positive}, {"maxStep", positive}},
	"follow": {{"ego", text}, {"lead", text}, {"leadProfile", profile}, {"timeGap", positive}, {"standstill", number},
		{"kGap", positive}, {"maxSpeed", positive}, {"kp", number}, {"ki", number}},
}

// Validate checks a model's name, its parameters and, for the built-in
// controllers, that plan maps the signals they need, without starting
// anything. validate reports these findings and run refuses what has an
// error, so the two never disagree.
func Validate(name string, p Params, plan *ports.Plan) []Finding {
	specs, ok := paramSpecs[name]
	if !ok {
		msg := fmt.Sprintf("model %q: expected one of %s", name, strings.Join(Names(), ", "))
		if s := suggest.Closest(name, Names()); s != "" {
			msg = fmt.Sprintf("model %q: no such model (did you mean %q?)", name, s)
		}
		return []Finding{{Msg: msg}}
	}
	var out []Finding
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i := slices.IndexFunc(specs, func(s param) bool { return s.name == k })
		if i < 0 {
			out = append(out, Finding{Param: k, Msg: unknownParam(name, k, specs)})
			continue
		}
		if msg := specs[i].check(p[k]); msg != "" {
			out = append(out, Finding{Param: k, Msg: msg})
		}
	}
	switch name {
	case "exec":
		out = append(out, validateExec(p, plan)...)
	case "fmu":
		out = append(out, validateFMU(p, plan)...)
	}
	if err := checkWith(name, p, plan); err != nil {
		out = append(out, Finding{Msg: err.Error()})
	}
	return out
}

func unknownParam(model, key string, specs []param) string {
	if len(specs) == 0 {
		return fmt.Sprintf("model %s takes no parameters", model)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	if s := suggest.Closest(key, names); s != "" {
		return fmt.Sprintf("model %s has no parameter %q (did you mean %q?)", model, key, s)
	}
	return fmt.Sprintf("model %s has no parameter %q: expected one of %s", model, key, strings.Join(names, ", "))
}

func (s param) check(v any) string {
	switch s.kind {
	case number, positive:
		f, ok := v.(float64)
		if !ok {
			return fmt.Sprintf("expected a number, got %s", describe(v))
		}
		if s.kind == positive && !(f > 0) {
			return fmt.Sprintf("expected a number above 0, got %v", f)
		}
	case command:
		if len(argv(v)) == 0 {
			return "expected the program to run: a string such as \"python3 model.py\", or an array of strings"
		}
	case boolean:
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("expected true or false, got %s", describe(v))
		}
	case text:
		if s, ok := v.(string); !ok || s == "" {
			return fmt.Sprintf("expected a vehicle's name (its remoteObject), got %s", describe(v))
		}
	case profile:
		if _, err := parseProfile(v); err != nil {
			return strings.TrimPrefix(err.Error(), "modelParams.leadProfile: ")
		}
	case file:
		if s, ok := v.(string); !ok || s == "" {
			return fmt.Sprintf("expected the FMU's file, e.g. \"controller.fmu\" (relative to the config), got %s", describe(v))
		}
	case choice:
		if s, ok := v.(string); !ok || s == "" {
			return fmt.Sprintf("expected a name, got %s", describe(v))
		}
	case names, values:
		if _, ok := v.(map[string]any); !ok {
			if s.kind == names {
				return fmt.Sprintf("expected an object of FMU variable names and config field names, e.g. {\"throttleCmd\": \"throttle\"}, got %s", describe(v))
			}
			return fmt.Sprintf("expected an object of FMU variable names and values, e.g. {\"setSpeed\": 20}, got %s", describe(v))
		}
	}
	return ""
}

func describe(v any) string {
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

// argv is exec's command as program and arguments.
func argv(v any) []string {
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

// validateExec checks what exec needs beyond the parameters' types: a
// command at all, a deadline inside the model timeout, and (a warning only,
// since the run may happen on another machine) a program that can be found.
func validateExec(p Params, plan *ports.Plan) []Finding {
	var out []Finding
	cmd, ok := p["command"]
	if !ok {
		return []Finding{{Param: "command", Msg: "missing: exec needs the program to run, e.g. \"command\": [\"python3\", \"model.py\"]"}}
	}
	if d, ok := p["deadlineMs"].(float64); ok && d > 0 && d/1000 > plan.ModelTimeout {
		out = append(out, Finding{Param: "deadlineMs", Msg: fmt.Sprintf("%v ms is longer than the model timeout (%v ms, beamng.modelTimeoutMs): expected a shorter deadline", d, plan.ModelTimeout*1000)})
	}
	if args := argv(cmd); len(args) > 0 {
		prog := args[0]
		if strings.ContainsRune(prog, filepath.Separator) && !filepath.IsAbs(prog) && plan.Source != "" {
			prog = filepath.Join(filepath.Dir(plan.Source), prog)
		}
		if _, err := exec.LookPath(prog); err != nil {
			out = append(out, Finding{Param: "command", Warning: true,
				Msg: fmt.Sprintf("%q is not a program found on this machine (%v); run will fail to start it unless it exists where run runs", args[0], err)})
		}
	}
	return out
}

package models

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"beamconnect/fmu"
	"beamconnect/ports"
)

// fmuCheck is an FMU model's configuration, checked: what validate reports
// and what New builds from, so the two never disagree.
type fmuCheck struct {
	file   string // the .fmu, resolved against the config's folder
	desc   *fmu.Description
	bind   *fmuBinding
	params []fmuParam // parameters to set after instantiation (inputs' values are in bind)
}

// fmuParam is a parameter modelParams.parameters sets.
type fmuParam struct {
	v     *fmu.Variable
	value float64
}

// fmuFile is modelParams.path resolved against the config's folder.
func fmuFile(p Params, plan *ports.Plan) string {
	path, _ := p["path"].(string)
	if path != "" && !filepath.IsAbs(path) && plan.Source != "" {
		path = filepath.Join(filepath.Dir(plan.Source), path)
	}
	return path
}

// checkFMU opens the FMU and checks everything the config asks of it. The
// check is nil when the FMU itself cannot be used.
func checkFMU(p Params, plan *ports.Plan) (*fmuCheck, []Finding) {
	if v, ok := p["path"]; ok {
		if s, ok := v.(string); !ok || s == "" {
			return nil, nil // the parameter's type is reported already
		}
	} else {
		return nil, []Finding{{Param: "path", Msg: "missing: the fmu model needs the FMU to run, e.g. \"path\": \"controller.fmu\" (relative to the config)"}}
	}
	c := &fmuCheck{file: fmuFile(p, plan)}
	f, err := fmu.Open(c.file)
	if err != nil {
		return nil, []Finding{{Param: "path", Msg: err.Error()}}
	}
	defer f.Close()
	if err := f.Supported(); err != nil {
		return nil, []Finding{{Param: "path", Msg: err.Error()}}
	}
	c.desc = f.Desc
	var out []Finding
	c.bind, out = bindFMU(f.Desc, p, plan)
	var pf []Finding
	c.params, pf = fmuParameters(f.Desc, p, c.bind)
	out = append(out, pf...)
	out = append(out, checkStep(f.Desc, plan.Period)...)
	if d, ok := p["deadlineMs"].(float64); ok && d > 0 && d/1000 > plan.ModelTimeout {
		out = append(out, Finding{Param: "deadlineMs", Msg: fmt.Sprintf("%v ms is longer than the model timeout (%v ms, beamng.modelTimeoutMs): expected a shorter deadline", d, plan.ModelTimeout*1000)})
	}
	return c, out
}

// validateFMU is what validate reports about an fmu model.
func validateFMU(p Params, plan *ports.Plan) []Finding {
	c, out := checkFMU(p, plan)
	if c != nil {
		out = append(out, c.bind.unboundFindings(p)...)
	}
	return out
}

// fmuParameters checks modelParams.parameters: every name a variable that
// can be set before the FMU starts (a fixed or tunable parameter, or an
// input's value), and every value of its type.
func fmuParameters(d *fmu.Description, p Params, b *fmuBinding) ([]fmuParam, []Finding) {
	raw, _ := p["parameters"].(map[string]any)
	var list []fmuParam
	var out []Finding
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		param := "parameters/" + escape(name)
		v, ok := d.Variable(name)
		if !ok {
			out = append(out, Finding{Param: param, Msg: unknownVariable(d, name, "parameter")})
			continue
		}
		if !v.Settable() {
			out = append(out, Finding{Param: param, Msg: fmt.Sprintf("the FMU's %q is a%s %s with variability %s: it cannot be set; expected a parameter (fixed or tunable) or an input", name, article(v.Causality), v.Causality, v.Variability)})
			continue
		}
		val, msg := paramValue(v, raw[name])
		if msg != "" {
			out = append(out, Finding{Param: param, Msg: msg})
			continue
		}
		if v.Causality == "input" {
			for i := range b.inputs {
				in := &b.inputs[i]
				if in.v.Name != name {
					continue
				}
				in.start = val
				if in.bound {
					out = append(out, Finding{Param: param, Warning: true,
						Msg: fmt.Sprintf("the FMU's input %q is bound to the field %s: the value given here is replaced by the field's at every message", name, in.field)})
				}
			}
			continue
		}
		list = append(list, fmuParam{v: v, value: val})
	}
	return list, out
}

// paramValue reads a parameter's value for its variable's type.
func paramValue(v *fmu.Variable, x any) (float64, string) {
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
		return 0, fmt.Sprintf("the FMU's %q is a Boolean: expected true or false, got %s", v.Name, describe(x))
	case fmu.Float64, fmu.Float32, fmu.Int32:
		f, ok := x.(float64)
		if !ok {
			return 0, fmt.Sprintf("the FMU's %q is a%s %s: expected a number, got %s", v.Name, article(v.Type), v.Type, describe(x))
		}
		if v.Kind == fmu.Int32 && (f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32) {
			return 0, fmt.Sprintf("the FMU's %q is an %s: expected a whole number, got %v", v.Name, v.Type, f)
		}
		return f, ""
	}
	return 0, fmt.Sprintf("the FMU's %q is %s: beamconnect sets Real/Float64, Float32, Integer/Int32 and Boolean parameters", v.Name, describeType(v))
}

// checkStep compares the FMU's step size with the coupling's period: the
// FMU is stepped once per BeamNG message, by the period.
func checkStep(d *fmu.Description, period float64) []Finding {
	var out []Finding
	ms := func(s float64) string { return fmt.Sprintf("%g ms", s*1000) }
	if fixed := d.CoSim.FixedInternalStepSize; fixed > 0 && !multiple(period, fixed) {
		out = append(out, Finding{Param: "path", Msg: fmt.Sprintf("the FMU computes in fixed internal steps of %s (fixedInternalStepSize); the coupling's period %s is not a multiple of it: expected a period of a whole number of its steps", ms(fixed), ms(period))})
	}
	step := d.Default.StepSize
	if step == nil || *step <= 0 {
		return out
	}
	switch {
	case !d.CoSim.VariableStep && !multiple(period, *step):
		out = append(out, Finding{Param: "path", Msg: fmt.Sprintf("the FMU's DefaultExperiment stepSize is %s and it cannot handle other step sizes (canHandleVariableCommunicationStepSize is false); the coupling steps it every %s, which is not a multiple: expected a period of a whole number of its steps", ms(*step), ms(period))})
	case period > *step*(1+1e-9) && d.CoSim.VariableStep:
		out = append(out, Finding{Param: "path", Warning: true, Msg: fmt.Sprintf("the FMU's DefaultExperiment stepSize is %s; the coupling steps it every %s, coarser than it suggests: check its results at that step size", ms(*step), ms(period))})
	}
	return out
}

// multiple reports whether a is a whole multiple of b, to rounding.
func multiple(a, b float64) bool {
	n := math.Round(a / b)
	return n >= 1 && math.Abs(a-n*b) <= 1e-9*a
}

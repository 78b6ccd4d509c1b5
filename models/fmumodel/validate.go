package fmumodel

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/ode"
	"beamconnect/models"
	"beamconnect/ports"
)

// fmuCheck is an FMU model's configuration, checked: what validate reports
// and what New builds from, so the two never disagree.
type fmuCheck struct {
	file   string // the .fmu, resolved against the config's folder
	desc   *fmu.Description
	iface  string // fmu.CoSim or fmu.ME
	bind   *fmuBinding
	params []fmuParam // numeric parameters to set after instantiation (inputs' values are in bind)
	texts  []fmi.Text // String and Binary parameters
	// every is how many messages one step of the FMU spans (1: every
	// message); step is that step's size, why says why it is not 1.
	every int
	step  float64
	why   string
	// observed are the variables recorded besides the outputs
	// (modelParams.record).
	observed []observed
	// models.Model exchange: the solver and its settings.
	method             ode.Method
	tolerance, maxStep float64
}

// fmuParam is a parameter modelParams.parameters sets.
type fmuParam struct {
	v      *fmu.Variable
	values []float64 // one per element
}

// fmuFile is modelParams.path resolved against the config's folder.
func fmuFile(p models.Params, plan *ports.Plan) string {
	path, _ := p["path"].(string)
	if path != "" && !filepath.IsAbs(path) && plan.Source != "" {
		path = filepath.Join(filepath.Dir(plan.Source), path)
	}
	return path
}

// checkFMU opens the FMU and checks everything the config asks of it. The
// check is nil when the FMU itself cannot be used.
func checkFMU(p models.Params, plan *ports.Plan) (*fmuCheck, []models.Finding) {
	if v, ok := p["path"]; ok {
		if s, ok := v.(string); !ok || s == "" {
			return nil, nil // the parameter's type is reported already
		}
	} else {
		return nil, []models.Finding{{Param: "path", Msg: "missing: the fmu model needs the FMU to run, e.g. \"path\": \"controller.fmu\" (relative to the config)"}}
	}
	c := &fmuCheck{file: fmuFile(p, plan), every: 1, step: plan.Period}
	f, err := fmu.Open(c.file)
	if err != nil {
		return nil, []models.Finding{{Param: "path", Msg: err.Error()}}
	}
	defer f.Close()
	want, _ := p["interface"].(string)
	if err := f.SupportedAs(want); err != nil {
		param := "path"
		if want != "" {
			param = "interface"
		}
		return nil, []models.Finding{{Param: param, Msg: err.Error()}}
	}
	c.desc = f.Desc
	c.iface, _ = f.Desc.Interface(want)
	var out []models.Finding
	c.bind, out = bindFMU(f.Desc, p, plan)
	out = append(out, c.parameters(p)...)
	out = append(out, c.checkRecord(p)...)
	if c.iface == fmu.ME {
		out = append(out, c.solver(p, plan)...)
	} else {
		out = append(out, c.checkStep(plan.Period)...)
		out = append(out, c.checkTimeout(plan)...)
	}
	for _, key := range []string{"solver", "tolerance", "maxStep"} {
		if _, ok := p[key]; ok && c.iface != fmu.ME {
			out = append(out, models.Finding{Param: key, Msg: "the FMU runs as co-simulation, with its own solver: modelParams." + key + " is for a model exchange FMU (set \"interface\": \"ModelExchange\" to integrate it with beamconnect's)"})
		}
	}
	out = append(out, models.CheckDeadline(p, plan)...)
	return c, out
}

// validateFMU is what validate reports about an fmu model.
func validateFMU(p models.Params, plan *ports.Plan) []models.Finding {
	c, out := checkFMU(p, plan)
	if c != nil {
		out = append(out, c.bind.unboundFindings(p)...)
	}
	return out
}

// parameters checks modelParams.parameters: every name a variable that
// can be set before the FMU starts (a fixed or tunable parameter, a
// structural parameter, or an input's value), and every value of its type,
// within its type's range and the variable's min and max, an enumeration's
// an item's.
func (c *fmuCheck) parameters(p models.Params) []models.Finding {
	d, b := c.desc, c.bind
	raw, _ := p["parameters"].(map[string]any)
	var out []models.Finding
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		param := "parameters/" + escape(name)
		v, ok := d.Variable(name)
		if !ok {
			out = append(out, models.Finding{Param: param, Msg: unknownVariable(d, name, "parameter")})
			continue
		}
		if !v.Settable() {
			out = append(out, models.Finding{Param: param, Msg: fmt.Sprintf("the FMU's %q is a%s %s with variability %s: it cannot be set; expected a parameter (fixed or tunable) or an input", name, article(v.Causality), v.Causality, v.Variability)})
			continue
		}
		if v.Kind == fmu.Unsupported {
			out = append(out, models.Finding{Param: param, Msg: fmt.Sprintf("the FMU's %q is %s: beamconnect sets numbers, Booleans, enumerations, Strings and Binaries", name, describeType(v))})
			continue
		}
		n := 1
		if v.Array {
			ds, err := dims(d, v, raw)
			if err != nil {
				out = append(out, models.Finding{Param: param, Msg: err.Error()})
				continue
			}
			n = len(elems(v, ds))
		}
		nums, texts, msg := paramValues(v, n, raw[name])
		if msg != "" {
			out = append(out, models.Finding{Param: param, Msg: msg})
			continue
		}
		if !v.Kind.Numeric() {
			c.texts = append(c.texts, fmi.Text{VR: v.VR, Name: v.Name, Binary: v.Kind == fmu.Binary, Values: texts})
			continue
		}
		if v.Causality == "input" {
			for i := range b.inputs {
				in := &b.inputs[i]
				if in.v != v {
					continue
				}
				e := i - firstOf(b.inputs, v)
				in.start = nums[e]
				if in.bound {
					out = append(out, models.Finding{Param: param, Warning: true,
						Msg: fmt.Sprintf("the FMU's input %q is bound to the field %s: the value given here is replaced by the field's at every message", in.name, in.field)})
				}
			}
			continue
		}
		c.params = append(c.params, fmuParam{v: v, values: nums})
	}
	return out
}

// firstOf is where v's elements begin among ports.
func firstOf(list []fmuPort, v *fmu.Variable) int {
	for i := range list {
		if list[i].v == v {
			return i
		}
	}
	return -1
}

// solver reads a model exchange FMU's solver settings: the method, the
// relative tolerance (default: the FMU's DefaultExperiment tolerance, or
// 1e-6) and the largest step.
func (c *fmuCheck) solver(p models.Params, plan *ports.Plan) []models.Finding {
	var out []models.Finding
	if name, ok := p["solver"].(string); ok {
		m, err := ode.ParseMethod(name)
		if err != nil {
			out = append(out, models.Finding{Param: "solver", Msg: err.Error()})
		}
		c.method = m
	}
	c.tolerance = 1e-6
	if t := c.desc.Default.Tolerance; t != nil && *t > 0 {
		c.tolerance = *t
	}
	if t, ok := p["tolerance"].(float64); ok {
		if t >= 1 {
			out = append(out, models.Finding{Param: "tolerance", Msg: fmt.Sprintf("%v is a relative tolerance of %v %%: expected a number below 1, e.g. 1e-6", t, t*100)})
		}
		c.tolerance = t
	}
	if m, ok := p["maxStep"].(float64); ok {
		c.maxStep = m
		if m > plan.Period*(1+1e-9) {
			out = append(out, models.Finding{Param: "maxStep", Warning: true, Msg: fmt.Sprintf("%g s is longer than the coupling's period (%g s): steps end at every message anyway", m, plan.Period)})
		}
	}
	return out
}

// checkStep finds how the coupling steps a co-simulation FMU: once a
// message when it can; but an FMU with a fixed internal step (FMI 3.0's
// fixedInternalStepSize) or a fixed step size it cannot change (no
// canHandleVariableCommunicationStepSize, its DefaultExperiment's stepSize)
// needs a communication step that is a whole number of its steps, as FMI
// 3.0 asks of an importer. Then it is stepped every k-th message, k the
// fewest periods that make a whole number of its steps, its outputs held
// in between (multi-rate).
func (c *fmuCheck) checkStep(period float64) []models.Finding {
	d := c.desc
	var out []models.Finding
	ms := func(s float64) string { return fmt.Sprintf("%g ms", s*1000) }
	step, what := 0.0, ""
	switch st := d.Default.StepSize; {
	case d.CoSim.FixedInternalStepSize > 0:
		step, what = d.CoSim.FixedInternalStepSize, "its fixed internal step (fixedInternalStepSize)"
	case st != nil && *st > 0 && !d.CoSim.VariableStep:
		step, what = *st, "its DefaultExperiment stepSize, the only step size it takes (canHandleVariableCommunicationStepSize is false)"
	}
	if step > 0 {
		k, ok := periodsFor(period, step)
		if !ok {
			return append(out, models.Finding{Param: "path", Msg: fmt.Sprintf("the FMU steps by %s, %s; no whole number of the coupling's periods of %s (up to %d) is a whole number of its steps: expected a period that is", ms(step), what, ms(period), maxEvery)})
		}
		c.every, c.step = k, float64(k)*period
		if k > 1 {
			c.why = fmt.Sprintf("%s of %s", what, ms(step))
		}
		return out
	}
	if st := d.Default.StepSize; st != nil && *st > 0 && period > *st*(1+1e-9) {
		out = append(out, models.Finding{Param: "path", Warning: true, Msg: fmt.Sprintf("the FMU's DefaultExperiment stepSize is %s; the coupling steps it every %s, coarser than it suggests: check its results at that step size", ms(*st), ms(period))})
	}
	return out
}

// checkTimeout warns when the FMU is stepped less often than every
// message (a step of its own) and the model timeout is shorter than that
// step: each of its steps computes that much simulation, and one that takes
// longer than the timeout, as it may, is a fault. (A timeout shorter than
// BeamNG's period is the config's warning.)
func (c *fmuCheck) checkTimeout(plan *ports.Plan) []models.Finding {
	t := plan.ModelTimeout
	if c.every <= 1 || t <= 0 || t >= c.step {
		return nil
	}
	ms := func(s float64) string { return fmt.Sprintf("%g ms", math.Round(s*1e6)/1e3) }
	return []models.Finding{{Param: "path", Warning: true, Msg: fmt.Sprintf(
		"the FMU is stepped every %d messages, %s at a time, for %s; the model timeout, %s (%s), is shorter than that step: one that takes longer is a fault, and BeamNG gets neutral controls for its message; expected a model timeout of at least %s (beamng.modelTimeoutMs)",
		c.every, ms(c.step), c.why, ms(t), plan.ModelTimeoutFrom, ms(c.step))}}
}

// maxEvery bounds k: an FMU stepped less often than every 10 000 messages
// is not one to couple at this period.
const maxEvery = 10000

// periodsFor is the fewest periods whose sum is a whole number of steps.
func periodsFor(period, step float64) (int, bool) {
	for k := 1; k <= maxEvery; k++ {
		if multiple(float64(k)*period, step) {
			return k, true
		}
	}
	return 0, false
}

// multiple reports whether a is a whole multiple of b, to rounding.
func multiple(a, b float64) bool {
	n := math.Round(a / b)
	return n >= 1 && math.Abs(a-n*b) <= 1e-9*a
}

// notes say how the FMU runs: its interface and step, for compile and the
// summary.
func (c *fmuCheck) notes() []string {
	d := c.desc
	name := filepath.Base(c.file)
	if c.iface == fmu.ME {
		max := "the period"
		if c.maxStep > 0 {
			max = fmt.Sprintf("%g s", c.maxStep)
		}
		return []string{fmt.Sprintf("%s: FMI %s model exchange, integrated by beamconnect (%v, relative tolerance %g, steps of at most %s; %d continuous states and %d event indicators in its description)",
			name, d.FMIVersion, c.method, c.tolerance, max, d.States, d.EventIndicators)}
	}
	note := fmt.Sprintf("%s: FMI %s co-simulation, stepped at every message", name, d.FMIVersion)
	if c.every > 1 {
		note = fmt.Sprintf("%s: FMI %s co-simulation, stepped every %d messages by %g s (%s), its outputs held in between (multi-rate)",
			name, d.FMIVersion, c.every, c.step, c.why)
	}
	return []string{note}
}

// Describe says how an FMU model would run with params on plan,
// without starting it: a line or two for compile (the FMU's interface and
// step).
func Describe(params models.Params, plan *ports.Plan) []string {
	c, findings := checkFMU(params, plan)
	for _, f := range findings {
		if !f.Warning {
			return nil
		}
	}
	if c == nil {
		return nil
	}
	return c.notes()
}

// fmiParams are the parameters as fmi wants them: variables and their
// values, one per element.
func (c *fmuCheck) fmiParams() ([]fmi.Var, []float64) {
	var vars []fmi.Var
	var vals []float64
	for _, p := range c.params {
		fv := fmiVar(p.v)
		if p.v.Array {
			fv.N = len(p.values)
		}
		vars, vals = append(vars, fv), append(vals, p.values...)
	}
	return vars, vals
}

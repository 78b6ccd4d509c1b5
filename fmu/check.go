package fmu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one way an FMU breaks a rule of the FMI standard that
// masters hold it to when they load it: not only its XML Schema, but the
// rules of the standard's text (one independent variable, a complete
// ModelStructure, the functions its binaries must export…).
type Problem struct {
	File string // modelDescription.xml, a binary (binaries/linux64/x.so), or the archive
	Line int    // the line in File, 0 when it is the file as a whole
	Text string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Text)
	}
	return p.File + ": " + p.Text
}

const descFile = "modelDescription.xml"

// CheckDescription checks a modelDescription.xml against the rules of the
// FMI 2.0 and 3.0 standards that masters check at load time. It returns
// every problem it finds, in the order of the file; none when it passes.
func CheckDescription(data []byte) []Problem {
	out, _ := checkDescription(data)
	return out
}

// checkDescription is CheckDescription, and the description as it read
// it (nil when it could not).
func checkDescription(data []byte) ([]Problem, *mdModel) {
	c := &checker{}
	m, err := readForCheck(data)
	if err != nil {
		return []Problem{{File: descFile, Text: "cannot be read: " + err.Error()}}, nil
	}
	if _, err := ParseDescription(data); err != nil {
		// What beamconnect refuses to read (a name twice, a value
		// reference that is no number…) is a problem as the standard
		// sees it too.
		c.add(0, "%s", strings.TrimPrefix(err.Error(), descFile+": "))
	}
	c.m = m
	c.byVR = map[string][]int{}
	for i, v := range m.vars {
		c.byVR[strings.TrimSpace(v.vr)] = append(c.byVR[strings.TrimSpace(v.vr)], i)
	}
	c.model()
	for i := range m.vars {
		c.variable(&m.vars[i])
	}
	c.independent()
	c.valueReferences()
	c.structure()
	slices.SortStableFunc(c.out, func(a, b Problem) int { return a.Line - b.Line })
	return c.out, m
}

type checker struct {
	m    *mdModel
	byVR map[string][]int // the variables of a value reference (FMI 2.0 aliases share one)
	out  []Problem
}

func (c *checker) add(line int, format string, args ...any) {
	c.out = append(c.out, Problem{File: descFile, Line: line, Text: fmt.Sprintf(format, args...)})
}

func (c *checker) model() {
	m := c.m
	if strings.TrimSpace(m.token) == "" {
		attr := "guid"
		if m.major == 3 {
			attr = "instantiationToken"
		}
		c.add(m.rootLine, "<fmiModelDescription> has no %s: the FMU's binary is instantiated with it", attr)
	}
	if len(m.interfaces) == 0 {
		c.add(m.rootLine, "no <CoSimulation>, <ModelExchange> or <ScheduledExecution> element: the FMU has no interface a master can use")
	}
	switch m.naming {
	case "", "flat", "structured":
	default:
		c.add(m.rootLine, "variableNamingConvention %q: expected flat or structured", m.naming)
	}
}

// legal lists, for each variability, the causalities it may have (both
// standards' table of causality and variability; structuralParameter is
// FMI 3.0's).
var legal = map[string][]string{
	"constant":   {"output", "local"},
	"fixed":      {"parameter", "calculatedParameter", "structuralParameter", "local"},
	"tunable":    {"parameter", "calculatedParameter", "structuralParameter", "local"},
	"discrete":   {"input", "output", "local"},
	"continuous": {"input", "output", "local", "independent"},
}

// initials is the standards' table of initial: for a causality and
// variability, the default and the values allowed ("" where initial must
// not be given).
func initials(major int, causality, variability string) (def string, allowed []string) {
	switch {
	case causality == "independent":
		return "", nil
	case causality == "input":
		if major == 2 {
			return "", nil
		}
		return "exact", []string{"exact"}
	case variability == "constant":
		return "exact", []string{"exact"}
	case causality == "parameter" || causality == "structuralParameter":
		return "exact", []string{"exact"}
	case causality == "calculatedParameter" || variability == "fixed" || variability == "tunable":
		return "calculated", []string{"approx", "calculated"}
	}
	return "calculated", []string{"exact", "approx", "calculated"} // outputs and locals, discrete or continuous
}

// initial is the variable's initial, given or by default.
func (c *checker) initial(v *mdVar) string {
	if v.hasInitial {
		return v.initial
	}
	def, _ := initials(c.m.major, v.causality, v.variability)
	return def
}

var types2 = []string{"Real", "Integer", "Boolean", "String", "Enumeration"}

func (c *checker) variable(v *mdVar) {
	m := c.m
	who := fmt.Sprintf("variable %q", v.name)
	if m.major == 2 && !slices.Contains(types2, v.typ) {
		return // not exactly one type: ParseDescription says so
	}
	clock := v.typ == "Clock"
	if v.variability == "continuous" && !v.float() && !clock {
		c.add(v.line, `%s: variability="continuous" but its type is %s: only %s variables may be continuous (the default for the others is discrete)`,
			who, v.typ, orFloat(m.major))
	}
	switch {
	case clock:
		if v.causality != "input" && v.causality != "output" && v.causality != "local" {
			c.add(v.line, `%s: a Clock has causality="%s": expected input or output`, who, v.causality)
		}
	case !slices.Contains(legal[v.variability], v.causality) || v.causality == "structuralParameter" && m.major == 2:
		if _, known := legal[v.variability]; known {
			c.add(v.line, `%s: causality="%s" with variability="%s" is not allowed: %s may be %s`,
				who, v.causality, v.variability, v.variability, strings.Join(causalities(m.major, v.variability), ", "))
		}
	default:
		def, allowed := initials(m.major, v.causality, v.variability)
		switch {
		case v.hasInitial && len(allowed) == 0:
			c.add(v.line, `%s: causality="%s" takes no initial attribute, but it has initial="%s"`, who, v.causality, v.initial)
		case v.hasInitial && !slices.Contains(allowed, v.initial):
			c.add(v.line, `%s: initial="%s" is not allowed for causality="%s" and variability="%s": expected %s (the default is %s)`,
				who, v.initial, v.causality, v.variability, strings.Join(allowed, " or "), def)
		}
		c.start(v, who)
	}
	c.unit(v, who)
	if v.declaredType != "" {
		if _, ok := m.types[v.declaredType]; !ok {
			c.add(v.line, "%s: declaredType %q is no type of <TypeDefinitions>", who, v.declaredType)
		}
	} else if v.typ == "Enumeration" {
		c.add(v.line, "%s: an Enumeration needs a declaredType naming its items", who)
	}
	if v.hasDerivative {
		c.derivativeOf(v, who)
	}
	for _, d := range v.dims {
		c.dimension(v, who, d)
	}
	if m.naming == "structured" {
		if why := structuredName(v.name); why != "" {
			c.add(v.line, "%s: not a name of variableNamingConvention=\"structured\": %s", who, why)
		}
	} else if strings.ContainsAny(v.name, "\r\n\t") {
		c.add(v.line, "%s: a name may not hold a carriage return, a line feed or a tab", who)
	}
}

func orFloat(major int) string {
	if major == 2 {
		return "Real"
	}
	return "Float32 and Float64"
}

func causalities(major int, variability string) []string {
	var out []string
	for _, c := range legal[variability] {
		if major == 3 || c != "structuralParameter" {
			out = append(out, c)
		}
	}
	return out
}

// start checks that a start value is there where the standard requires
// one, and not where it forbids one.
func (c *checker) start(v *mdVar, who string) {
	init := c.initial(v)
	switch {
	case v.causality == "independent" && v.hasStart:
		c.add(v.line, "%s: the independent variable has a start value: it must not (its value is the master's start time, then its time)", who)
	case init == "calculated" && v.hasStart:
		c.add(v.line, `%s: initial="calculated" (%s) with a start value: a calculated variable has none`, who, given(v))
	case (init == "exact" || init == "approx" || v.causality == "input") && !v.hasStart:
		why := `initial="` + init + `"` + " (" + given(v) + ")"
		if v.causality == "input" {
			why = `causality="input"`
		}
		c.add(v.line, "%s: no start value, which %s requires", who, why)
	}
}

func given(v *mdVar) string {
	if v.hasInitial {
		return "given"
	}
	return "the default for " + v.causality + " and " + v.variability
}

func (c *checker) unit(v *mdVar, who string) {
	unit := v.unit
	if unit == "" && v.declaredType != "" {
		unit = c.m.types[v.declaredType].unit
	}
	if unit == "" {
		if v.displayUnit != "" {
			c.add(v.line, "%s: displayUnit %q but no unit", who, v.displayUnit)
		}
		return
	}
	displays, ok := c.m.units[unit]
	if !ok {
		c.add(v.line, "%s: unit %q is not defined in <UnitDefinitions>", who, unit)
		return
	}
	if v.displayUnit != "" && !slices.Contains(displays, v.displayUnit) {
		c.add(v.line, "%s: displayUnit %q is no <DisplayUnit> of unit %q", who, v.displayUnit, unit)
	}
}

// ref finds the variable a reference names: FMI 2.0 an index into
// ModelVariables from 1, FMI 3.0 a value reference.
func (c *checker) ref(s string) (*mdVar, bool) {
	s = strings.TrimSpace(s)
	if c.m.major == 2 {
		i, err := strconv.Atoi(s)
		if err != nil || i < 1 || i > len(c.m.vars) {
			return nil, false
		}
		return &c.m.vars[i-1], true
	}
	if is := c.byVR[s]; len(is) > 0 {
		return &c.m.vars[is[0]], true
	}
	return nil, false
}

// refName says what kind of reference the version uses.
func (c *checker) refName() string {
	if c.m.major == 2 {
		return "index"
	}
	return "valueReference"
}

func (c *checker) derivativeOf(v *mdVar, who string) {
	state, ok := c.ref(v.derivative)
	switch {
	case !ok:
		c.add(v.line, "%s: derivative=%q names no variable (%s)", who, v.derivative, withArticle(c.refName()))
	case !state.float():
		c.add(v.line, "%s: derivative=%q names %q, %s: a state is of a floating-point type", who, v.derivative, state.name, withArticle(state.typ))
	}
}

func (c *checker) dimension(v *mdVar, who string, d mdDimension) {
	if d.vr == "" {
		return
	}
	p, ok := c.ref(d.vr)
	switch {
	case !ok:
		c.add(v.line, "%s: a <Dimension> refers to valueReference %s, which no variable has", who, d.vr)
	case p.causality != "structuralParameter" && p.variability != "constant":
		c.add(v.line, "%s: a <Dimension> refers to %q, which is neither a structural parameter nor a constant", who, p.name)
	case p.typ != "UInt64":
		c.add(v.line, "%s: a <Dimension> refers to %q, %s: a dimension's structural parameter is a UInt64", who, p.name, withArticle(p.typ))
	}
}

// independent checks the independent variable: FMI 3.0 requires exactly
// one, FMI 2.0 allows at most one; a floating-point type.
func (c *checker) independent() {
	var found []*mdVar
	for i := range c.m.vars {
		if v := &c.m.vars[i]; v.causality == "independent" {
			found = append(found, v)
		}
	}
	switch {
	case len(found) == 0 && c.m.major == 3:
		c.add(c.m.endLine, `no variable has causality="independent": FMI 3.0 requires exactly one, the independent variable (usually time, a Float64 without a start)`)
	case len(found) > 1:
		c.add(found[1].line, "variable %q: a second independent variable (the first is %q): there is one at most", found[1].name, found[0].name)
	}
	for _, v := range found {
		if !v.float() {
			c.add(v.line, "variable %q: the independent variable is %s: it must be of a floating-point type", v.name, withArticle(v.typ))
		}
	}
}

// valueReferences checks that no two variables share a value reference,
// except FMI 2.0's aliases, which must then share a type.
func (c *checker) valueReferences() {
	for _, is := range c.byVR {
		if len(is) < 2 {
			continue
		}
		first := &c.m.vars[is[0]]
		for _, i := range is[1:] {
			v := &c.m.vars[i]
			switch {
			case c.m.major == 3:
				c.add(v.line, "variable %q: valueReference %s is %q's too: each variable has a value reference of its own", v.name, v.vr, first.name)
			case v.typ != first.typ:
				c.add(v.line, "variable %q: valueReference %s is %q's too, but %q is %s and %q %s: an alias has its variable's type",
					v.name, v.vr, first.name, v.name, withArticle(v.typ), first.name, withArticle(first.typ))
			}
		}
	}
}

// withArticle puts a or an before a word: an Integer, a UInt64.
func withArticle(word string) string {
	if word != "" && strings.ContainsRune("AEIOaeio", rune(word[0])) || strings.HasPrefix(word, "Unk") {
		return "an " + word
	}
	return "a " + word
}

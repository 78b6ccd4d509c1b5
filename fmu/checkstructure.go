package fmu

import (
	"fmt"
	"slices"
	"strings"
)

// structure checks ModelStructure: its Outputs are exactly the outputs,
// its state derivatives are derivatives, its InitialUnknowns exactly the
// unknowns of initialization, and what each entry depends on exists.
func (c *checker) structure() {
	s := &c.m.structure
	outputs := "Outputs"
	derivs, initial := "Derivatives", "InitialUnknowns"
	if c.m.major == 3 {
		outputs, derivs, initial = "Output", "ContinuousStateDerivative", "InitialUnknown"
	}
	listed, _ := c.entries(outputs, s.outputs)
	for i := range c.m.vars {
		v := &c.m.vars[i]
		_, in := listed[v]
		switch {
		case v.causality == "output" && !in:
			c.add(v.line, "variable %q is an output, but ModelStructure's %s do not list it: they list every output", v.name, plural(outputs))
		case v.causality != "output" && in:
			c.add(listed[v], "ModelStructure's %s list %q, which is no output (its causality is %s)", plural(outputs), v.name, v.causality)
		}
	}
	states, order := c.entries(derivs, s.derivatives)
	var stateVars []*mdVar
	for _, v := range order {
		if !v.hasDerivative {
			c.add(states[v], "ModelStructure's %s list %q, which is no derivative (it has no derivative attribute naming its state)", plural(derivs), v.name)
			continue
		}
		if state, ok := c.ref(v.derivative); ok {
			stateVars = append(stateVars, state)
		}
	}
	c.entries("ClockedState", s.clockedStates)
	c.entries("EventIndicator", s.eventIndicators)

	// The unknowns of initialization: the outputs and the states and
	// derivatives whose initial is approx or calculated, and the
	// calculated parameters.
	want := map[*mdVar]string{}
	computed := func(v *mdVar) bool {
		i := c.initial(v)
		return i == "approx" || i == "calculated"
	}
	for i := range c.m.vars {
		v := &c.m.vars[i]
		switch {
		case v.causality == "output" && computed(v) && v.typ != "Clock" && !v.hasClocks:
			want[v] = fmt.Sprintf(`an output with initial="%s"`, c.initial(v))
		case v.causality == "calculatedParameter":
			want[v] = "a calculated parameter"
		}
	}
	for _, v := range order {
		if computed(v) {
			want[v] = fmt.Sprintf(`a state derivative with initial="%s"`, c.initial(v))
		}
	}
	for _, v := range stateVars {
		if computed(v) {
			want[v] = fmt.Sprintf(`a continuous state with initial="%s"`, c.initial(v))
		}
	}
	got, _ := c.entries(initial, s.initialUnknowns)
	for i := range c.m.vars {
		v := &c.m.vars[i]
		why, wanted := want[v]
		line, listed := got[v]
		switch {
		case wanted && !listed:
			c.add(v.line, "variable %q is %s, but ModelStructure's %s do not list it: they list every unknown of initialization (outputs, states and derivatives that are calculated or approximate, and calculated parameters)",
				v.name, why, plural(initial))
		case listed && !wanted:
			c.add(line, "ModelStructure's %s list %q, which is no unknown of initialization (%s): they list exactly the outputs, states and derivatives that are calculated or approximate, and the calculated parameters",
				plural(initial), v.name, c.whatIs(v))
		}
	}
}

func plural(element string) string {
	if strings.HasSuffix(element, "s") {
		return element
	}
	return element + "s"
}

// whatIs says what a variable is, for a problem that says it should not
// be where it is.
func (c *checker) whatIs(v *mdVar) string {
	s := v.causality + ", " + v.variability
	if v.causality != "input" && v.causality != "independent" {
		s += `, initial="` + c.initial(v) + `"`
	}
	return s
}

// entries reads a list of ModelStructure: the variables it names, each
// with its line, and in its order; an entry that names no variable or a
// dependency that names none is a problem.
func (c *checker) entries(element string, list []mdUnknown) (map[*mdVar]int, []*mdVar) {
	out := map[*mdVar]int{}
	var order []*mdVar
	for _, u := range list {
		v, ok := c.ref(u.ref)
		if !ok {
			c.add(u.line, "ModelStructure: %s %s=%q names no variable", withArticle(element), c.refName(), u.ref)
			continue
		}
		if _, twice := out[v]; twice {
			c.add(u.line, "ModelStructure's %s list %q twice", plural(element), v.name)
			continue
		}
		out[v] = u.line
		order = append(order, v)
		deps := strings.Fields(u.dependencies)
		for _, d := range deps {
			if _, ok := c.ref(d); !ok {
				c.add(u.line, "ModelStructure: %q depends on %s %s, which names no variable", v.name, c.refName(), d)
			}
		}
		kinds := strings.Fields(u.kinds)
		if u.kinds != "" && len(kinds) != len(deps) {
			c.add(u.line, "ModelStructure: %q has %d dependencies but %d dependenciesKind: one kind for each dependency", v.name, len(deps), len(kinds))
		}
		for _, k := range kinds {
			if !slices.Contains(dependencyKinds(c.m.major), k) {
				c.add(u.line, "ModelStructure: %q: dependenciesKind %q: expected one of %s", v.name, k, strings.Join(dependencyKinds(c.m.major), ", "))
			}
		}
	}
	return out, order
}

func dependencyKinds(major int) []string {
	if major == 2 {
		return []string{"dependent", "constant", "fixed", "tunable", "discrete"}
	}
	return []string{"independent", "constant", "fixed", "tunable", "discrete", "dependent"}
}

// structuredName checks a name against the grammar of
// variableNamingConvention="structured": identifiers (or quoted names)
// joined by dots, each with optional array indices, or der(identifier)
// and der(identifier, order). It says what is wrong, "" when nothing.
func structuredName(name string) string {
	p := &nameParser{s: name}
	if rest, ok := strings.CutPrefix(name, "der("); ok {
		p.s, p.at = rest, 4
		p.identifier()
		if p.err == "" && p.peek() == ',' {
			p.next()
			p.unsigned()
		}
		if p.err == "" && p.peek() != ')' {
			p.fail("expected ) closing der(")
		}
		p.next()
	} else {
		p.identifier()
	}
	if p.err == "" && p.s != "" {
		p.fail(fmt.Sprintf("unexpected %q", p.s[:1]))
	}
	return p.err
}

type nameParser struct {
	s   string
	at  int
	err string
}

func (p *nameParser) peek() byte {
	if p.s == "" {
		return 0
	}
	return p.s[0]
}

func (p *nameParser) next() byte {
	if p.s == "" {
		return 0
	}
	b := p.s[0]
	p.s, p.at = p.s[1:], p.at+1
	return b
}

func (p *nameParser) fail(why string) {
	if p.err == "" {
		p.err = fmt.Sprintf("%s at character %d", why, p.at+1)
	}
}

func nondigit(b byte) bool { return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
func digit(b byte) bool    { return b >= '0' && b <= '9' }

func (p *nameParser) identifier() {
	for p.err == "" {
		p.bname()
		if p.err == "" && p.peek() == '[' {
			p.next()
			p.unsigned()
			for p.err == "" && p.peek() == ',' {
				p.next()
				p.unsigned()
			}
			if p.err == "" && p.next() != ']' {
				p.fail("expected ] closing the array indices")
			}
		}
		if p.err != "" || p.peek() != '.' {
			return
		}
		p.next()
	}
}

// qchars are the characters a quoted name holds besides letters and
// digits.
const qchars = "!#$%&()*+,-./:;<>=?@[]^{}|~ "

func (p *nameParser) bname() {
	switch b := p.peek(); {
	case nondigit(b):
		for nondigit(p.peek()) || digit(p.peek()) {
			p.next()
		}
	case b == '\'':
		p.next()
		n := 0
		for p.err == "" {
			switch c := p.next(); {
			case c == 0:
				p.fail("a quoted name is not closed with '")
			case c == '\'':
				if n == 0 {
					p.fail("an empty quoted name")
				}
				return
			case c == '\\':
				if !strings.ContainsRune(`'"?\abfnrtv`, rune(p.next())) {
					p.fail(`expected an escape (\' \" \? \\ \a \b \f \n \r \t \v) after \`)
				}
			case nondigit(c) || digit(c) || strings.IndexByte(qchars, c) >= 0 || c >= 0x80:
			default:
				p.fail(fmt.Sprintf("%q cannot be in a quoted name", c))
			}
			n++
		}
	default:
		p.fail("expected a name (a letter or _ first) or a quoted name")
	}
}

func (p *nameParser) unsigned() {
	if !digit(p.peek()) {
		p.fail("expected a whole number")
		return
	}
	for digit(p.peek()) {
		p.next()
	}
}

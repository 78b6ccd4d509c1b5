package system

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"beamconnect/internal/suggest"
	"beamconnect/internal/xsd"
	"beamconnect/ssp"
)

// sources are the kinds of connector a connection takes its value from,
// and an input the one it gives it to (SSP's table of allowed connections
// between elements: an output, local, calculated parameter or constant
// feeds an input).
var sources = map[string]bool{"output": true, "local": true, "calculatedParameter": true, "constant": true}

// connections resolves every connection: both ends, which way the data
// goes, that every input has one source, and that the values fit (types,
// units, the transformation).
func (c *checker) connections(sys *ssp.System) {
	fed := map[*Connector]*xsd.Node{}
	for _, cn := range sys.Connections {
		if cn.StartElement == "" || cn.EndElement == "" {
			at := "startElement"
			if cn.StartElement != "" {
				at = "endElement"
			}
			c.attr(cn.Node, at, "a connection to the system's own connector: beamconnect runs a closed system; connect the components to each other")
			continue
		}
		if cn.Indices {
			c.at(cn.Node, false, "a connection of array elements (startIndices, endIndices): beamconnect connects scalars")
			continue
		}
		fi, from := c.end(cn.Node, cn.StartElement, cn.StartConnector, "start")
		ti, to := c.end(cn.Node, cn.EndElement, cn.EndConnector, "end")
		if from == nil || to == nil {
			continue
		}
		switch {
		case sources[to.Kind] && from.Kind == "input":
			fi, ti, from, to = ti, fi, to, from
		case from.Kind == "input" && to.Kind == "input":
			c.at(cn.Node, false, "both ends are inputs (%s, %s): a connection joins an output to an input", dotted(cn.StartElement, cn.StartConnector), dotted(cn.EndElement, cn.EndConnector))
			continue
		case sources[from.Kind] && sources[to.Kind]:
			c.at(cn.Node, false, "both ends are outputs (%s is a%s %s, %s a%s %s): a connection joins an output to an input", dotted(cn.StartElement, cn.StartConnector), article(from.Kind), from.Kind, dotted(cn.EndElement, cn.EndConnector), article(to.Kind), to.Kind)
			continue
		case !sources[from.Kind] || to.Kind != "input":
			c.at(cn.Node, false, "a connection from a%s %s to a%s %s: beamconnect connects an output (or local, calculated parameter, constant) to an input; a parameter takes its value from a parameter binding", article(from.Kind), from.Kind, article(to.Kind), to.Kind)
			continue
		}
		if fi == ti {
			c.at(cn.Node, false, "the connection joins %s to itself: beamconnect connects one component's output to another component's input (a feedback within one FMU belongs inside it); expected another component at one end", c.s.Components[fi].label())
			continue
		}
		if first, ok := fed[to]; ok {
			c.at(cn.Node, false, "%s.%s is fed by another connection too (line %d): an input takes one", c.s.Components[ti].Name, to.Name, first.Pos.Line)
			continue
		}
		fed[to] = cn.Node
		l := &Link{From: fi, To: ti, FromConn: from, ToConn: to, Transform: cn.Transform, Node: cn.Node}
		if !c.fits(l, cn) {
			continue
		}
		c.s.Links = append(c.s.Links, l)
	}
}

// end resolves one end of a connection: the component and its declared
// connector.
func (c *checker) end(n *xsd.Node, element, connector, which string) (int, *Connector) {
	comp, i := c.s.Component(element)
	if comp == nil {
		var names []string
		for _, o := range c.s.Components {
			names = append(names, o.Name)
		}
		msg := fmt.Sprintf("the system has no component %q", element)
		if s := suggest.Closest(element, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			msg += ": its components are " + strings.Join(names, ", ")
		}
		c.attr(n, which+"Element", "%s", msg)
		return -1, nil
	}
	if cn := comp.Connector(connector); cn != nil {
		return i, cn
	}
	var declared []string
	for _, cn := range comp.Connectors {
		declared = append(declared, cn.Name)
	}
	exists := false
	if comp.BeamNG {
		_, exists = comp.names[connector]
	} else if _, ok := comp.Desc.Variable(connector); ok {
		exists = true
	}
	msg := fmt.Sprintf("the component %q has no connector %q", element, connector)
	switch s := suggest.Closest(connector, declared); {
	case s != "":
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	case exists:
		msg += fmt.Sprintf(": declare it among the component's Connectors (%s has it; SSP wants every connector a connection names declared)", comp.label())
	case len(declared) > 0:
		msg += ": its connectors are " + strings.Join(declared, ", ")
	default:
		msg += ": it declares none"
	}
	c.attr(n, which+"Connector", "%s", msg)
	return -1, nil
}

// family is what kind of value a type holds, for what a connection may
// carry between two of them.
func family(typ string) string {
	switch typ {
	case "Real", "Float64", "Float32":
		return "float"
	case "Boolean":
		return "boolean"
	case "Enumeration":
		return "enumeration"
	case "String", "Binary", "Clock":
		return typ
	}
	return "integer"
}

// fits checks what a connection carries fits both ends, and works out
// its unit conversion.
func (c *checker) fits(l *Link, cn *ssp.Connection) bool {
	from, to := family(l.FromConn.Type), family(l.ToConn.Type)
	switch {
	case from == "String" || from == "Binary" || from == "Clock" || to == "String" || to == "Binary" || to == "Clock":
		c.at(cn.Node, false, "a connection of a %s to a%s %s: beamconnect connects numbers (Real/Float, the integer types, Boolean, Enumeration)", l.FromConn.Type, article(l.ToConn.Type), l.ToConn.Type)
		return false
	case from == "float" && (to == "integer" || to == "enumeration"):
		c.at(cn.Node, true, "a %s feeds the %s %s.%s: its value is rounded to a whole number at every step", l.FromConn.Type, l.ToConn.Type, c.s.Components[l.To].Name, l.ToConn.Name)
	case from == "float" && to == "boolean":
		c.at(cn.Node, true, "a %s feeds the Boolean %s.%s: true whenever it is not 0", l.FromConn.Type, c.s.Components[l.To].Name, l.ToConn.Name)
	}
	if t := l.Transform; t != nil {
		switch {
		case t.Kind == "Linear" && (from != "float" || to != "float"):
			c.at(t.Node, false, "a LinearTransformation is for connectors of Real, Float64 or Float32 (SSP), not %s to %s", l.FromConn.Type, l.ToConn.Type)
			return false
		case t.Kind == "Linear" && (math.IsNaN(t.Factor) || math.IsInf(t.Factor, 0) || math.IsNaN(t.Offset) || math.IsInf(t.Offset, 0)):
			c.at(t.Node, false, "a LinearTransformation of factor %v and offset %v: expected finite numbers", t.Factor, t.Offset)
			return false
		case t.Kind == "Boolean" && (from != "boolean" || to != "boolean"):
			c.at(t.Node, false, "a BooleanMappingTransformation is for Boolean connectors, not %s to %s", l.FromConn.Type, l.ToConn.Type)
			return false
		case t.Kind == "Integer" && (from != "integer" && from != "enumeration" || to != "integer" && to != "enumeration"):
			c.at(t.Node, false, "an IntegerMappingTransformation is for integer and enumeration connectors, not %s to %s", l.FromConn.Type, l.ToConn.Type)
			return false
		case t.Kind == "Enumeration":
			c.at(t.Node, false, "EnumerationMappingTransformation is not supported: map the items' values with an IntegerMappingTransformation")
			return false
		}
	}
	if cn.SuppressUnitConversion {
		return true
	}
	conv, warn, err := convert(l.FromConn.Unit, l.ToConn.Unit)
	switch {
	case err != nil:
		c.at(cn.Node, false, "%v: connect %s.%s to an input of that quantity, or set suppressUnitConversion=\"true\" and convert with a LinearTransformation", err, c.s.Components[l.From].Name, l.FromConn.Name)
		return false
	case warn != "":
		c.at(cn.Node, true, "%s", warn)
	}
	l.Units = conv
	return true
}

// apply is what the link makes of a value of its source.
func (l *Link) apply(x float64) float64 {
	x = l.Units.apply(x)
	t := l.Transform
	if t == nil {
		return x
	}
	switch t.Kind {
	case "Linear":
		return t.Factor*x + t.Offset
	case "Boolean":
		if to, ok := t.BoolMap[x != 0]; ok {
			if to {
				return 1
			}
			return 0
		}
	case "Integer":
		if to, ok := t.IntMap[int64(math.Round(x))]; ok {
			return float64(to)
		}
	}
	return x
}

// node is a connector of a component, in the graph of what depends on
// what at one instant.
type node struct {
	comp int
	conn string
}

// loopsAndOrder refuses an algebraic loop, naming it, and orders the FMU
// components along the connections.
func (c *checker) loopsAndOrder() {
	edges := map[node][]node{}
	via := map[[2]node]*Link{}
	for _, l := range c.s.Links {
		a, b := node{l.From, l.FromConn.Name}, node{l.To, l.ToConn.Name}
		edges[a] = append(edges[a], b)
		via[[2]node{a, b}] = l
	}
	for i, comp := range c.s.Components {
		if comp.BeamNG {
			continue // BeamNG's signals of a message do not depend on the controls of its reply
		}
		for _, out := range comp.Connectors {
			if out.Kind != "output" {
				continue
			}
			for _, in := range comp.Connectors {
				if in.Kind == "input" && slices.Contains(comp.Structure.Feedthrough[out.Var.Name], in.Var.Name) {
					edges[node{i, in.Name}] = append(edges[node{i, in.Name}], node{i, out.Name})
				}
			}
		}
	}
	if loop := findLoop(edges, c.s.Links); loop != nil {
		var names []string
		var first *Link
		for k, n := range loop {
			names = append(names, c.s.Components[n.comp].Name+"."+n.conn)
			if l := via[[2]node{n, loop[(k+1)%len(loop)]}]; l != nil && first == nil {
				first = l
			}
		}
		names = append(names, names[0])
		c.at(first.Node, false, "an algebraic loop: %s: each output in it depends at the same instant on the input before it (direct feedthrough, as the FMUs' model descriptions say), so no order of steps computes it; break it with a component whose outputs do not depend directly on its inputs (a delay, a filter), or remove a connection", strings.Join(names, " → "))
		return
	}
	c.order()
}

// findLoop is a cycle of the graph (its nodes in order), nil when there
// is none; the links are searched from in their order, so the same system
// names the same loop every time.
func findLoop(edges map[node][]node, links []*Link) []node {
	const (
		unseen = iota
		open
		done
	)
	state := map[node]int{}
	var stack []node
	var found []node
	var visit func(n node) bool
	visit = func(n node) bool {
		state[n] = open
		stack = append(stack, n)
		for _, m := range edges[n] {
			switch state[m] {
			case open:
				i := slices.Index(stack, m)
				found = slices.Clone(stack[i:])
				return true
			case unseen:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	for _, l := range links {
		if n := (node{l.From, l.FromConn.Name}); state[n] == unseen && visit(n) {
			return found
		}
	}
	return nil
}

// order steps the FMU components along the connections between them:
// a component after those it takes values from, in the .ssd's order
// where the connections leave it open. Where connections go round in a
// circle (which runs through a component whose output does not depend
// directly on its input: no algebraic loop), the component that comes
// first in the .ssd among those whose outputs into the circle depend on
// no input at the same instant is stepped first, and the connections into
// it carry the value of the step before (Link.Delayed).
func (c *checker) order() {
	var left []int
	for i, comp := range c.s.Components {
		if !comp.BeamNG {
			left = append(left, i)
		}
	}
	placed := map[int]int{}
	for len(left) > 0 {
		next := -1
		for _, i := range left {
			if !c.waitsFor(i, left) {
				next = i
				break
			}
		}
		if next < 0 {
			for _, i := range left {
				if c.instantFree(i, left) {
					next = i
					break
				}
			}
		}
		if next < 0 {
			next = left[0]
		}
		placed[next] = len(c.s.Order)
		c.s.Order = append(c.s.Order, next)
		left = slices.DeleteFunc(left, func(i int) bool { return i == next })
	}
	for _, l := range c.s.Links {
		if p, ok := placed[l.From]; ok {
			if q, ok := placed[l.To]; ok && p > q {
				l.Delayed = true
			}
		}
	}
}

// waitsFor reports whether component i takes a value from a component
// still to be placed.
func (c *checker) waitsFor(i int, left []int) bool {
	for _, l := range c.s.Links {
		if l.To == i && l.From != i && slices.Contains(left, l.From) {
			return true
		}
	}
	return false
}

// instantFree reports whether no output component i gives the components
// still to be placed depends directly on one of its inputs.
func (c *checker) instantFree(i int, left []int) bool {
	comp := c.s.Components[i]
	for _, l := range c.s.Links {
		if l.From != i || !slices.Contains(left, l.To) {
			continue
		}
		for _, in := range comp.Connectors {
			if in.Kind == "input" && slices.Contains(comp.Structure.Feedthrough[l.FromConn.Var.Name], in.Var.Name) {
				return false
			}
		}
	}
	return true
}

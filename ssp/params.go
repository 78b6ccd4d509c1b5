package ssp

import (
	"strings"

	"beamconnect/config"
	"beamconnect/internal/xsd"
)

// ParameterSet is a set of parameter values (an .ssv file, or one
// written inline in a binding).
type ParameterSet struct {
	File       string
	Version    string
	Name       string
	Parameters []*Parameter
	Units      map[string]*Unit
	Node       *xsd.Node
}

// Parameter is one parameter's value.
type Parameter struct {
	Name string
	// Type is its type element's name (Real, Float64, Int32, Boolean,
	// String, Enumeration, Binary…).
	Type string
	// Values are its value as written, split into an array's elements
	// (one for a scalar); Unit a Real's or Float's unit attribute.
	Values []string
	Unit   string
	Array  bool // it has Dimension elements
	Node   *xsd.Node
}

// ParameterMapping maps the names (and values) of a parameter set onto
// the parameters of what it is bound to.
type ParameterMapping struct {
	File    string
	Version string
	Entries []*MappingEntry
	Node    *xsd.Node
}

// MappingEntry maps one parameter of the set to a target's.
type MappingEntry struct {
	Source, Target         string
	SuppressUnitConversion bool
	Transform              *Transform
	Node                   *xsd.Node
}

// ParseSSV reads a parameter values file; nil and the diagnostics when it
// is not well-formed or not valid against the SSV schema.
func ParseSSV(file string, data []byte) (*ParameterSet, config.Diagnostics) {
	root, ds := parseValid(file, data, docSSV)
	if root == nil {
		return nil, ds
	}
	return readParameterSet(file, root), nil
}

// ParseSSM reads a parameter mapping file; nil and the diagnostics when
// it is not well-formed or not valid against the SSM schema.
func ParseSSM(file string, data []byte) (*ParameterMapping, config.Diagnostics) {
	root, ds := parseValid(file, data, docSSM)
	if root == nil {
		return nil, ds
	}
	return readMapping(file, root), nil
}

func readParameterSet(file string, n *xsd.Node) *ParameterSet {
	s := &ParameterSet{File: file, Node: n, Units: map[string]*Unit{}}
	s.Version, _ = n.Attr("version")
	s.Name, _ = n.Attr("name")
	for _, c := range n.Children {
		switch c.Name.Local {
		case "Parameters":
			for _, p := range c.ChildrenNamed("Parameter") {
				s.Parameters = append(s.Parameters, readParameter(p))
			}
		case "Units":
			for _, u := range c.ChildrenNamed("Unit") {
				unit := readUnit(u)
				s.Units[unit.Name] = unit
			}
		}
	}
	return s
}

func readParameter(n *xsd.Node) *Parameter {
	p := &Parameter{Node: n}
	p.Name, _ = n.Attr("name")
	for _, t := range n.Children {
		if t.Name.Local == "Dimension" {
			p.Array = true
			continue
		}
		if t.Name.Space != NSValues || !typeNames[t.Name.Local] {
			continue
		}
		p.Type = t.Name.Local
		p.Unit, _ = t.Attr("unit")
		if v, ok := t.Attr("value"); ok {
			switch p.Type {
			case "String", "Enumeration", "Binary":
				p.Values = []string{v}
			default:
				p.Values = strings.Fields(v)
			}
		}
		for _, e := range t.ChildrenNamed("Value") {
			v, _ := e.Attr("value")
			p.Values = append(p.Values, v)
		}
	}
	return p
}

func readMapping(file string, n *xsd.Node) *ParameterMapping {
	m := &ParameterMapping{File: file, Node: n}
	m.Version, _ = n.Attr("version")
	for _, e := range n.ChildrenNamed("MappingEntry") {
		me := &MappingEntry{Node: e, SuppressUnitConversion: boolAttr(e, "suppressUnitConversion")}
		me.Source, _ = e.Attr("source")
		me.Target, _ = e.Attr("target")
		me.Transform = readTransform(e)
		m.Entries = append(m.Entries, me)
	}
	return m
}

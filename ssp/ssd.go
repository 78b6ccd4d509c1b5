// Package ssp reads the files of the Modelica Association's System
// Structure and Parameterization standard (SSP 2.0, and 1.0): a system
// structure description (.ssd: components, their connectors, the
// connections between them, units, parameter bindings), parameter values
// (.ssv) and parameter mappings (.ssm), alone or packed in an .ssp
// archive. Each file is checked against the standard's XML Schemas
// (embedded, schema/) before it is read, and everything read keeps where
// it is written, so what is wrong with it is said at its file, line and
// column. What the components are (FMUs, BeamNG) is package
// package system's.
package ssp

import (
	"strconv"
	"strings"

	"beamconnect/config"
	"beamconnect/internal/xsd"
)

// The namespaces of SSP's files (the same for 1.0 and 2.0).
const (
	NSDescription = "http://ssp-standard.org/SSP1/SystemStructureDescription"
	NSCommon      = "http://ssp-standard.org/SSP1/SystemStructureCommon"
	NSValues      = "http://ssp-standard.org/SSP1/SystemStructureParameterValues"
	NSMapping     = "http://ssp-standard.org/SSP1/SystemStructureParameterMapping"
)

// SSD is a system structure description: its root system, units and
// default experiment.
type SSD struct {
	File    string // as messages name it
	Version string // 1.0 or 2.0
	Name    string
	System  *System
	Units   map[string]*Unit
	// Start and Stop are the DefaultExperiment's, nil when not given.
	Start, Stop *float64
	Node        *xsd.Node
}

// System is a system: its elements, the connections between their
// connectors, its own connectors and parameter bindings.
type System struct {
	Name        string
	Connectors  []*Connector
	Components  []*Component
	Bindings    []*Binding
	Connections []*Connection
	// Nested are the systems inside this one, SignalDictionaries its
	// signal dictionaries and their references: read only to be named.
	Nested, SignalDictionaries []*xsd.Node
	Node                       *xsd.Node
}

// Component is an atomic element of a system: an FMU, or what its MIME
// type says.
type Component struct {
	Name string
	// Type is the MIME type (default application/x-fmu-sharedlibrary),
	// Source its URI as written ("" and HasSource false when absent),
	// Implementation any, CoSimulation, ModelExchange or
	// ScheduledExecution.
	Type, Source, Implementation string
	HasSource                    bool
	Connectors                   []*Connector
	Bindings                     []*Binding
	Node                         *xsd.Node
}

// Default MIME types.
const (
	TypeFMU      = "application/x-fmu-sharedlibrary"
	TypeSSD      = "application/x-ssp-definition"
	TypeSSP      = "application/x-ssp-package"
	TypeParamSet = "application/x-ssp-parameter-set"
	TypeMapping  = "application/x-ssp-parameter-mapping"
)

// Connector is a connector of a component or system.
type Connector struct {
	Name string
	Kind string // input, output, parameter, calculatedParameter, structuralParameter, constant, local, inout, unspecified
	// Type is its type element's name (Real, Float64, Int32, Boolean…),
	// "" when it gives none; Unit the type's unit attribute; Enum an
	// Enumeration's name.
	Type, Unit, Enum string
	Array            bool // it has Dimension elements
	Node             *xsd.Node
}

// Connection joins two connectors: of the system (Element "") or of one
// of its elements.
type Connection struct {
	StartElement, StartConnector string
	EndElement, EndConnector     string
	// Indices restricts it to array elements: beamconnect refuses it.
	Indices                bool
	SuppressUnitConversion bool
	Transform              *Transform // nil: none
	Node                   *xsd.Node
}

// Transform is a connection's or a mapping's transformation of values.
type Transform struct {
	Kind           string // Linear, Boolean, Integer, Enumeration
	Factor, Offset float64
	// BoolMap, IntMap and EnumMap map a source value to its target.
	BoolMap map[bool]bool
	IntMap  map[int64]int64
	EnumMap map[string]string
	Node    *xsd.Node
}

// Unit is a unit's definition in SI base units.
type Unit struct {
	Name           string
	Exp            [8]int // kg, m, s, A, K, mol, cd, rad
	Factor, Offset float64
	Node           *xsd.Node
}

// Binding is a parameter binding: a parameter set (a file, or written
// inline) and, optionally, how its names map onto the parameters.
type Binding struct {
	Type, Source, SourceBase, Prefix string
	HasSource                        bool
	Inline                           *ParameterSet // ParameterValues written in the binding
	Mapping                          *MappingRef   // nil: none
	Node                             *xsd.Node
}

// MappingRef is a binding's parameter mapping: a file, or written inline.
type MappingRef struct {
	Type, Source, SourceBase string
	HasSource                bool
	Inline                   *ParameterMapping
	Node                     *xsd.Node
}

// Diag is a diagnostic at n's place in file.
func Diag(file string, at xsd.Pos, path string, warning bool, msg string) config.Diagnostic {
	sev := config.Error
	if warning {
		sev = config.Warning
	}
	return config.Diagnostic{File: file, Pos: config.Pos{Line: at.Line, Col: at.Col}, Path: path, Severity: sev, Msg: msg}
}

// ParseSSD reads a system structure description. The diagnostics say why
// it could not be read: not well-formed, not valid against the SSD
// schema (or an inline parameter set or mapping against theirs); the SSD
// is nil then.
func ParseSSD(file string, data []byte) (*SSD, config.Diagnostics) {
	root, ds := parseValid(file, data, docSSD)
	if root == nil {
		return nil, ds
	}
	d := &SSD{File: file, Node: root, Units: map[string]*Unit{}}
	d.Version, _ = root.Attr("version")
	d.Name, _ = root.Attr("name")
	for _, c := range root.Children {
		switch c.Name.Local {
		case "System":
			d.System = readSystem(c)
		case "Units":
			for _, u := range c.ChildrenNamed("Unit") {
				unit := readUnit(u)
				d.Units[unit.Name] = unit
			}
		case "DefaultExperiment":
			d.Start, d.Stop = floatAttr(c, "startTime"), floatAttr(c, "stopTime")
		}
	}
	// Inline parameter sets and mappings are checked against their own
	// schemas: the SSD schema takes any content there.
	for _, b := range d.System.allBindings() {
		for _, n := range []*xsd.Node{inlineRoot(b.Node, "ParameterValues"), inlineRoot(b.Mapping.node(), "")} {
			if n == nil {
				continue
			}
			kind := docSSV
			if n.Name.Space == NSMapping {
				kind = docSSM
			}
			if more := validate(file, n, kind); len(more) > 0 {
				ds = append(ds, more...)
				continue
			}
			if kind == docSSV {
				b.Inline = readParameterSet(file, n)
			} else {
				b.Mapping.Inline = readMapping(file, n)
			}
		}
	}
	if ds.Errors() > 0 {
		return nil, ds
	}
	return d, ds
}

func (m *MappingRef) node() *xsd.Node {
	if m == nil {
		return nil
	}
	return m.Node
}

// inlineRoot is the element written inside a binding's ParameterValues
// (under is that child's name) or inside a ParameterMapping (under "").
func inlineRoot(n *xsd.Node, under string) *xsd.Node {
	if n == nil {
		return nil
	}
	if under != "" {
		if n = n.Child(under); n == nil {
			return nil
		}
	}
	for _, c := range n.Children {
		if c.Name.Space == NSValues && c.Name.Local == "ParameterSet" || c.Name.Space == NSMapping && c.Name.Local == "ParameterMapping" {
			return c
		}
	}
	return nil
}

// allBindings are the system's bindings and its components'.
func (s *System) allBindings() []*Binding {
	out := append([]*Binding(nil), s.Bindings...)
	for _, c := range s.Components {
		out = append(out, c.Bindings...)
	}
	return out
}

func readSystem(n *xsd.Node) *System {
	s := &System{Node: n}
	s.Name, _ = n.Attr("name")
	for _, c := range n.Children {
		switch c.Name.Local {
		case "Connectors":
			s.Connectors = readConnectors(c)
		case "ParameterBindings":
			s.Bindings = readBindings(c)
		case "Elements":
			for _, e := range c.Children {
				switch e.Name.Local {
				case "Component":
					s.Components = append(s.Components, readComponent(e))
				case "System":
					s.Nested = append(s.Nested, e)
				case "SignalDictionaryReference":
					s.SignalDictionaries = append(s.SignalDictionaries, e)
				}
			}
		case "Connections":
			for _, e := range c.ChildrenNamed("Connection") {
				s.Connections = append(s.Connections, readConnection(e))
			}
		case "SignalDictionaries":
			s.SignalDictionaries = append(s.SignalDictionaries, c)
		}
	}
	return s
}

func readComponent(n *xsd.Node) *Component {
	c := &Component{Node: n, Type: TypeFMU, Implementation: "any"}
	c.Name, _ = n.Attr("name")
	if v, ok := n.Attr("type"); ok {
		c.Type = strings.TrimSpace(v)
	}
	c.Source, c.HasSource = n.Attr("source")
	if v, ok := n.Attr("implementation"); ok {
		c.Implementation = v
	}
	if cs := n.Child("Connectors"); cs != nil {
		c.Connectors = readConnectors(cs)
	}
	if bs := n.Child("ParameterBindings"); bs != nil {
		c.Bindings = readBindings(bs)
	}
	return c
}

// typeNames are the elements that give a connector's type.
var typeNames = map[string]bool{"Real": true, "Float64": true, "Float32": true, "Integer": true, "Int8": true, "UInt8": true,
	"Int16": true, "UInt16": true, "Int32": true, "UInt32": true, "Int64": true, "UInt64": true, "Boolean": true,
	"String": true, "Enumeration": true, "Binary": true, "Clock": true}

func readConnectors(n *xsd.Node) []*Connector {
	var out []*Connector
	for _, e := range n.ChildrenNamed("Connector") {
		c := &Connector{Node: e}
		c.Name, _ = e.Attr("name")
		c.Kind, _ = e.Attr("kind")
		for _, t := range e.Children {
			switch {
			case t.Name.Space == NSCommon && typeNames[t.Name.Local]:
				c.Type = t.Name.Local
				c.Unit, _ = t.Attr("unit")
				if t.Name.Local == "Enumeration" {
					c.Enum, _ = t.Attr("name")
				}
			case t.Name.Local == "Dimension":
				c.Array = true
			}
		}
		out = append(out, c)
	}
	return out
}

func readConnection(n *xsd.Node) *Connection {
	c := &Connection{Node: n}
	c.StartElement, _ = n.Attr("startElement")
	c.StartConnector, _ = n.Attr("startConnector")
	c.EndElement, _ = n.Attr("endElement")
	c.EndConnector, _ = n.Attr("endConnector")
	_, si := n.Attr("startIndices")
	_, ei := n.Attr("endIndices")
	c.Indices = si || ei
	c.SuppressUnitConversion = boolAttr(n, "suppressUnitConversion")
	c.Transform = readTransform(n)
	return c
}

// readTransform reads the transformation among n's children, nil when
// there is none.
func readTransform(n *xsd.Node) *Transform {
	for _, t := range n.Children {
		switch t.Name.Local {
		case "LinearTransformation":
			tr := &Transform{Kind: "Linear", Factor: 1, Node: t}
			if f := floatAttr(t, "factor"); f != nil {
				tr.Factor = *f
			}
			if o := floatAttr(t, "offset"); o != nil {
				tr.Offset = *o
			}
			return tr
		case "BooleanMappingTransformation":
			tr := &Transform{Kind: "Boolean", BoolMap: map[bool]bool{}, Node: t}
			for _, e := range t.ChildrenNamed("MapEntry") {
				tr.BoolMap[boolAttr(e, "source")] = boolAttr(e, "target")
			}
			return tr
		case "IntegerMappingTransformation":
			tr := &Transform{Kind: "Integer", IntMap: map[int64]int64{}, Node: t}
			for _, e := range t.ChildrenNamed("MapEntry") {
				s, _ := e.Attr("source")
				d, _ := e.Attr("target")
				from, err1 := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				to, err2 := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
				if err1 == nil && err2 == nil {
					tr.IntMap[from] = to
				}
			}
			return tr
		case "EnumerationMappingTransformation":
			tr := &Transform{Kind: "Enumeration", EnumMap: map[string]string{}, Node: t}
			for _, e := range t.ChildrenNamed("MapEntry") {
				s, _ := e.Attr("source")
				d, _ := e.Attr("target")
				tr.EnumMap[s] = d
			}
			return tr
		}
	}
	return nil
}

func readUnit(n *xsd.Node) *Unit {
	u := &Unit{Node: n, Factor: 1}
	u.Name, _ = n.Attr("name")
	if b := n.Child("BaseUnit"); b != nil {
		for i, name := range [8]string{"kg", "m", "s", "A", "K", "mol", "cd", "rad"} {
			if v, ok := b.Attr(name); ok {
				u.Exp[i], _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if f := floatAttr(b, "factor"); f != nil {
			u.Factor = *f
		}
		if o := floatAttr(b, "offset"); o != nil {
			u.Offset = *o
		}
	}
	return u
}

func readBindings(n *xsd.Node) []*Binding {
	var out []*Binding
	for _, e := range n.ChildrenNamed("ParameterBinding") {
		b := &Binding{Node: e, Type: TypeParamSet, SourceBase: "SSD"}
		if v, ok := e.Attr("type"); ok {
			b.Type = strings.TrimSpace(v)
		}
		b.Source, b.HasSource = e.Attr("source")
		if v, ok := e.Attr("sourceBase"); ok {
			b.SourceBase = v
		}
		b.Prefix, _ = e.Attr("prefix")
		if m := e.Child("ParameterMapping"); m != nil {
			r := &MappingRef{Node: m, Type: TypeMapping, SourceBase: "SSD"}
			if v, ok := m.Attr("type"); ok {
				r.Type = strings.TrimSpace(v)
			}
			r.Source, r.HasSource = m.Attr("source")
			if v, ok := m.Attr("sourceBase"); ok {
				r.SourceBase = v
			}
			b.Mapping = r
		}
		out = append(out, b)
	}
	return out
}

// floatAttr reads an xs:double attribute the schema has checked; nil when
// absent.
func floatAttr(n *xsd.Node, name string) *float64 {
	v, ok := n.Attr(name)
	if !ok {
		return nil
	}
	f, err := parseDouble(v)
	if err != nil {
		return nil
	}
	return &f
}

// parseDouble reads an xs:double: INF, -INF and NaN as XML Schema writes
// them.
func parseDouble(v string) (float64, error) {
	switch v = strings.TrimSpace(v); v {
	case "INF":
		v = "+Inf"
	case "-INF":
		v = "-Inf"
	}
	return strconv.ParseFloat(v, 64)
}

func boolAttr(n *xsd.Node, name string) bool {
	v, _ := n.Attr(name)
	v = strings.TrimSpace(v)
	return v == "true" || v == "1"
}

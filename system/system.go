// Package system runs a system of components wired by an SSP System
// Structure Description (.ssp, or an .ssd with its files) as the model of
// a coupling: BeamNG is one component, whose source is a beamconnect
// config and whose connectors are the config's fields under the names
// `fmu export` gives them; FMUs (co-simulation and model exchange, FMI
// 2.0 and 3.0) are the others. Connections carry an output to inputs,
// converted between units and by SSP's transformations. At every BeamNG
// message the FMUs are stepped one after another along the connections
// (Gauss–Seidel: each takes what the ones before it computed for this
// step), each at its own communication step (a whole number of BeamNG's
// periods); then BeamNG gets what the connections into it carry. Each
// FMU runs as the fmu model runs (models/fmumodel: in its own process by
// default, faults, restarts, resets, multi-rate, live tuning), so every
// guarantee of one FMU holds for each of them, and the system's reply
// carries controls only when every component computed them for this step.
//
// Load checks a system whole, as validate reports it: the files against
// SSP's schemas (package ssp), the components against what they are, the
// connections' ends, kinds, types and units, algebraic loops, parameter
// values; New runs it.
package system

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"beamconnect/config"
	"beamconnect/fmu"
	"beamconnect/internal/xsd"
	"beamconnect/ports"
	"beamconnect/ssp"
)

// Kind is the model name a system's plan carries (ports.Plan.Model).
const Kind = "system"

// TypeConfig is the MIME type of BeamNG's component: its source is a
// beamconnect config (its fragment, #NAME, one vehicle of several).
const TypeConfig = "application/x-beamconnect-config"

// System is a system checked and ready to run.
type System struct {
	Pkg  *ssp.Package
	Name string // the system's, as the .ssd names it
	// Plan is BeamNG's config compiled, its model the system (Kind) and
	// its model parameters each FMU component's parameter values, by
	// component: what a reload compares.
	Plan       *ports.Plan
	ConfigFile string // the config on disk
	Components []*Component
	Links      []*Link
	// Order is the FMU components, by index into Components, in the
	// order they are stepped.
	Order []int
	// ParamFiles are the parameter files the bindings read, on disk: a
	// change to one retunes the run.
	ParamFiles []string
}

// Component is one element of the system.
type Component struct {
	Name   string
	BeamNG bool
	// Vehicle is the vehicle a BeamNG component is (its source's
	// fragment), -1 for all of the config's.
	Vehicle int
	// For an FMU: the file on disk, its description and structure, the
	// interface it runs as ("" the FMU's default).
	File      string
	Desc      *fmu.Description
	Structure *fmu.Structure
	Interface string
	// Connectors are those the .ssd declares, resolved.
	Connectors []*Connector
	// Params are the parameter values the bindings give it (an FMU
	// variable's name → its value as modelParams.parameters takes it);
	// ParamAt where each is written.
	Params  map[string]any
	ParamAt map[string]Place
	Node    *xsd.Node
	// names is what BeamNG's component answers to (connector name →
	// port element, unit, kind).
	names map[string]beamngVar
	// digest is an FMU file's SHA-256.
	digest [32]byte
}

// Connector is a declared connector resolved against its component.
type Connector struct {
	Name, Kind string
	Type       string // the variable's type: Real, Float64, Int32, Boolean… (BeamNG's: Real)
	Unit       unit
	// Var is an FMU's variable; Elem and Input a BeamNG field's port
	// element and whether it is a control (data to BeamNG).
	Var   *fmu.Variable
	Elem  ports.Element
	Input bool
	Node  *xsd.Node
}

// Place is where something is written: a file and a place in it.
type Place struct {
	File string
	Pos  xsd.Pos
}

// Link is a connection resolved: from an output to an input, with what
// it does to the values on the way.
type Link struct {
	From, To         int // components
	FromConn, ToConn *Connector
	Units            conversion
	Transform        *ssp.Transform
	// Delayed says the link carries its source's value of the step before:
	// its source is stepped after its destination (a loop through no
	// direct dependency).
	Delayed bool
	Node    *xsd.Node
}

// checker gathers what Load finds.
type checker struct {
	s   *System
	ssd string // the .ssd's name in messages
	ds  config.Diagnostics
}

func (c *checker) at(n *xsd.Node, warning bool, format string, args ...any) {
	c.place(c.ssd, n.Pos, pathOf(n), warning, format, args...)
}

func (c *checker) attr(n *xsd.Node, attr string, format string, args ...any) {
	c.place(c.ssd, n.AttrPos(attr), pathOf(n), false, format, args...)
}

func (c *checker) place(file string, pos xsd.Pos, path string, warning bool, format string, args ...any) {
	c.ds = append(c.ds, ssp.Diag(file, pos, path, warning, fmt.Sprintf(format, args...)))
}

// pathOf says which element of the .ssd n is, for a diagnostic's path:
// Component[controller].Connector[speed].
func pathOf(n *xsd.Node) string {
	return strings.Join(pathParts(n), ".")
}

func pathParts(n *xsd.Node) []string {
	if n == nil {
		return nil
	}
	name, _ := n.Attr("name")
	switch n.Name.Local {
	case "SystemStructureDescription":
		return nil
	case "System":
		if n.Parent != nil && n.Parent.Name.Local == "SystemStructureDescription" {
			return nil // the top system: every path is in it
		}
		return append(pathParts(n.Parent), "System["+name+"]")
	case "Component", "Connector":
		return append(pathParts(n.Parent), n.Name.Local+"["+name+"]")
	case "Connection":
		s, _ := n.Attr("startElement")
		sc, _ := n.Attr("startConnector")
		e, _ := n.Attr("endElement")
		ec, _ := n.Attr("endConnector")
		return []string{"Connection[" + dotted(s, sc) + " → " + dotted(e, ec) + "]"}
	}
	return pathParts(n.Parent) // a wrapper (Elements, Connectors) or a part of an element
}

func dotted(element, connector string) string {
	if element == "" {
		return connector
	}
	return element + "." + connector
}

// Load reads and checks the system at path (an .ssp or .ssd). A System
// comes back only when nothing is in error; the diagnostics hold every
// error and warning, placed in their files. err is for a file that cannot
// be read at all. Close the System's package when done.
func Load(path string) (*System, config.Diagnostics, error) {
	pk, ds, err := ssp.Open(path)
	if err != nil || pk == nil {
		return nil, ds, err
	}
	c := &checker{s: &System{Pkg: pk, Name: pk.SSD.Name}, ssd: pk.Name(pk.SSDFile), ds: ds}
	c.check()
	sort.SliceStable(c.ds, func(i, j int) bool { return c.ds[i].File == c.ds[j].File && c.ds[i].Pos.Line < c.ds[j].Pos.Line })
	if c.ds.Errors() > 0 {
		pk.Close()
		return nil, c.ds, nil
	}
	return c.s, c.ds, nil
}

// check runs every check in turn; a later one runs only on what the
// earlier ones found usable.
func (c *checker) check() {
	sys := c.s.Pkg.SSD.System
	c.unsupported(sys)
	c.components(sys)
	if c.ds.Errors() > 0 {
		return
	}
	c.connections(sys)
	c.parameters(sys)
	if c.ds.Errors() > 0 {
		return
	}
	c.loopsAndOrder()
	c.runnable()
}

// unsupported refuses what beamconnect does not run, by name.
func (c *checker) unsupported(sys *ssp.System) {
	for _, n := range sys.Nested {
		c.at(n, false, "a system nested in the system: beamconnect runs one level of components; put its components into the top system")
	}
	for _, n := range sys.SignalDictionaries {
		c.at(n, false, "signal dictionaries are not supported: connect the components' connectors directly")
	}
	for _, cn := range sys.Connectors {
		c.at(cn.Node, true, "the system's own connector %q is not used: beamconnect runs a closed system, BeamNG inside it", cn.Name)
	}
}

// reserved are names a component may not take: they would read as a
// recording's own columns or ports.
func reserved(name string) string {
	switch {
	case strings.ContainsAny(name, ". \t"):
		return "a component's name is the first part of its columns' names (controller.demand): expected one without dots or spaces"
	case name == "model":
		return "the recording names the model's own variables so (model.NAME): expected another name"
	case len(name) > 2 && (strings.HasPrefix(name, "in") || strings.HasPrefix(name, "out")) && strings.Trim(strings.TrimPrefix(strings.TrimPrefix(name, "out"), "in"), "0123456789") == "":
		return "the recording names BeamNG's ports so (in1, out2): expected another name"
	}
	return ""
}

// display is how messages name a file of the system.
func (s *System) display(file string) string { return s.Pkg.Name(file) }

// Close removes what Load unpacked.
func (s *System) Close() error { return s.Pkg.Close() }

// Component finds a component by name.
func (s *System) Component(name string) (*Component, int) {
	for i, c := range s.Components {
		if c.Name == name {
			return c, i
		}
	}
	return nil, -1
}

// Connector finds a declared connector by name.
func (c *Component) Connector(name string) *Connector {
	for _, cn := range c.Connectors {
		if cn.Name == name {
			return cn
		}
	}
	return nil
}

func (c *Component) label() string {
	if c.BeamNG {
		return fmt.Sprintf("BeamNG's component %q", c.Name)
	}
	return fmt.Sprintf("the component %q (%s)", c.Name, filepath.Base(c.File))
}

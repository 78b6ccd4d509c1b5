package system

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"beamconnect/config"
	"beamconnect/fmu"
	"beamconnect/fmuexport"
	"beamconnect/internal/suggest"
	"beamconnect/internal/xsd"
	"beamconnect/ports"
	"beamconnect/ssp"
)

// beamngVar is one of BeamNG's fields as its component's connector.
type beamngVar struct {
	elem  ports.Element
	input bool // a control, data to BeamNG
	unit  string
	desc  string
}

// components resolves every component: BeamNG's config (one for all of
// BeamNG's components), each FMU, and their declared connectors.
func (c *checker) components(sys *ssp.System) {
	seen := map[string]bool{}
	for _, sc := range sys.Components {
		if seen[sc.Name] {
			c.attr(sc.Node, "name", "a second component named %q: expected names unique in the system", sc.Name)
			continue
		}
		seen[sc.Name] = true
		if why := reserved(sc.Name); why != "" {
			c.attr(sc.Node, "name", "the component name %q: %s", sc.Name, why)
			continue
		}
		comp := &Component{Name: sc.Name, Node: sc.Node, Vehicle: -1, Params: map[string]any{}, ParamAt: map[string]Place{}}
		ok := false
		switch {
		case !sc.HasSource:
			c.at(sc.Node, false, "the component %q has no source: beamconnect runs components it has, an FMU or BeamNG's config", sc.Name)
		case sc.Type == TypeConfig:
			ok = c.beamngComponent(sc, comp)
		case sc.Type == ssp.TypeFMU:
			ok = c.fmuComponent(sc, comp)
		case sc.Type == ssp.TypeSSD || sc.Type == ssp.TypeSSP:
			c.attr(sc.Node, "type", "the component %q is another system (%s): beamconnect runs one level of components; put its components into this system", sc.Name, sc.Type)
		default:
			c.attr(sc.Node, "type", "the component %q is of type %q: beamconnect runs FMUs (%s, the default) and BeamNG (%s, a config)", sc.Name, sc.Type, ssp.TypeFMU, TypeConfig)
		}
		if !ok {
			continue
		}
		c.connectors(sc, comp)
		c.s.Components = append(c.s.Components, comp)
	}
	if c.s.Plan == nil && c.ds.Errors() == 0 {
		c.at(sys.Node, false, "no component is BeamNG: a system beamconnect runs has one, a Component of type %q whose source is a beamconnect config (resources/rig.json)", TypeConfig)
	}
}

// beamngComponent loads the config BeamNG's component names (once for
// all of them) and the names its fields answer to.
func (c *checker) beamngComponent(sc *ssp.Component, comp *Component) bool {
	file, vehicle, err := c.s.Pkg.Resolve(sc.Source, c.s.Pkg.SSDFile)
	if err != nil {
		c.attr(sc.Node, "source", "%v", err)
		return false
	}
	comp.BeamNG = true
	if c.s.ConfigFile != "" && c.s.ConfigFile != file {
		c.attr(sc.Node, "source", "BeamNG's components name two configs (%s and %s): expected one, whose vehicles they are", c.s.display(c.s.ConfigFile), c.s.display(file))
		return false
	}
	if c.s.Plan == nil {
		cfg, err := config.Load(file)
		var ds config.Diagnostics
		switch {
		case errors.As(err, &ds):
			for _, d := range ds {
				d.File = c.s.display(d.File)
				c.ds = append(c.ds, d)
			}
			return false
		case err != nil:
			c.attr(sc.Node, "source", "BeamNG's config %s: %v", c.s.display(file), strings.TrimPrefix(err.Error(), "config: "))
			return false
		}
		for _, d := range cfg.Warnings {
			d.File = c.s.display(d.File)
			c.ds = append(c.ds, d)
		}
		plan, err := config.Compile(cfg)
		if err != nil {
			if errors.As(err, &ds) {
				for _, d := range ds {
					d.File = c.s.display(d.File)
					c.ds = append(c.ds, d)
				}
			} else {
				c.attr(sc.Node, "source", "BeamNG's config %s: %v", c.s.display(file), err)
			}
			return false
		}
		if plan.Model != "hold" {
			pos, path := cfg.Locate("/beamng/model")
			c.place(c.s.display(file), xsd.Pos{Line: pos.Line, Col: pos.Col}, path, true, "the config's model %q does not run in a system: the system's components are the model", plan.Model)
		}
		c.s.Plan, c.s.ConfigFile = plan, file
	}
	if vehicle != "" {
		v := slices.IndexFunc(c.s.Plan.Vehicles, func(v ports.Vehicle) bool { return v.Name == vehicle })
		if v < 0 || len(c.s.Plan.Vehicles) == 1 {
			var names []string
			for _, v := range c.s.Plan.Vehicles {
				names = append(names, v.Name)
			}
			msg := fmt.Sprintf("the source's #%s names no vehicle of the config: it couples %s", vehicle, strings.Join(names, ", "))
			if len(names) == 1 {
				msg = fmt.Sprintf("the source's #%s names a vehicle, but the config couples one: leave the #%s out", vehicle, vehicle)
			} else if s := suggest.Closest(vehicle, names); s != "" {
				msg += fmt.Sprintf(" (did you mean #%s?)", s)
			}
			c.attr(sc.Node, "source", "%s", msg)
			return false
		}
		comp.Vehicle = v
	}
	comp.names = beamngNames(c.s.Plan, comp.Vehicle)
	return true
}

// beamngNames are the names BeamNG's fields answer to as connectors:
// fmu export's (fmuexport.Interface), those of one vehicle without its
// name when the component is that vehicle.
func beamngNames(plan *ports.Plan, vehicle int) map[string]beamngVar {
	out := map[string]beamngVar{}
	in := fmuexport.New(plan)
	for _, v := range in.Vars {
		if v.Causality == fmuexport.Parameter {
			continue
		}
		name := v.Name
		if vehicle >= 0 {
			if v.Elem.Vehicle != vehicle {
				continue
			}
			prefix := plan.Vehicles[vehicle].Name + "."
			if i := strings.Index(name, prefix); i >= 0 && (i == 0 || name[i-1] == '.') {
				name = name[:i] + name[i+len(prefix):]
			}
		}
		out[name] = beamngVar{elem: v.Elem, input: v.Causality == fmuexport.Input, unit: v.Unit, desc: v.Description}
	}
	return out
}

// fmuComponent opens an FMU component's FMU.
func (c *checker) fmuComponent(sc *ssp.Component, comp *Component) bool {
	file, frag, err := c.s.Pkg.Resolve(sc.Source, c.s.Pkg.SSDFile)
	if err == nil && frag != "" {
		err = fmt.Errorf("%q: an FMU's source has no #fragment", sc.Source)
	}
	if err != nil {
		c.attr(sc.Node, "source", "%v", err)
		return false
	}
	f, err := fmu.Open(file)
	if err != nil {
		c.attr(sc.Node, "source", "%s", strings.ReplaceAll(err.Error(), file, c.s.display(file)))
		return false
	}
	defer f.Close()
	comp.File, comp.Desc = file, f.Desc
	if data, err := os.ReadFile(file); err == nil {
		comp.digest = sha256.Sum256(data) // a reload that brings another FMU needs a restart
	}
	switch sc.Implementation {
	case "CoSimulation":
		comp.Interface = fmu.CoSim
	case "ModelExchange":
		comp.Interface = fmu.ME
	case "ScheduledExecution":
		c.attr(sc.Node, "implementation", "ScheduledExecution needs a scheduler that activates the FMU's model partitions on clock ticks, which a coupling stepped by BeamNG's messages does not have: expected CoSimulation, ModelExchange or any")
		return false
	}
	if err := f.SupportedAs(comp.Interface); err != nil {
		attr := "source"
		if comp.Interface != "" {
			attr = "implementation"
		}
		c.attr(sc.Node, attr, "%s", strings.ReplaceAll(err.Error(), file, c.s.display(file)))
		return false
	}
	if comp.Structure, err = f.Structure(); err != nil {
		c.attr(sc.Node, "source", "%s", strings.ReplaceAll(err.Error(), file, c.s.display(file)))
		return false
	}
	return true
}

// connectors resolves a component's declared connectors against what it
// is: each a variable of the FMU (or an alias of one) or a field of
// BeamNG's, of the kind, type and unit the component says.
func (c *checker) connectors(sc *ssp.Component, comp *Component) {
	seen := map[string]bool{}
	for _, cn := range sc.Connectors {
		if seen[cn.Name] {
			c.attr(cn.Node, "name", "a second connector named %q on %s: expected names unique on a component", cn.Name, comp.label())
			continue
		}
		seen[cn.Name] = true
		if cn.Array {
			c.at(cn.Node, false, "the connector %q is an array (Dimension): beamconnect connects scalars; connect the FMU's elements by their names", cn.Name)
			continue
		}
		var r *Connector
		if comp.BeamNG {
			r = c.beamngConnector(cn, comp)
		} else {
			r = c.fmuConnector(cn, comp)
		}
		if r == nil {
			continue
		}
		r.Unit = c.declaredUnit(cn, comp, r.Unit)
		comp.Connectors = append(comp.Connectors, r)
	}
}

func (c *checker) beamngConnector(cn *ssp.Connector, comp *Component) *Connector {
	v, ok := comp.names[cn.Name]
	if !ok {
		c.attr(cn.Node, "name", "%s", c.noBeamNGField(comp, cn.Name))
		return nil
	}
	kind := "output"
	if v.input {
		kind = "input"
	}
	switch {
	case cn.Kind != kind:
		c.attr(cn.Node, "kind", "BeamNG's %s %q is an %s (%s): expected kind=%q", map[bool]string{true: "control", false: "signal"}[v.input], cn.Name, kind, map[bool]string{true: "data to BeamNG", false: "data from BeamNG"}[v.input], kind)
		return nil
	case cn.Type != "" && cn.Type != "Real" && cn.Type != "Float64":
		c.at(cn.Node, false, "BeamNG's %q is a Real (a double): expected <ssc:Real/> or <ssc:Float64/>, not %s", cn.Name, cn.Type)
		return nil
	}
	return &Connector{Name: cn.Name, Kind: kind, Type: "Real", Elem: v.elem, Input: v.input, Node: cn.Node, Unit: c.unitNamed(v.unit, nil)}
}

// noBeamNGField says a connector names no field of BeamNG's component.
func (c *checker) noBeamNGField(comp *Component, name string) string {
	names := slices.Sorted(maps.Keys(comp.names))
	msg := fmt.Sprintf("BeamNG's config has no field %q", name)
	if s := suggest.Closest(name, names); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(names) > 12 {
		names = append(names[:12], "…")
	}
	return msg + ": its fields are " + strings.Join(names, ", ") + " (as `beamconnect fmu export` names them)"
}

// fmiTypes are the types of FMU variable each of SSP's connector types
// stands for (SSP 1.0's Real and Integer are FMI 3.0's Float64 and Int32).
var fmiTypes = map[string][]string{
	"Real": {"Real", "Float64"}, "Float64": {"Real", "Float64"}, "Float32": {"Float32"},
	"Integer": {"Integer", "Int32"}, "Int32": {"Integer", "Int32"}, "Int8": {"Int8"}, "UInt8": {"UInt8"},
	"Int16": {"Int16"}, "UInt16": {"UInt16"}, "UInt32": {"UInt32"}, "Int64": {"Int64"}, "UInt64": {"UInt64"},
	"Boolean": {"Boolean"}, "String": {"String"}, "Enumeration": {"Enumeration"}, "Binary": {"Binary"}, "Clock": {"Clock"},
}

func (c *checker) fmuConnector(cn *ssp.Connector, comp *Component) *Connector {
	v, ok := comp.Desc.Variable(cn.Name)
	if !ok {
		if real, alias := comp.Structure.Aliases[cn.Name]; alias {
			v, ok = comp.Desc.Variable(real)
		}
	}
	if !ok {
		c.attr(cn.Node, "name", "%s", noVariable(comp, cn.Name, cn.Kind))
		return nil
	}
	switch {
	case v.Causality != cn.Kind:
		c.attr(cn.Node, "kind", "the FMU's %q is a%s %s, not a%s %s: expected kind=%q", cn.Name, article(v.Causality), v.Causality, article(cn.Kind), cn.Kind, v.Causality)
		return nil
	case cn.Type != "" && !slices.Contains(fmiTypes[cn.Type], v.Type):
		c.at(cn.Node, false, "the connector %q is a%s %s, the FMU's variable a%s %s: expected the variable's type", cn.Name, article(cn.Type), cn.Type, article(v.Type), v.Type)
		return nil
	case v.Array:
		c.at(cn.Node, false, "the FMU's %q is an array: beamconnect connects scalars", cn.Name)
		return nil
	}
	return &Connector{Name: cn.Name, Kind: v.Causality, Type: v.Type, Var: v, Node: cn.Node, Unit: c.unitNamed(v.Unit, comp.Structure)}
}

// noVariable says a connector names no variable of the FMU: the closest
// name, or those of the kind it says.
func noVariable(comp *Component, name, kind string) string {
	msg := fmt.Sprintf("the FMU %s has no variable %q", comp.Desc.ModelName, name)
	all := append(comp.Desc.Names(), slices.Collect(maps.Keys(comp.Structure.Aliases))...)
	if s := suggest.Closest(name, all); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	var of []string
	for _, v := range comp.Desc.Variables {
		if v.Causality == kind {
			of = append(of, v.Name)
		}
	}
	if len(of) == 0 {
		return msg + fmt.Sprintf(", and no %ss", kind)
	}
	return msg + fmt.Sprintf(": its %ss are %s", kind, strings.Join(of, ", "))
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "n"
	}
	return ""
}

// unitNamed resolves a unit's name: the .ssd's definition, the FMU's,
// or a common one.
func (c *checker) unitNamed(name string, st *fmu.Structure) unit {
	u := unit{name: name}
	if name == "" {
		return u
	}
	if d, ok := c.s.Pkg.SSD.Units[name]; ok {
		u.base, u.known = fmu.BaseUnit{Exp: d.Exp, Factor: d.Factor, Offset: d.Offset}, true
		return u
	}
	if st != nil {
		if b, ok := st.Units[name]; ok {
			u.base, u.known = b, true
			return u
		}
	}
	u.base, u.known = commonUnits[name]
	return u
}

// declaredUnit checks the unit a connector's type declares: defined in
// the .ssd, as SSP requires, and the one the variable is in. The
// connector's unit is the variable's.
func (c *checker) declaredUnit(cn *ssp.Connector, comp *Component, own unit) unit {
	if cn.Unit == "" {
		return own
	}
	d, ok := c.s.Pkg.SSD.Units[cn.Unit]
	if !ok {
		var names []string
		for n := range c.s.Pkg.SSD.Units {
			names = append(names, n)
		}
		msg := fmt.Sprintf("the unit %q is not among the .ssd's Units: SSP wants every unit a file names defined in it (<ssd:Units><ssc:Unit name=%q><ssc:BaseUnit …/></ssc:Unit></ssd:Units>)", cn.Unit, cn.Unit)
		if s := suggest.Closest(cn.Unit, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		c.at(cn.Node, false, "%s", msg)
		return own
	}
	decl := unit{name: cn.Unit, base: fmu.BaseUnit{Exp: d.Exp, Factor: d.Factor, Offset: d.Offset}, known: true}
	if own.name != "" && own.name != cn.Unit && (!own.known || own.base != decl.base) {
		c.at(cn.Node, false, "the connector %q says %s; %s measures it in %s: expected unit=%q", cn.Name, cn.Unit, comp.label(), own.name, own.name)
		return own
	}
	return decl
}

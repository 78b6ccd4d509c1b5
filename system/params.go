package system

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"beamconnect/config"
	"beamconnect/fmu"
	"beamconnect/internal/suggest"
	"beamconnect/internal/xsd"
	"beamconnect/ssp"
)

// Parameter bindings: each component's bindings, then the system's (whose
// names are the components' parameters prefixed with the component's
// name, controller.kp), apply at start; a later binding's value of a name
// wins over an earlier one's, and the system's over a component's, as
// SSP orders them. A parameter of a set that no variable has is ignored,
// as SSP says, and warned about when its name is close to one.

// value is a parameter's value from a binding, and where it is written.
type value struct {
	v     any
	place Place
	node  *xsd.Node
}

// parameters applies every binding to the components' Params.
func (c *checker) parameters(sys *ssp.System) {
	for _, comp := range c.s.Components {
		sc := c.ssdComponent(comp.Name)
		for _, b := range sc.Bindings {
			for name, v := range c.binding(b, comp) {
				c.set(comp, name, v)
			}
		}
	}
	for _, b := range sys.Bindings {
		for name, v := range c.binding(b, nil) {
			compName, param, ok := strings.Cut(name, ".")
			comp, _ := c.s.Component(compName)
			if !ok || comp == nil {
				var names []string
				for _, o := range c.s.Components {
					names = append(names, o.Name)
				}
				msg := fmt.Sprintf("the system's parameter %q names no component's (expected COMPONENT.PARAMETER, a component one of %s): it is ignored", name, strings.Join(names, ", "))
				if s := suggest.Closest(compName, names); s != "" && ok {
					msg = fmt.Sprintf("the system's parameter %q names no component's (did you mean %s.%s?): it is ignored", name, s, param)
				}
				c.place(v.place.File, v.place.Pos, "", true, "%s", msg)
				continue
			}
			c.set(comp, param, v)
		}
	}
}

func (c *checker) ssdComponent(name string) *ssp.Component {
	for _, sc := range c.s.Pkg.SSD.System.Components {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}

// set gives comp's parameter name a value, or warns that it has none.
func (c *checker) set(comp *Component, name string, v value) {
	if comp.BeamNG {
		c.place(v.place.File, v.place.Pos, "", true, "the parameter %q is bound to BeamNG's component, which takes no parameters: it is ignored", name)
		return
	}
	if _, ok := comp.Desc.Variable(name); !ok {
		if real, alias := comp.Structure.Aliases[name]; alias {
			name = real
		} else {
			msg := fmt.Sprintf("the FMU of %q has no variable %q: the parameter is ignored", comp.Name, name)
			if s := suggest.Closest(name, comp.Desc.Names()); s != "" {
				msg = fmt.Sprintf("the FMU of %q has no variable %q (did you mean %q?): the parameter is ignored", comp.Name, name, s)
			}
			c.place(v.place.File, v.place.Pos, comp.Name+"."+name, true, "%s", msg)
			return
		}
	}
	comp.Params[name] = v.v
	comp.ParamAt[name] = v.place
}

// binding reads one binding's parameter set (its file or what it writes
// inline) through its mapping, if any: the values by name, prefixed as it
// says. comp is the component it belongs to (nil: the system), whose
// variables convert values with units.
func (c *checker) binding(b *ssp.Binding, comp *Component) map[string]value {
	if b.Type != ssp.TypeParamSet {
		c.attr(b.Node, "type", "a parameter binding of type %q: beamconnect reads SSP parameter sets (%s)", b.Type, ssp.TypeParamSet)
		return nil
	}
	set := b.Inline
	if b.HasSource {
		if b.SourceBase != "SSD" {
			c.attr(b.Node, "sourceBase", "a parameter set inside the component's source (sourceBase=\"component\") is not read: put the .ssv beside the .ssd")
			return nil
		}
		file, _, err := c.s.Pkg.Resolve(b.Source, c.s.Pkg.SSDFile)
		if err != nil {
			c.attr(b.Node, "source", "%v", err)
			return nil
		}
		data, err := c.s.Pkg.ReadFile(file)
		if err != nil {
			c.attr(b.Node, "source", "the parameter set: %v", err)
			return nil
		}
		var ds config.Diagnostics
		set, ds = ssp.ParseSSV(c.s.display(file), data)
		c.ds = append(c.ds, ds...)
		if set == nil {
			return nil
		}
		c.s.ParamFiles = append(c.s.ParamFiles, file)
	}
	if set == nil {
		return nil
	}
	entries := c.mapping(b)
	out := map[string]value{}
	for _, p := range set.Parameters {
		name := b.Prefix + p.Name
		targets := []*ssp.MappingEntry{nil}
		if b.Mapping != nil {
			targets = entries[name]
			if len(targets) == 0 {
				continue // a mapping applies the parameters it maps only
			}
		}
		for _, e := range targets {
			target := name
			if e != nil {
				target = e.Target
			}
			v, ok := c.paramValue(set, p, comp, target, e)
			if ok {
				out[target] = value{v: v, place: Place{File: set.File, Pos: p.Node.Pos}, node: p.Node}
			}
		}
	}
	return out
}

// mapping reads a binding's parameter mapping: its entries by source.
func (c *checker) mapping(b *ssp.Binding) map[string][]*ssp.MappingEntry {
	m := b.Mapping
	if m == nil {
		return nil
	}
	if m.Type != ssp.TypeMapping {
		c.attr(m.Node, "type", "a parameter mapping of type %q: beamconnect reads SSP parameter mappings (%s)", m.Type, ssp.TypeMapping)
		return nil
	}
	pm := m.Inline
	if m.HasSource {
		if m.SourceBase != "SSD" {
			c.attr(m.Node, "sourceBase", "a parameter mapping inside the component's source (sourceBase=\"component\") is not read: put the .ssm beside the .ssd")
			return nil
		}
		file, _, err := c.s.Pkg.Resolve(m.Source, c.s.Pkg.SSDFile)
		if err != nil {
			c.attr(m.Node, "source", "%v", err)
			return nil
		}
		data, err := c.s.Pkg.ReadFile(file)
		if err != nil {
			c.attr(m.Node, "source", "the parameter mapping: %v", err)
			return nil
		}
		var ds config.Diagnostics
		pm, ds = ssp.ParseSSM(c.s.display(file), data)
		c.ds = append(c.ds, ds...)
		if pm == nil {
			return nil
		}
		c.s.ParamFiles = append(c.s.ParamFiles, file)
	}
	out := map[string][]*ssp.MappingEntry{}
	targets := map[string]bool{}
	for _, e := range pm.Entries {
		if targets[e.Target] {
			c.place(pm.File, e.Node.Pos, "", false, "a second entry maps onto %q: SSP forbids mapping two parameters to one name", e.Target)
			continue
		}
		targets[e.Target] = true
		out[e.Source] = append(out[e.Source], e)
	}
	return out
}

// paramValue is a parameter's value as the fmu model takes it in
// modelParams.parameters: a number (booleans true and false), text for a
// String, an Enumeration's item name, hexadecimal for a Binary, an array
// of them for an array; converted to the target variable's unit and
// transformed as the mapping entry says.
func (c *checker) paramValue(set *ssp.ParameterSet, p *ssp.Parameter, comp *Component, target string, e *ssp.MappingEntry) (any, bool) {
	bad := func(format string, args ...any) (any, bool) {
		c.place(set.File, p.Node.Pos, "", false, "the parameter %q: %s", p.Name, fmt.Sprintf(format, args...))
		return nil, false
	}
	var conv conversion
	if comp == nil { // a system's binding: COMPONENT.PARAMETER
		name, param, _ := strings.Cut(target, ".")
		if comp, _ = c.s.Component(name); comp != nil {
			target = param
		}
	}
	if p.Unit != "" && comp != nil && !comp.BeamNG && (e == nil || !e.SuppressUnitConversion) {
		if v, ok := comp.Desc.Variable(target); ok && v.Unit != "" {
			from := c.unitNamed(p.Unit, comp.Structure)
			if d, ok := set.Units[p.Unit]; ok {
				from = unit{name: p.Unit, base: fmu.BaseUnit{Exp: d.Exp, Factor: d.Factor, Offset: d.Offset}, known: true}
			}
			cv, warn, err := convert(from, c.unitNamed(v.Unit, comp.Structure))
			switch {
			case err != nil:
				return bad("%v", err)
			case warn != "":
				c.place(set.File, p.Node.Pos, "", true, "the parameter %q: %s", p.Name, warn)
			}
			conv = cv
		}
	}
	var vals []any
	for _, s := range p.Values {
		s = strings.TrimSpace(s)
		switch family(p.Type) {
		case "float", "integer":
			x, err := strconv.ParseFloat(strings.NewReplacer("INF", "Inf").Replace(s), 64)
			if err != nil {
				return bad("%q is not a number", s)
			}
			x = conv.apply(x)
			if e != nil && e.Transform != nil {
				switch e.Transform.Kind {
				case "Linear":
					x = e.Transform.Factor*x + e.Transform.Offset
				case "Integer":
					if to, ok := e.Transform.IntMap[int64(x)]; ok {
						x = float64(to)
					}
				}
			}
			vals = append(vals, x)
		case "boolean":
			b := s == "true" || s == "1"
			if e != nil && e.Transform != nil && e.Transform.Kind == "Boolean" {
				if to, ok := e.Transform.BoolMap[b]; ok {
					b = to
				}
			}
			vals = append(vals, b)
		case "enumeration":
			if e != nil && e.Transform != nil && e.Transform.Kind == "Enumeration" {
				if to, ok := e.Transform.EnumMap[s]; ok {
					s = to
				}
			}
			vals = append(vals, s)
		default: // String, Binary
			vals = append(vals, s)
		}
	}
	switch {
	case len(vals) == 0:
		return bad("no value")
	case p.Array || len(vals) > 1:
		return vals, true
	}
	return vals[0], true
}

// ComponentParams are the components' parameter values as a plan carries
// them (its ModelParams): each FMU component's by its name.
func (s *System) ComponentParams() map[string]any {
	out := map[string]any{}
	for _, c := range s.Components {
		if !c.BeamNG {
			out[c.Name] = maps.Clone(c.Params)
		}
	}
	return out
}

// paramPlace is where a component's parameter is set, or the component
// for one it is not.
func (c *Component) paramPlace(name, ssd string) Place {
	if p, ok := c.ParamAt[name]; ok {
		return p
	}
	return Place{File: ssd, Pos: c.Node.Pos}
}

// sortedParams lists a component's parameters by name.
func (c *Component) sortedParams() []string { return slices.Sorted(maps.Keys(c.Params)) }

package system

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"beamconnect/models"
	"beamconnect/models/fmumodel"
	"beamconnect/ports"
)

// runnable checks each FMU component as the fmu model will run it (its
// interface, step, parameter values), and lays out the system's plan.
func (c *checker) runnable() {
	s := c.s
	for i, comp := range s.Components {
		if comp.BeamNG {
			continue
		}
		for _, f := range fmumodel.Check(comp.modelParams(nil, false), s.componentPlan(comp)) {
			at, path := Place{File: c.ssd, Pos: comp.Node.AttrPos("source")}, pathOf(comp.Node)
			msg := strings.TrimPrefix(f.Msg, "model fmu: ")
			if name, ok := strings.CutPrefix(f.Param, "parameters/"); ok {
				name = unescape(name)
				at, path = comp.paramPlace(name, c.ssd), comp.Name+"."+name
				if l := s.feeding(i, name); l != nil && f.Warning {
					// The fmu model binds it to its plan's field; in a
					// system a connection feeds it.
					msg = fmt.Sprintf("the FMU's input %q is fed by the connection %s.%s → %s.%s (%s:%d): the value given here is replaced by the connection's at every step; expected no value for it, or no connection into it",
						name, s.Components[l.From].Name, l.FromConn.Name, comp.Name, l.ToConn.Name, filepath.Base(c.ssd), l.Node.Pos.Line)
				}
			} else if f.Param == "interface" {
				at.Pos = comp.Node.AttrPos("implementation")
			}
			c.place(at.File, at.Pos, path, f.Warning, "%s", msg)
		}
	}
	plan := *s.Plan
	plan.Model, plan.ModelParams = Kind, s.ComponentParams()
	plan.Source = s.display(s.ConfigFile) // in an .ssp: rig.ssp!/resources/rig.json
	s.Plan = &plan
}

func unescape(s string) string { return strings.NewReplacer("~1", "/", "~0", "~").Replace(s) }

// feeding is the connection into component i's FMU variable name, nil for
// none.
func (s *System) feeding(i int, name string) *Link {
	for _, l := range s.Links {
		if l.To == i && l.ToConn.Var != nil && l.ToConn.Var.Name == name {
			return l
		}
	}
	return nil
}

// inputs are the component's inputs the connections feed, in its
// connectors' order: the fields of its plan's outputs port.
func (s *System) inputs(i int) []*Connector {
	var out []*Connector
	for _, cn := range s.Components[i].Connectors {
		for _, l := range s.Links {
			if l.To == i && l.ToConn == cn {
				out = append(out, cn)
				break
			}
		}
	}
	return out
}

// componentPlan is the plan an FMU component runs on
// (ports.ComponentPlan): its fed inputs, and every output of its FMU.
func (s *System) componentPlan(comp *Component) *ports.Plan {
	_, i := s.Component(comp.Name)
	var in, out []string
	for _, cn := range s.inputs(i) {
		in = append(in, cn.Var.Name)
	}
	for _, v := range comp.Desc.Variables {
		if v.Causality == "output" && v.Kind.Numeric() && !v.Array {
			out = append(out, v.Name)
		}
	}
	return ports.ComponentPlan(comp.Name, in, out, s.Plan)
}

// modelParams are the fmu model's parameters for an FMU component:
// its FMU, its interface, its parameter values (params, or the
// component's own when nil), and its connectors that are no inputs or
// outputs (parameters, locals) recorded.
func (comp *Component) modelParams(params map[string]any, inProcess bool) models.Params {
	if params == nil {
		params = comp.Params
	}
	file, err := filepath.Abs(comp.File) // a relative path is the config's, to the fmu model
	if err != nil {
		file = comp.File
	}
	p := models.Params{"path": file, "parameters": maps.Clone(params)}
	if comp.Interface != "" {
		p["interface"] = comp.Interface
	}
	if inProcess {
		p["inProcess"] = true
	}
	var record []string
	for _, cn := range comp.Connectors {
		if cn.Kind != "input" && cn.Kind != "output" {
			record = append(record, cn.Var.Name)
		}
	}
	if len(record) > 0 {
		p["record"] = record
	}
	return p
}

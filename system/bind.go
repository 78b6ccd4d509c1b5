package system

import (
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
	for _, comp := range s.Components {
		if comp.BeamNG {
			continue
		}
		for _, f := range fmumodel.Check(comp.modelParams(nil, false), s.componentPlan(comp)) {
			at, path := Place{File: c.ssd, Pos: comp.Node.AttrPos("source")}, pathOf(comp.Node)
			if name, ok := strings.CutPrefix(f.Param, "parameters/"); ok {
				at, path = comp.paramPlace(unescape(name), c.ssd), comp.Name+"."+unescape(name)
			} else if f.Param == "interface" {
				at.Pos = comp.Node.AttrPos("implementation")
			}
			c.place(at.File, at.Pos, path, f.Warning, "%s", strings.TrimPrefix(f.Msg, "model fmu: "))
		}
	}
	plan := *s.Plan
	plan.Model, plan.ModelParams = Kind, s.ComponentParams()
	plan.Source = s.display(s.ConfigFile) // in an .ssp: rig.ssp!/resources/rig.json
	s.Plan = &plan
}

func unescape(s string) string { return strings.NewReplacer("~1", "/", "~0", "~").Replace(s) }

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

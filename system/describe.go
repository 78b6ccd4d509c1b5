package system

import (
	"fmt"
	"strconv"
	"strings"

	"beamconnect/models/fmumodel"
)

// Description is what compile shows of a system: its components and how
// each runs, the connections and what they do to values, the order of
// steps, the parameters.
type Description struct {
	Name        string           `json:"name"`
	Components  []DescComponent  `json:"components"`
	Connections []DescConnection `json:"connections"`
	Steps       []string         `json:"steps"`
	Parameters  []DescParameter  `json:"parameters"`
	Controls    []string         `json:"controls"` // BeamNG's connectors the reply carries
}

// DescComponent is one component.
type DescComponent struct {
	Name   string   `json:"name"`
	Source string   `json:"source"`
	Kind   string   `json:"kind"` // beamng, fmu
	Runs   []string `json:"runs"` // how it runs: interface, step, multi-rate
}

// DescConnection is one connection, from an output to an input.
type DescConnection struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Does says what it does to values on the way ("" nothing); Previous
	// that it carries its source's value of the step before.
	Does     string `json:"does,omitempty"`
	Previous bool   `json:"previous_step,omitempty"`
}

// DescParameter is a parameter a binding sets, and where.
type DescParameter struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
	At    string `json:"at"`
}

// Describe describes the system for compile.
func (s *System) Describe() Description {
	d := Description{Name: s.Name}
	for _, c := range s.Components {
		dc := DescComponent{Name: c.Name, Kind: "fmu"}
		if c.BeamNG {
			dc.Kind, dc.Source = "beamng", s.display(s.ConfigFile)
			if c.Vehicle >= 0 {
				dc.Source += "#" + s.Plan.Vehicles[c.Vehicle].Name
			}
			dc.Runs = []string{"BeamNG, coupled as its config says; its connectors are the config's fields as `fmu export` names them"}
		} else {
			dc.Source = s.display(c.File)
			for _, n := range fmumodel.Describe(c.modelParams(nil, false), s.componentPlan(c)) {
				_, n, _ = strings.Cut(n, ": ") // the FMU's file is the source
				dc.Runs = append(dc.Runs, n)
			}
		}
		d.Components = append(d.Components, dc)
	}
	for _, l := range s.Links {
		from, to := s.Components[l.From], s.Components[l.To]
		dc := DescConnection{From: from.Name + "." + l.FromConn.Name + unitText(l.FromConn), To: to.Name + "." + l.ToConn.Name + unitText(l.ToConn), Previous: l.Delayed}
		var does []string
		if l.Units.on {
			does = append(does, "converted from "+l.FromConn.Unit.name+" to "+l.ToConn.Unit.name)
		}
		if t := l.Transform; t != nil {
			switch t.Kind {
			case "Linear":
				does = append(does, fmt.Sprintf("× %s + %s", strconv.FormatFloat(t.Factor, 'g', -1, 64), strconv.FormatFloat(t.Offset, 'g', -1, 64)))
			default:
				does = append(does, "mapped ("+t.Kind+"MappingTransformation)")
			}
		}
		dc.Does = strings.Join(does, ", then ")
		d.Connections = append(d.Connections, dc)
		if to.BeamNG {
			d.Controls = append(d.Controls, to.Name+"."+l.ToConn.Name)
		}
	}
	for _, i := range s.Order {
		d.Steps = append(d.Steps, s.Components[i].Name)
	}
	for _, c := range s.Components {
		for _, name := range c.sortedParams() {
			at := c.ParamAt[name]
			d.Parameters = append(d.Parameters, DescParameter{Name: c.Name + "." + name, Value: c.Params[name],
				At: fmt.Sprintf("%s:%d", at.File, at.Pos.Line)})
		}
	}
	return d
}

func unitText(c *Connector) string {
	if c.Unit.name == "" {
		return ""
	}
	return " [" + c.Unit.name + "]"
}

// Lines are the description as compile prints it.
func (d Description) Lines() []string {
	out := []string{fmt.Sprintf("system %q: %d components, %d connections", d.Name, len(d.Components), len(d.Connections)), "  components:"}
	for _, c := range d.Components {
		out = append(out, fmt.Sprintf("    %s (%s): %s", c.Name, c.Source, strings.Join(c.Runs, "; ")))
	}
	out = append(out, "  connections, from an output to an input:")
	for _, c := range d.Connections {
		line := "    " + c.From + " → " + c.To
		if c.Does != "" {
			line += ": " + c.Does
		}
		if c.Previous {
			line += " (the value of the step before: " + strings.SplitN(c.From, ".", 2)[0] + " is stepped after " + strings.SplitN(c.To, ".", 2)[0] + ")"
		}
		out = append(out, line)
	}
	steps := make([]string, len(d.Steps))
	for i, s := range d.Steps {
		steps[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	out = append(out, "  at every BeamNG message: BeamNG's data in, then the FMUs stepped in this order, each taking what those before it computed: "+strings.Join(steps, ", "))
	if len(d.Controls) > 0 {
		out = append(out, "  then the reply carries "+strings.Join(d.Controls, ", "))
	}
	if len(d.Parameters) > 0 {
		out = append(out, "  parameters:")
		for _, p := range d.Parameters {
			out = append(out, fmt.Sprintf("    %s = %v (%s)", p.Name, p.Value, p.At))
		}
	}
	return out
}

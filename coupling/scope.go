package coupling

import (
	"strconv"

	"beamconnect/internal/scope"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/recording"
)

// ScopeColumns is the layout of a scope sample (Options.Scope): status, the
// outputs, the directive, the inputs, the setpoints of beamng.quality's
// loops and the model's variables (vars, models.Sampler's), named as in a
// recording, each with its unit and the least span a panel of it shows; a
// setpoint is drawn with the value it is the setpoint of.
func ScopeColumns(plan *ports.Plan, vars []models.Variable) []scope.Column {
	var cols []scope.Column
	for _, c := range recording.LayoutOf(plan, vars).Columns {
		port := ""
		switch {
		case c.Name == "status" && c.Role == recording.Own:
			port = "out0"
		case c.Name == "directive" && c.Role == recording.Own:
			port = "in0"
		case c.Role == recording.Field, c.Role == recording.Setpoint:
			dir := "out"
			if !c.Out {
				dir = "in"
			}
			port = dir + strconv.Itoa(c.Port)
		case c.Role == recording.Model:
			port = recording.ModelPort
			if c.Component != "" {
				port = c.Component // a system's component: a group of its own
			}
		default:
			continue
		}
		cols = append(cols, scope.Column{Name: c.Name, Port: port, Unit: c.Unit, MinSpan: recording.UnitSpan(c.Unit), Comment: c.Comment})
	}
	return cols
}

package ports

import (
	"maps"
	"slices"
	"strconv"

	"beamconnect/beamng"
)

// SetpointKind says where a loop's setpoint comes from.
type SetpointKind uint8

const (
	SetNumber SetpointKind = iota // a number the config gives
	SetOutput                     // a field of the outputs (BeamNG sends it)
	SetInput                      // a field of the inputs (the model writes it)
	SetParam                      // a model parameter (models resolve its value)
)

// Loop is one controlled quantity of beamng.quality, resolved: where its
// measured value and its setpoint are.
type Loop struct {
	Name     string  // what the reports call it
	Path     string  // where the config gives it: beamng.quality or beamng.quality[1]
	Ptr      string  // the same as a JSON Pointer
	Measured Element // an output element
	// MeasuredName is the name the config wrote.
	MeasuredName string
	Set          SetpointKind
	SetAt        Element // for SetOutput and SetInput
	SetValue     float64 // for SetNumber
	SetName      string  // the field or parameter named; "" for a number
	Band         float64 // 0: the default rule
}

// Setpoint says where the setpoint comes from, for a report: "20",
// "setSpeed (model parameter)", "custom1 (from BeamNG)".
func (l *Loop) Setpoint() string {
	switch l.Set {
	case SetNumber:
		return strconv.FormatFloat(l.SetValue, 'g', -1, 64)
	case SetParam:
		return l.SetName + " (model parameter)"
	case SetOutput:
		return l.SetName + " (from BeamNG)"
	}
	return l.SetName + " (written by the model)"
}

// FieldNames lists every name a field answers to in both directions, for
// a "did you mean" over fields and parameters alike.
func (p *Plan) FieldNames() []string {
	var out []string
	for _, dir := range []beamng.Direction{beamng.FromBeamNG, beamng.ToBeamNG} {
		out = append(out, slices.Collect(maps.Keys(p.Names(dir)))...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

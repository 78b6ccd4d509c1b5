package ports

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/internal/suggest"
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

// compileQuality resolves beamng.quality's names against the plan's
// fields. A setpoint named by no field is taken for a model parameter,
// which models check. The findings are placed in the config.
func (p *Plan) compileQuality(cfg *config.Config) config.Diagnostics {
	var ds config.Diagnostics
	at := func(ptr, format string, args ...any) {
		pos, path := cfg.Locate(ptr)
		ds = append(ds, config.Diagnostic{File: cfg.File, Pos: pos, Path: path, Severity: config.Error, Msg: fmt.Sprintf(format, args...)})
	}
	outs, ins := p.Names(beamng.FromBeamNG), p.Names(beamng.ToBeamNG)
	for _, q := range cfg.Quality {
		_, path := cfg.Locate(q.Ptr)
		l := Loop{Name: q.Name, Path: path, Ptr: q.Ptr, MeasuredName: q.Measured, SetValue: q.Setpoint, SetName: q.SetpointName, Band: q.Band}
		if l.Name == "" {
			l.Name = q.Measured
		}
		e, ok, err := p.Resolve(outs, q.Measured)
		switch {
		case err != nil:
			at(q.Ptr+"/measured", "%v", err)
			continue
		case !ok:
			msg := fmt.Sprintf("%q is not a field of the config's outputs (data from BeamNG): expected the field measured, as an FMU input would name it", q.Measured)
			if _, isIn := ins[q.Measured]; isIn {
				msg = fmt.Sprintf("%q is a field of the inputs (data to BeamNG), which the model writes: expected the measured value, a field of the outputs", q.Measured)
			} else if s := suggest.Closest(q.Measured, slices.Collect(maps.Keys(outs))); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			at(q.Ptr+"/measured", "%s", msg)
			continue
		}
		l.Measured = e
		if q.SetpointName != "" {
			l.Set = SetParam
			for _, side := range []struct {
				names map[string][]Element
				kind  SetpointKind
			}{{outs, SetOutput}, {ins, SetInput}} {
				se, ok, err := p.Resolve(side.names, q.SetpointName)
				if err != nil {
					at(q.Ptr+"/setpoint", "%v", err)
				}
				if ok {
					l.Set, l.SetAt = side.kind, se
					break
				}
			}
			if l.SetAt == e && l.Set == SetOutput {
				at(q.Ptr+"/setpoint", "%q is the measured value itself: expected the value it should have", q.SetpointName)
				continue
			}
		}
		p.Quality = append(p.Quality, l)
	}
	return ds
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

package coupling

import (
	"math"

	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/quality"
	"beamconnect/recording"
)

// controlLoops are beamng.quality's loops while the run goes on: each one's
// tracker, and each setpoint's value now (a column of the scope and the
// recording, so the setpoint is drawn beside its measured value). They
// are observed under the stage's lock after each whole message, and
// swapped with the plan on a reload, whole; readers take the published set.
type controlLoops struct {
	loops []controlLoop
	set   []float64   // each loop's setpoint now
	group [][]float64 // {set}: a group of the scope's samples
}

type controlLoop struct {
	spec   ports.Loop
	value  float64 // the setpoint of a number or a model parameter
	column string  // the measured value's column: out1.groundspeed
	unit   string
	track  *quality.Tracker
}

// SetpointPrefix starts the name of a setpoint's column in the scope and
// the recording: setpoint:out1.groundspeed is out1.groundspeed's setpoint.
const SetpointPrefix = recording.SetpointPrefix

// newControlLoops prepares plan's loops: their setpoints' values (a model
// parameter read by param), the measured values' columns and units.
func newControlLoops(plan *ports.Plan, param func(name string) (float64, error)) (*controlLoops, error) {
	c := &controlLoops{}
	if len(plan.Quality) == 0 {
		return c, nil
	}
	columns := elementColumns(plan)
	several := len(plan.Vehicles) > 1
	for _, spec := range plan.Quality {
		l := controlLoop{spec: spec, value: spec.SetValue, column: columns[spec.Measured]}
		if spec.Set == ports.SetParam {
			v, err := param(spec.SetName)
			if err != nil {
				return nil, err
			}
			l.value = v
		}
		if n, ok := recording.ParseName(l.column, several); ok {
			l.unit = n.Unit()
		}
		o := quality.Options{Band: spec.Band, Name: spec.Name, Unit: l.unit}
		if l.unit == "rad" {
			o.Wrap = 2 * math.Pi // an angle: its error the short way round
		}
		l.track = quality.New(o)
		c.loops = append(c.loops, l)
	}
	c.set = make([]float64, len(c.loops))
	for i := range c.set {
		c.set[i] = math.NaN()
	}
	c.group = [][]float64{c.set}
	return c, nil
}

// elementColumns names every output element as a recording's column.
func elementColumns(plan *ports.Plan) map[ports.Element]string {
	out := map[ports.Element]string{}
	for _, c := range recording.LayoutOf(plan, nil).Columns {
		if c.Role == recording.Field && c.Out {
			out[ports.Element{Port: c.Port, Elem: c.Elem, Vehicle: c.Vehicle}] = c.Name
		}
	}
	return out
}

// carry keeps the trackers of loops the reload kept (the same name and
// measured value): a new setpoint is a step they see themselves.
func (c *controlLoops) carry(old *controlLoops) {
	if old == nil {
		return
	}
	for i := range c.loops {
		for j := range old.loops {
			if c.loops[i].spec.Name == old.loops[j].spec.Name && c.loops[i].column == old.loops[j].column {
				c.loops[i].track = old.loops[j].track
				c.set[i] = old.set[j]
			}
		}
	}
}

// observe takes vehicle v's message at time t: each loop measured on v
// compares its measured value with its setpoint. Under the stage's lock;
// it allocates nothing.
func (c *controlLoops) observe(v int, t float64, outs, ins [][]float64) {
	for i := range c.loops {
		l := &c.loops[i]
		if l.spec.Measured.Vehicle != v {
			continue
		}
		set := l.value
		switch l.spec.Set {
		case ports.SetOutput:
			set = l.spec.SetAt.Get(outs)
		case ports.SetInput:
			set = l.spec.SetAt.Get(ins)
		}
		c.set[i] = set
		l.track.Observe(t, l.spec.Measured.Get(outs), set)
	}
}

// reports are the loops' verdicts now; final when the run is over.
func (c *controlLoops) reports(final bool) []quality.Report {
	var out []quality.Report
	for i := range c.loops {
		l := &c.loops[i]
		r := l.track.Report(final)
		r.Signal, r.Setpoint = l.column, l.spec.Setpoint()
		out = append(out, r)
	}
	return out
}

// setpointColumns are the scope's and the recording's columns of plan's
// setpoints, in the loops' order.
func setpointColumns(plan *ports.Plan) []string {
	var out []string
	for _, c := range recording.LayoutOf(plan, nil).Columns {
		if c.Role == recording.Setpoint {
			out = append(out, c.Name)
		}
	}
	return out
}

// setpoint reads a parameter of the config's model under plan p, for a
// setpoint of beamng.quality: through Options.Params, or as a number in
// the config's modelParams.
func (s *Session) setpoint(p *ports.Plan) func(name string) (float64, error) {
	return func(name string) (float64, error) {
		return models.ParamValue(p.Model, s.opt.Params, models.Params(p.ModelParams), p, name)
	}
}

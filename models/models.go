// Package models holds what stands where the Simulink model stood: the Model
// interface a program implements, the built-in controllers, "hold" for
// pure logging rigs, "exec" for an external process, and "fmu" for a
// co-simulation FMU.
package models

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/ports"
	"beamconnect/relative"
)

// Model is stepped once per BeamNG message, and every 50 ms while the
// coupling is not connected (so it can set the directive).
//
// outputs holds the plan's output port vectors (data from BeamNG):
// outputs[0][0] is the connection status 0–5. inputs holds the input port
// vectors (data to BeamNG), which the model writes: inputs[0][0] is the
// connection directive (0 disconnects). Between steps the inputs keep what
// the model last wrote; they start at the fields' initial values. t is the
// local simulation time in seconds.
//
// Step must not keep the slices, and should not allocate: it runs on the
// coupling's hot path.
type Model interface {
	Step(t float64, outputs [][]float64, inputs [][]float64)
}

// Closer is a Model holding resources (a process) to release at the end.
type Closer interface {
	Close() error
}

// Rebinder is a Model that can move to a new plan (a config reload) and
// keep its state: a controller keeps its integrator, a process keeps
// running. Rebind is called between two messages.
type Rebinder interface {
	Rebind(plan *ports.Plan) error
}

// Check reports whether the model called name could bind to plan, without
// starting anything: a reload is refused before it is applied when the new
// config lacks a port the model needs.
func Check(name string, plan *ports.Plan) error { return checkWith(name, nil, plan) }

// checkWith is Check with the model's parameters, which name what some
// models bind (follow's ego and lead).
func checkWith(name string, params Params, plan *ports.Plan) error {
	b := &binder{plan: plan, model: name}
	switch name {
	case "cruise-pedals":
		(&CruisePedals{}).bind(b)
	case "cruise-torque":
		(&CruiseTorque{}).bind(b)
	case "heading-hold":
		(&HeadingHold{}).bind(b)
	case "follow":
		m := &Follow{}
		m.egoName, _ = params["ego"].(string)
		m.leadName, _ = params["lead"].(string)
		m.bind(b)
	}
	return b.err()
}

// Params are a model's parameters from the config (beamng.modelParams).
type Params map[string]any

// Float returns a numeric parameter, or def when absent.
func (p Params) Float(name string, def float64) (float64, error) {
	v, ok := p[name]
	if !ok {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("modelParams.%s: expected a number, got %v", name, v)
	}
	return f, nil
}

// Names of the built-in models.
func Names() []string {
	return []string{"cruise-pedals", "cruise-torque", "exec", "fmu", "follow", "heading-hold", "hold"}
}

// New builds the model called name for plan, binding it to the ports that
// carry the signals it needs.
//
// log (nil: discard) hears of what a model that runs on its own reports:
// an exec program that ends, or answers badly.
func New(name string, params Params, plan *ports.Plan, log *slog.Logger) (Model, error) {
	if _, ok := paramSpecs[name]; !ok {
		return nil, Validate(name, params, plan)[0] // names the models there are
	}
	var errs []string
	for _, f := range Validate(name, params, plan) {
		if !f.Warning {
			errs = append(errs, f.Error())
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model %s: %s", name, strings.Join(errs, "; "))
	}
	b := &binder{plan: plan, model: name}
	var m Model
	var err error
	switch name {
	case "hold":
		m = Hold{}
	case "cruise-pedals":
		m, err = newCruisePedals(b, params)
	case "cruise-torque":
		m, err = newCruiseTorque(b, params)
	case "heading-hold":
		m, err = newHeadingHold(b, params)
	case "follow":
		m, err = newFollow(b, params)
	case "exec":
		// Assign only a working *Exec: a nil one in the interface would not
		// compare equal to nil below.
		var ex *Exec
		if ex, err = NewExec(params, plan, log); err == nil {
			m = ex
		}
	case "fmu":
		var f *FMU
		if f, err = NewFMU(params, plan, log); err == nil {
			m = f
		}
	}
	if err == nil {
		err = b.err()
	}
	if err != nil {
		if c, ok := m.(Closer); ok && m != nil {
			c.Close()
		}
		return nil, err
	}
	return m, nil
}

// Hold writes nothing: inputs stay at their initial values. For logging
// rigs, and for driving BeamNG from its own UI while recording.
type Hold struct{}

func (Hold) Step(float64, [][]float64, [][]float64) {}

// ref is a bound port element.
type ref struct{ port, elem int }

func (r ref) get(v [][]float64) float64    { return v[r.port][r.elem] }
func (r ref) set(v [][]float64, x float64) { v[r.port][r.elem] = x }

// binder finds the ports a built-in model needs, collecting what is missing
// into one error.
type binder struct {
	plan    *ports.Plan
	model   string
	missing []string
	// rows are the Gen 2 CSV rows a missing port needs first, by CSV file,
	// files in the order first met.
	rows  map[string][]string
	files []string
}

func (b *binder) need(dir beamng.Direction, name string) ref {
	p, e, ok := b.plan.Find(dir, name)
	if !ok {
		b.lack(dir, name, -1)
	}
	return ref{p, e}
}

// needFor binds a signal of vehicle v.
func (b *binder) needFor(dir beamng.Direction, name string, v int) ref {
	p, e, ok := b.plan.FindFor(dir, name, v)
	if !ok {
		b.lack(dir, name, v)
	}
	return ref{p, e}
}

// lack notes a signal the config does not map, of vehicle v (any when
// v < 0), named as the user must write it: with Gen 2 its CSV name
// ("groundspeed" is Kinematics/vehicleGroundSpeed) and, when the vehicle's
// CSV has no row for it, the row to add, since BeamNG sends and applies
// only what the CSV lists.
func (b *binder) lack(dir beamng.Direction, name string, v int) {
	side := "outputs"
	if dir == beamng.ToBeamNG {
		side = "inputs"
	}
	of := ""
	if v >= 0 {
		of = fmt.Sprintf(" of vehicle %q", b.plan.Vehicles[v].Name)
	}
	if b.plan.Protocol != beamng.Gen2 {
		b.missing = append(b.missing, side+" "+name+of)
		return
	}
	row, ref, ok := gen2Row(dir, name)
	if !ok {
		b.missing = append(b.missing, side+" "+name+of+" (Gen 1 only: BeamNG's co-simulation CSV has no such signal)")
		return
	}
	b.missing = append(b.missing, side+" "+ref+of)
	veh := b.plan.Vehicles[max(v, 0)]
	if veh.CSV == nil {
		return
	}
	if _, listed := veh.Layout.Find(dir, name); !listed {
		f := filepath.Base(veh.CSV.Path)
		if b.rows == nil {
			b.rows = map[string][]string{}
		}
		if _, seen := b.rows[f]; !seen {
			b.files = append(b.files, f)
		}
		b.rows[f] = append(b.rows[f], row)
	}
}

// gen2Row is the CSV row that carries a Gen 1 signal in a Gen 2 coupling,
// as BeamNG's editor writes it ("signalFrom,Wheels,propulsionTorqueRL,
// value,number"), and its Group/name; ok is false for a signal BeamNG's
// co-simulation catalogue does not have.
func gen2Row(dir beamng.Direction, name string) (row, ref string, ok bool) {
	section, kind := "signalTo", ""
	if dir == beamng.ToBeamNG {
		section, kind = "signalFrom", "value"
	}
	for _, d := range cosim.Catalogue() {
		if dir == beamng.ToBeamNG && !d.From {
			continue
		}
		sig := ""
		switch {
		case d.Meaning == name && d.Group != "Wheels":
			sig = d.Name
		case d.Group == "Wheels" && d.Meaning != "":
			for _, w := range beamng.Wheels {
				if strings.Replace(d.Meaning, "%s", w, 1) == name {
					sig = d.Name + w
				}
			}
		}
		if sig != "" {
			return strings.Join([]string{section, d.Group, sig, kind, "number"}, ","), d.Group + "/" + sig, true
		}
	}
	return "", "", false
}

// needRelative binds a cross-vehicle property of vehicle v to vehicle o.
func (b *binder) needRelative(rp relative.Property, v, o int) ref {
	for _, pt := range b.plan.Outputs {
		for i := range pt.Fields {
			f := &pt.Fields[i]
			if f.Source == ports.Relative && f.Relative == rp && f.Vehicle == v && f.Other == o {
				return ref{pt.Number, f.Offset}
			}
		}
	}
	b.missing = append(b.missing, fmt.Sprintf("outputs %s of vehicle %q to %q (remoteObject %q, params %q)", rp, b.plan.Vehicles[v].Name, b.plan.Vehicles[o].Name, b.plan.Vehicles[v].Name, b.plan.Vehicles[o].Name))
	return ref{}
}

// optional binds a signal if the config maps it.
func (b *binder) optional(dir beamng.Direction, name string) (ref, bool) {
	p, e, ok := b.plan.Find(dir, name)
	return ref{p, e}, ok
}

func (b *binder) err() error {
	if len(b.missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("model %s needs the config to map %s", b.model, strings.Join(b.missing, ", "))
	for i, f := range b.files {
		lead := ": BeamNG sends and applies only what a CSV lists, so first add to "
		if i > 0 {
			lead = ", and to "
		}
		msg += lead + f + " the rows " + strings.Join(b.rows[f], "; ")
	}
	if len(b.files) > 0 {
		msg += " (in BeamNG's editor)"
	}
	return errors.New(msg)
}

// pi is a PI controller with anti-windup by clamping the integral.
type pi struct {
	kp, ki, integral, lo, hi float64
}

func (c *pi) step(err, dt float64) float64 {
	u := c.kp*err + c.ki*c.integral
	// Integrate only while the output is not saturated in the same direction.
	if !(u >= c.hi && err > 0) && !(u <= c.lo && err < 0) {
		c.integral += err * dt
	}
	return math.Min(c.hi, math.Max(c.lo, c.kp*err+c.ki*c.integral))
}

func floats(params Params, names []string, defs []float64) ([]float64, error) {
	out := make([]float64, len(names))
	for i, n := range names {
		v, err := params.Float(n, defs[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// CruisePedals holds a set speed with throttle and brake (seed 000,
// example 1): one PI controller whose positive output is throttle and
// negative output brake.
type CruisePedals struct {
	params          Params  // as running, for a reload's CheckTune
	SetSpeed        float64 // m/s
	speed           ref
	throttle, brake ref
	driveMode       ref
	hasMode         bool
	ctl             pi
	lastT           float64
	quality         tracking
}

func newCruisePedals(b *binder, params Params) (Model, error) {
	v, err := floats(params, []string{"setSpeed", "kp", "ki"}, []float64{20, 0.3, 0.05})
	if err != nil {
		return nil, err
	}
	m := &CruisePedals{params: params, SetSpeed: v[0], ctl: pi{kp: v[1], ki: v[2], lo: -1, hi: 1}, lastT: math.NaN()}
	m.quality.reset(speedBand(m.SetSpeed))
	m.bind(b)
	return m, nil
}

func (m *CruisePedals) bind(b *binder) {
	m.speed = b.need(beamng.FromBeamNG, "groundspeed")
	m.throttle = b.need(beamng.ToBeamNG, "throttle")
	m.brake = b.need(beamng.ToBeamNG, "brake")
	m.driveMode, m.hasMode = b.optional(beamng.ToBeamNG, "driveMode")
}

// Rebind moves the controller to a reloaded plan; its integrator stays.
func (m *CruisePedals) Rebind(p *ports.Plan) error { return rebind(p, "cruise-pedals", m.bind) }

func (m *CruisePedals) Step(t float64, out, in [][]float64) {
	dt := stepDt(&m.lastT, t)
	if out[0][0] != 3 || dt == 0 {
		return // not connected: no fresh speed to act on
	}
	e := m.SetSpeed - m.speed.get(out)
	m.quality.observe(t, e)
	u := m.ctl.step(e, dt)
	m.throttle.set(in, math.Max(0, u))
	m.brake.set(in, math.Max(0, -u))
	if m.hasMode {
		m.driveMode.set(in, 0)
	}
}

// stepDt is the time since the last step, 0 for the first.
func stepDt(last *float64, t float64) float64 {
	dt := t - *last
	*last = t
	if math.IsNaN(dt) || dt <= 0 || dt > 1 {
		return 0
	}
	return dt
}

// CruiseTorque holds a set speed with wheel torques in torque mode (seed 000,
// example 2): a PI controller's output is a wheel torque, propulsion on the
// driven (all four) wheels when positive, braking when negative. BeamNG
// applies braking torques negated, so braking is sent as a negative number.
type CruiseTorque struct {
	params      Params
	SetSpeed    float64
	speed       ref
	prop, brake [4]ref
	driveMode   ref
	hasMode     bool
	ctl         pi
	lastT       float64
	quality     tracking
}

func newCruiseTorque(b *binder, params Params) (Model, error) {
	v, err := floats(params, []string{"setSpeed", "kp", "ki", "maxTorque"}, []float64{20, 300, 60, 1200})
	if err != nil {
		return nil, err
	}
	m := &CruiseTorque{params: params, SetSpeed: v[0], ctl: pi{kp: v[1], ki: v[2], lo: -v[3], hi: v[3]}, lastT: math.NaN()}
	m.quality.reset(speedBand(m.SetSpeed))
	m.bind(b)
	return m, nil
}

func (m *CruiseTorque) bind(b *binder) {
	m.speed = b.need(beamng.FromBeamNG, "groundspeed")
	for i, w := range beamng.Wheels {
		m.prop[i] = b.need(beamng.ToBeamNG, "wheel"+w+"_propulsionTorque")
		m.brake[i] = b.need(beamng.ToBeamNG, "wheel"+w+"_brakingTorque")
	}
	// Gen 1 applies wheel torques only in its torque drive mode. Gen 2 has
	// no drive mode: BeamNG applies the torque of every wheel row its CSV
	// lists, every step.
	if b.plan.Protocol == beamng.Gen2 {
		m.driveMode, m.hasMode = b.optional(beamng.ToBeamNG, "driveMode")
		return
	}
	m.driveMode, m.hasMode = b.need(beamng.ToBeamNG, "driveMode"), true
}

// Rebind moves the controller to a reloaded plan; its integrator stays.
func (m *CruiseTorque) Rebind(p *ports.Plan) error { return rebind(p, "cruise-torque", m.bind) }

func (m *CruiseTorque) Step(t float64, out, in [][]float64) {
	dt := stepDt(&m.lastT, t)
	if m.hasMode {
		m.driveMode.set(in, 1)
	}
	if out[0][0] != 3 || dt == 0 {
		return
	}
	e := m.SetSpeed - m.speed.get(out)
	m.quality.observe(t, e)
	u := m.ctl.step(e, dt)
	for i := range 4 {
		m.prop[i].set(in, math.Max(0, u))
		m.brake[i].set(in, math.Min(0, u)) // negative: BeamNG negates it into a braking torque
	}
}

// HeadingHold steers to hold a heading (seed 000, example 3), with a speed
// kept by throttle so the steering has something to act on.
type HeadingHold struct {
	params            Params
	Heading, SetSpeed float64 // rad, m/s
	kp                float64
	yaw               ref
	speed             ref
	steering          ref
	throttle          ref
	brake             ref
	hasBrake          bool
	speedCtl          pi
	lastT             float64
	quality           tracking
}

func newHeadingHold(b *binder, params Params) (Model, error) {
	v, err := floats(params, []string{"headingDeg", "setSpeed", "kp"}, []float64{30, 10, 2})
	if err != nil {
		return nil, err
	}
	m := &HeadingHold{params: params, Heading: v[0] * math.Pi / 180, SetSpeed: v[1], kp: v[2], speedCtl: pi{kp: 0.3, ki: 0.05, lo: -1, hi: 1}, lastT: math.NaN()}
	m.quality.reset(headingBand)
	m.bind(b)
	return m, nil
}

func (m *HeadingHold) bind(b *binder) {
	m.yaw = b.need(beamng.FromBeamNG, "yaw")
	m.speed = b.need(beamng.FromBeamNG, "groundspeed")
	m.steering = b.need(beamng.ToBeamNG, "steering")
	m.throttle = b.need(beamng.ToBeamNG, "throttle")
	m.brake, m.hasBrake = b.optional(beamng.ToBeamNG, "brake")
}

// Rebind moves the controller to a reloaded plan; its integrators stay.
func (m *HeadingHold) Rebind(p *ports.Plan) error { return rebind(p, "heading-hold", m.bind) }

// headingBand is where heading-hold counts as settled: 1°.
const headingBand = math.Pi / 180

// rebind binds into a scratch binder first, so a failed rebind changes
// nothing.
func rebind(p *ports.Plan, name string, bind func(*binder)) error {
	if err := Check(name, p); err != nil {
		return err
	}
	bind(&binder{plan: p, model: name})
	return nil
}

func (m *HeadingHold) Step(t float64, out, in [][]float64) {
	dt := stepDt(&m.lastT, t)
	if out[0][0] != 3 || dt == 0 {
		return
	}
	e := math.Remainder(m.Heading-m.yaw.get(out), 2*math.Pi)
	m.quality.observe(t, e)
	m.steering.set(in, math.Max(-1, math.Min(1, m.kp*e)))
	u := m.speedCtl.step(m.SetSpeed-m.speed.get(out), dt)
	m.throttle.set(in, math.Max(0, u))
	if m.hasBrake {
		m.brake.set(in, math.Max(0, -u))
	}
}

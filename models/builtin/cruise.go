package builtin

import (
	"math"

	"beamconnect/beamng"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/quality"
)

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

// numbers are a controller's numeric parameters and their defaults.
type numbers struct {
	names []string
	defs  []float64
}

// read takes the parameters' values from params, defaults where absent.
func (n numbers) read(params models.Params) ([]float64, error) {
	out := make([]float64, len(n.names))
	for i, name := range n.names {
		v, err := params.Float(name, n.defs[i])
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
	SetSpeed float64 // m/s
	refs     pedalRefs
	ctl      pi
	lastT    float64
	quality  *quality.Tracker
	signals
}

// pedalRefs are what cruise-pedals is bound to in a plan.
type pedalRefs struct {
	speed, throttle, brake ref
	driveMode              ref
	hasMode                bool
	vehicles
}

var cruisePedalsParams = numbers{names: []string{"setSpeed", "kp", "ki"}, defs: []float64{20, 0.3, 0.05}}

func newCruisePedals(b *binder, params models.Params) (models.Model, error) {
	v, err := cruisePedalsParams.read(params)
	if err != nil {
		return nil, err
	}
	m := &CruisePedals{ctl: pi{lo: -1, hi: 1}, lastT: math.NaN(), quality: newSpeedTracker(), signals: newSignals(cruisePedalsSignals)}
	m.tune(v)
	m.refs = bindPedals(b)
	return m, nil
}

func bindPedals(b *binder) pedalRefs {
	var r pedalRefs
	r.speed = b.need(beamng.FromBeamNG, "groundspeed")
	r.throttle = b.need(beamng.ToBeamNG, "throttle")
	r.brake = b.need(beamng.ToBeamNG, "brake")
	r.driveMode, r.hasMode = b.optional(beamng.ToBeamNG, "driveMode")
	r.vehicles = b.reads
	return r
}

// Rebind moves the controller to a reloaded plan and parameters; its
// integrator stays, and new gains take over bumplessly.
func (m *CruisePedals) Rebind(p *ports.Plan, running, params models.Params) (func(), error) {
	r, v, err := prepare("cruise-pedals", p, running, params, cruisePedalsParams, bindPedals)
	if err != nil {
		return nil, err
	}
	return func() { m.refs = r; m.tune(v) }, nil
}

func (m *CruisePedals) tune(v []float64) {
	m.SetSpeed = v[0]
	m.ctl.retune(v[1], v[2])
}

// Reads reports whether the controller reads vehicle v's data.
func (m *CruisePedals) Reads(v int) bool { return m.refs.Reads(v) }

func (m *CruisePedals) Step(t float64, out, in [][]float64) bool {
	dt := stepDt(&m.lastT, t)
	r := &m.refs
	e := m.SetSpeed - r.speed.Get(out)
	if e != e {
		return false // no speed to act on (BeamNG sent none that is finite)
	}
	m.quality.Observe(t, r.speed.Get(out), m.SetSpeed)
	u := m.ctl.step(e, dt)
	r.throttle.Set(in, math.Max(0, u))
	r.brake.Set(in, math.Max(0, -u))
	if r.hasMode {
		r.driveMode.Set(in, 0)
	}
	m.values[0], m.values[1], m.values[2], m.values[3] = m.SetSpeed, e, u, m.ctl.integral
	return true
}

// stepDt is the time since the last step: 0 for the first, and after a
// gap of over a second (the controller then acts on its error without
// integrating it).
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
	SetSpeed float64
	refs     torqueRefs
	ctl      pi
	lastT    float64
	quality  *quality.Tracker
	signals
}

type torqueRefs struct {
	speed       ref
	prop, brake [4]ref
	driveMode   ref
	hasMode     bool
	vehicles
}

var cruiseTorqueParams = numbers{names: []string{"setSpeed", "kp", "ki", "maxTorque"}, defs: []float64{20, 300, 60, 1200}}

func newCruiseTorque(b *binder, params models.Params) (models.Model, error) {
	v, err := cruiseTorqueParams.read(params)
	if err != nil {
		return nil, err
	}
	m := &CruiseTorque{lastT: math.NaN(), quality: newSpeedTracker(), signals: newSignals(cruiseTorqueSignals)}
	m.tune(v)
	m.refs = bindTorque(b)
	return m, nil
}

func bindTorque(b *binder) torqueRefs {
	var r torqueRefs
	r.speed = b.need(beamng.FromBeamNG, "groundspeed")
	for i, w := range beamng.Wheels {
		r.prop[i] = b.need(beamng.ToBeamNG, "wheel"+w+"_propulsionTorque")
		r.brake[i] = b.need(beamng.ToBeamNG, "wheel"+w+"_brakingTorque")
	}
	// Gen 1 applies wheel torques only in its torque drive mode. Gen 2 has
	// no drive mode: BeamNG applies the torque of every wheel row its CSV
	// lists, every step.
	if b.plan.Protocol == beamng.Gen2 {
		r.driveMode, r.hasMode = b.optional(beamng.ToBeamNG, "driveMode")
	} else {
		r.driveMode, r.hasMode = b.need(beamng.ToBeamNG, "driveMode"), true
	}
	r.vehicles = b.reads
	return r
}

// Rebind moves the controller to a reloaded plan and parameters; its
// integrator stays.
func (m *CruiseTorque) Rebind(p *ports.Plan, running, params models.Params) (func(), error) {
	r, v, err := prepare("cruise-torque", p, running, params, cruiseTorqueParams, bindTorque)
	if err != nil {
		return nil, err
	}
	return func() { m.refs = r; m.tune(v) }, nil
}

func (m *CruiseTorque) tune(v []float64) {
	m.SetSpeed = v[0]
	m.ctl.retune(v[1], v[2])
	m.ctl.lo, m.ctl.hi = -v[3], v[3]
}

// Reads reports whether the controller reads vehicle v's data.
func (m *CruiseTorque) Reads(v int) bool { return m.refs.Reads(v) }

func (m *CruiseTorque) Step(t float64, out, in [][]float64) bool {
	dt := stepDt(&m.lastT, t)
	r := &m.refs
	e := m.SetSpeed - r.speed.Get(out)
	if e != e {
		return false
	}
	m.quality.Observe(t, r.speed.Get(out), m.SetSpeed)
	u := m.ctl.step(e, dt)
	if r.hasMode {
		r.driveMode.Set(in, 1)
	}
	for i := range 4 {
		r.prop[i].Set(in, math.Max(0, u))
		r.brake[i].Set(in, math.Min(0, u)) // negative: BeamNG negates it into a braking torque
	}
	m.values[0], m.values[1], m.values[2], m.values[3] = m.SetSpeed, e, u, m.ctl.integral
	return true
}

// HeadingHold steers to hold a heading (seed 000, example 3), with a speed
// kept by throttle so the steering has something to act on.
type HeadingHold struct {
	Heading, SetSpeed float64 // rad, m/s
	kp                float64
	refs              headingRefs
	speedCtl          pi
	lastT             float64
	quality           *quality.Tracker
	signals
}

type headingRefs struct {
	yaw, speed      ref
	steering        ref
	throttle, brake ref
	hasBrake        bool
	vehicles
}

var headingHoldParams = numbers{names: []string{"headingDeg", "setSpeed", "kp"}, defs: []float64{30, 10, 2}}

func newHeadingHold(b *binder, params models.Params) (models.Model, error) {
	v, err := headingHoldParams.read(params)
	if err != nil {
		return nil, err
	}
	m := &HeadingHold{speedCtl: pi{kp: 0.3, ki: 0.05, lo: -1, hi: 1}, lastT: math.NaN(), Heading: math.NaN(), signals: newSignals(headingHoldSignals),
		quality: quality.New(quality.Options{Band: headingBand, Wrap: 2 * math.Pi, Scale: 180 / math.Pi, Name: "heading", Unit: "deg"})}
	m.tune(v)
	m.refs = bindHeading(b)
	return m, nil
}

func bindHeading(b *binder) headingRefs {
	var r headingRefs
	r.yaw = b.need(beamng.FromBeamNG, "yaw")
	r.speed = b.need(beamng.FromBeamNG, "groundspeed")
	r.steering = b.need(beamng.ToBeamNG, "steering")
	r.throttle = b.need(beamng.ToBeamNG, "throttle")
	r.brake, r.hasBrake = b.optional(beamng.ToBeamNG, "brake")
	r.vehicles = b.reads
	return r
}

// Rebind moves the controller to a reloaded plan and parameters; its
// integrators stay.
func (m *HeadingHold) Rebind(p *ports.Plan, running, params models.Params) (func(), error) {
	r, v, err := prepare("heading-hold", p, running, params, headingHoldParams, bindHeading)
	if err != nil {
		return nil, err
	}
	return func() { m.refs = r; m.tune(v) }, nil
}

func (m *HeadingHold) tune(v []float64) {
	m.Heading, m.SetSpeed, m.kp = v[0]*math.Pi/180, v[1], v[2]
}

// Reads reports whether the controller reads vehicle v's data.
func (m *HeadingHold) Reads(v int) bool { return m.refs.Reads(v) }

// headingBand is where heading-hold counts as settled: 1°.
const headingBand = math.Pi / 180

func (m *HeadingHold) Step(t float64, out, in [][]float64) bool {
	dt := stepDt(&m.lastT, t)
	r := &m.refs
	e := math.Remainder(m.Heading-r.yaw.Get(out), 2*math.Pi)
	ev := m.SetSpeed - r.speed.Get(out)
	if e != e || ev != ev {
		return false
	}
	m.quality.Observe(t, r.yaw.Get(out), m.Heading)
	r.steering.Set(in, math.Max(-1, math.Min(1, m.kp*e)))
	u := m.speedCtl.step(ev, dt)
	r.throttle.Set(in, math.Max(0, u))
	if r.hasBrake {
		r.brake.Set(in, math.Max(0, -u))
	}
	m.values[0], m.values[1], m.values[2], m.values[3] = m.Heading, e, ev, u
	return true
}

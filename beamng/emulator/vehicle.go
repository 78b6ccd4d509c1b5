package emulator

import (
	"math"

	"beamconnect/beamng"
)

// Vehicle is the car the emulator drives: enough physics to close a speed
// or heading loop and to make every slot of BeamNG's Gen 1 state message
// plausible. It is not BeamNG's soft-body physics, and does not try to be.
//
// Conventions (BeamNG's own are not documented for these slots): world X
// east, Y north, Z up; yaw is the heading from +X, counter-clockwise
// positive; positive steering turns left; accX is longitudinal and accY
// lateral acceleration in the vehicle frame; wheels in the order FL FR RL RR.
type Vehicle struct {
	P VehicleParams

	// Inputs, as BeamNG's controller last applied them.
	Throttle, Brake, Steering float64    // pedal mode, [0,1] and [-1,1]
	TorqueMode                bool       // drive mode ≥ 0.5: wheel torques instead of pedals
	Propulsion                [4]float64 // N·m per wheel (torque mode)
	DesiredBraking            [4]float64 // N·m per wheel, as BeamNG stores it (the negated input)

	// State.
	X, Y, Z      float64 // m
	Yaw          float64 // rad
	V            float64 // longitudinal speed, m/s
	YawRate      float64 // rad/s
	Ax, Ay       float64 // vehicle-frame acceleration, m/s²
	Gear         int     // 1… forward
	RPM          float64
	Fuel         float64 // [0,1]
	EngineLoad   float64
	wheelTorque  [4]float64 // propulsion torque at each wheel, N·m
	brakeTorque  [4]float64 // braking torque applied at each wheel, N·m
	steerAngle   float64    // road-wheel angle, rad
	downForce    [4]float64
	shiftLockout float64 // s left before another gear change
}

// VehicleParams describe a mid-size rear-wheel-drive car.
type VehicleParams struct {
	Mass          float64    // kg
	WheelRadius   float64    // m
	FrontAxle     float64    // m from the centre of gravity to the front axle
	RearAxle      float64    // m from the centre of gravity to the rear axle
	CGHeight      float64    // m
	DragArea      float64    // Cd·A, m²
	RollingCoeff  float64    // rolling resistance coefficient
	MaxSteer      float64    // road-wheel angle at steering 1, rad
	IdleRPM       float64    // 1/min
	MaxRPM        float64    // 1/min
	PeakTorque    float64    // N·m, at PeakTorqueRPM
	PeakTorqueRPM float64    // 1/min
	GearRatios    []float64  // forward gears
	FinalDrive    float64    //
	MaxBrake      float64    // N·m per wheel at full brake pedal
	BearingDrag   float64    // N·m friction torque per wheel
	Altitude      float64    // m above sea level at Z = 0
	FuelPerJoule  float64    // tank fraction per joule of engine work
	Start         [3]float64 // initial X, Y, yaw
}

// DefaultVehicle is a 1500 kg saloon with a 300 N·m engine and five gears.
func DefaultVehicle() VehicleParams {
	return VehicleParams{
		Mass: 1500, WheelRadius: 0.32, FrontAxle: 1.2, RearAxle: 1.5, CGHeight: 0.55,
		DragArea: 0.7, RollingCoeff: 0.012, MaxSteer: 0.5,
		IdleRPM: 800, MaxRPM: 6500, PeakTorque: 300, PeakTorqueRPM: 4000,
		GearRatios: []float64{3.6, 2.2, 1.5, 1.1, 0.85}, FinalDrive: 3.7,
		MaxBrake: 1100, BearingDrag: 4, Altitude: 100, FuelPerJoule: 1.0 / 1.5e9,
	}
}

const (
	gravity = 9.81
	airRho  = 1.225
)

// NewVehicle puts a vehicle at rest, in first gear, with a full tank.
func NewVehicle(p VehicleParams) *Vehicle {
	v := &Vehicle{P: p, Gear: 1, RPM: p.IdleRPM, Fuel: 1, X: p.Start[0], Y: p.Start[1], Yaw: p.Start[2]}
	v.settle()
	return v
}

// engineTorque is the full-throttle torque curve: a parabola through idle,
// the peak and the rev limit.
func (v *Vehicle) engineTorque(rpm float64) float64 {
	p := &v.P
	x := (rpm - p.PeakTorqueRPM) / (p.MaxRPM - p.IdleRPM)
	t := p.PeakTorque * (1 - 1.2*x*x)
	if rpm >= p.MaxRPM {
		return 0 // rev limiter
	}
	return max(t, 0.3*p.PeakTorque)
}

// Step advances the vehicle by dt seconds with the inputs it holds.
func (v *Vehicle) Step(dt float64) {
	p := &v.P
	r := p.WheelRadius
	ratio := p.GearRatios[v.Gear-1] * p.FinalDrive

	// Engine speed follows the driven wheels, never below idle.
	v.RPM = math.Max(p.IdleRPM, math.Abs(v.V)/r*ratio*60/(2*math.Pi))
	if v.TorqueMode {
		for i := range 4 {
			v.wheelTorque[i] = v.Propulsion[i]
			// BeamNG stores -input as the desired braking torque; the brakes
			// only ever resist motion, so a negative desire brakes nothing.
			v.brakeTorque[i] = math.Max(0, v.DesiredBraking[i])
		}
		v.EngineLoad = 0
	} else {
		drive := v.Throttle * v.engineTorque(v.RPM) * ratio
		v.EngineLoad = v.Throttle * v.engineTorque(v.RPM) / p.PeakTorque
		v.wheelTorque = [4]float64{0, 0, drive / 2, drive / 2} // rear-wheel drive
		for i := range 4 {
			v.brakeTorque[i] = v.Brake * p.MaxBrake
		}
	}

	drive, braking := 0.0, 0.0
	for i := range 4 {
		drive += v.wheelTorque[i] / r
		braking += (v.brakeTorque[i] + p.BearingDrag) / r
	}
	resist := 0.5*airRho*p.DragArea*v.V*math.Abs(v.V) + p.RollingCoeff*p.Mass*gravity*sign(v.V)
	next := v.V + (drive-resist)/p.Mass*dt
	// Brakes (and bearing drag) slow the car towards rest; they never push
	// it through zero into the other direction.
	stop := braking / p.Mass * dt
	switch {
	case v.V == 0 && math.Abs(drive) <= braking:
		next = 0 // at rest, the brakes hold against the drive
	case next > 0:
		next = math.Max(0, next-stop)
	case next < 0:
		next = math.Min(0, next+stop)
	}
	v.Ax = (next - v.V) / dt
	v.V = next

	// Kinematic bicycle.
	v.steerAngle = v.Steering * p.MaxSteer
	lr, l := p.RearAxle, p.FrontAxle+p.RearAxle
	beta := math.Atan(lr / l * math.Tan(v.steerAngle))
	v.YawRate = v.V / lr * math.Sin(beta)
	v.Yaw = math.Remainder(v.Yaw+v.YawRate*dt, 2*math.Pi)
	v.X += v.V * math.Cos(v.Yaw+beta) * dt
	v.Y += v.V * math.Sin(v.Yaw+beta) * dt
	v.Ay = v.V * v.YawRate

	// Automatic gearbox with a short lockout so it does not hunt.
	v.shiftLockout = math.Max(0, v.shiftLockout-dt)
	if v.shiftLockout == 0 && !v.TorqueMode {
		switch {
		case v.RPM > 0.85*p.MaxRPM && v.Gear < len(p.GearRatios):
			v.Gear++
			v.shiftLockout = 0.5
		case v.RPM < 1.6*p.IdleRPM && v.Gear > 1:
			v.Gear--
			v.shiftLockout = 0.5
		}
	}
	v.Fuel = math.Max(0, v.Fuel-math.Max(0, drive*v.V)*dt*p.FuelPerJoule)
	v.settle()
}

// settle updates the wheel loads from the accelerations.
func (v *Vehicle) settle() {
	p := &v.P
	l := p.FrontAxle + p.RearAxle
	w := p.Mass * gravity
	transfer := p.Mass * v.Ax * p.CGHeight / l
	front := (w*p.RearAxle/l - transfer) / 2
	rear := (w*p.FrontAxle/l + transfer) / 2
	lat := p.Mass * v.Ay * p.CGHeight / 1.6 / 2 // track width 1.6 m; left wheels unload in a left turn
	v.downForce = [4]float64{front - lat/2, front + lat/2, rear - lat/2, rear + lat/2}
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// State writes every slot of the Gen 1 state message except the id into
// msg (beamng.StateLen doubles), the way BeamNG's controller fills it.
func (v *Vehicle) State(msg []float64) {
	_ = msg[beamng.StateLen-1]
	p := &v.P
	steer := v.Steering
	throttle, brake := v.Throttle, v.Brake
	if v.TorqueMode {
		throttle, brake = 0, 0
	}
	beta := math.Atan(p.RearAxle / (p.FrontAxle + p.RearAxle) * math.Tan(v.steerAngle))
	copy(msg[1:11], []float64{throttle, throttle, brake, brake, 0, 0, 0, 0, steer, steer})
	msg[11], msg[12], msg[13] = v.X, v.Y, v.Z
	msg[14], msg[15], msg[16] = v.V*math.Cos(v.Yaw+beta), v.V*math.Sin(v.Yaw+beta), 0
	msg[17] = math.Abs(v.V)
	msg[18], msg[19], msg[20] = v.Ax, v.Ay, gravity
	// Body roll and pitch from the accelerations: a soft suspension's lean.
	msg[21], msg[22], msg[23] = -0.006*v.Ay, -0.004*v.Ax, v.Yaw
	msg[24] = p.Altitude + v.Z
	msg[25] = 2 // ignition on, engine running
	msg[26] = float64(v.Gear)
	msg[27] = v.Fuel
	msg[28] = v.EngineLoad
	msg[29], msg[30] = 0, 1 // low beam on
	msg[31] = p.MaxRPM
	msg[32] = 0 // reverse
	msg[33] = v.RPM
	msg[34], msg[35] = 0, 0
	msg[36] = math.Abs(v.V)
	omega := v.V / p.WheelRadius
	for i := range 4 {
		w := msg[37+6*i : 43+6*i]
		w[0] = omega
		w[1] = math.Abs(omega) * p.WheelRadius
		w[2] = v.brakeTorque[i]
		w[3] = v.wheelTorque[i]
		w[4] = p.BearingDrag
		w[5] = v.downForce[i]
	}
	for i := 61; i < beamng.StateLen; i++ {
		msg[i] = 0 // custom: BeamNG's controller sends 0.0
	}
}

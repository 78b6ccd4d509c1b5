package emulator

import (
	"math"
	"testing"

	"beamconnect/beamng"
)

// drive runs the vehicle alone for seconds of simulated time.
func drive(v *Vehicle, seconds float64, each func()) {
	for range int(seconds / beamng.PhysicsDt) {
		if each != nil {
			each()
		}
		v.Step(beamng.PhysicsDt)
	}
}

func TestAccelerationAndBraking(t *testing.T) {
	v := NewVehicle(DefaultVehicle())
	v.Throttle = 1
	drive(v, 10, nil)
	kmh := v.V * 3.6
	if kmh < 80 || kmh > 140 {
		t.Errorf("full throttle for 10 s reaches %.0f km/h; a 1.5 t saloon does about 100", kmh)
	}
	if v.Gear < 3 || v.RPM > v.P.MaxRPM || v.RPM < v.P.IdleRPM {
		t.Errorf("gear %d at %.0f rpm", v.Gear, v.RPM)
	}
	if v.Fuel >= 1 || v.Fuel < 0.99 {
		t.Errorf("fuel %v after 10 s", v.Fuel)
	}
	v.Throttle, v.Brake = 0, 1
	drive(v, 1, nil)
	if decel := -v.Ax; decel < 7 || decel > 12 {
		t.Errorf("full braking at %.1f m/s² (about 1 g expected)", decel)
	}
	drive(v, 10, nil)
	if v.V != 0 || v.Ax != 0 {
		t.Errorf("braked to %v m/s, acceleration %v: the brakes must stop the car, not reverse it", v.V, v.Ax)
	}
	// Coasting: drag and rolling resistance slow the car, never below zero.
	v.Brake, v.Throttle = 0, 1
	drive(v, 5, nil)
	v.Throttle = 0
	before := v.V
	drive(v, 5, nil)
	if v.V >= before || v.V <= 0 {
		t.Errorf("coasting from %.1f m/s gave %.1f m/s", before, v.V)
	}
}

// Seed 000 example 2: speed held with wheel torques in torque mode.
func TestTorqueMode(t *testing.T) {
	v := NewVehicle(DefaultVehicle())
	v.Throttle = 1 // ignored in torque mode
	v.TorqueMode = true
	v.Propulsion = [4]float64{0, 0, 400, 400}
	drive(v, 5, nil)
	if v.V < 5 {
		t.Errorf("800 N·m at the rear wheels for 5 s: %.1f m/s", v.V)
	}
	msg := make([]float64, beamng.StateLen)
	v.State(msg)
	if msg[1] != 0 || msg[52] != 400 || msg[58] != 400 || msg[40] != 0 {
		t.Errorf("throttle slot %v, RL/RR/FL propulsion %v %v %v", msg[1], msg[52], msg[58], msg[40])
	}
	// Braking torque arrives negated from BeamNG's controller: a positive
	// desired torque brakes, a negative one does nothing.
	v.Propulsion = [4]float64{}
	v.DesiredBraking = [4]float64{-500, -500, -500, -500}
	speed := v.V
	drive(v, 1, nil)
	if v.V < speed*0.9 {
		t.Errorf("negative desired braking torque braked: %.1f → %.1f m/s", speed, v.V)
	}
	v.DesiredBraking = [4]float64{500, 500, 500, 500}
	drive(v, 10, nil)
	if v.V != 0 {
		t.Errorf("4 × 500 N·m of braking left the car at %.1f m/s", v.V)
	}
}

// A PI speed controller on the pedals, as seed 000 example 1, holds its set
// speed on the emulated vehicle.
func TestSpeedLoopCloses(t *testing.T) {
	v := NewVehicle(DefaultVehicle())
	const set = 20.0 // m/s
	integral := 0.0
	drive(v, 40, func() {
		e := set - v.V
		integral += e * beamng.PhysicsDt
		u := 0.3*e + 0.05*integral
		v.Throttle, v.Brake = clamp(u, 0, 1), clamp(-u, 0, 1)
	})
	if math.Abs(v.V-set) > 0.2 {
		t.Errorf("PI control settles at %.2f m/s, want %.0f", v.V, set)
	}
}

// Seed 000 example 3: steering holds a heading.
func TestHeadingLoopCloses(t *testing.T) {
	v := NewVehicle(DefaultVehicle())
	const want = 1.0 // rad
	drive(v, 30, func() {
		v.Throttle = clamp(0.5*(10-v.V), 0, 1)
		v.Steering = clamp(2*math.Remainder(want-v.Yaw, 2*math.Pi), -1, 1)
	})
	if math.Abs(v.Yaw-want) > 0.01 || v.V < 9 {
		t.Errorf("heading %.3f rad at %.1f m/s, want %.1f", v.Yaw, v.V, want)
	}
	// It moved along the heading: more north than east at 1 rad from east.
	if v.Y <= 0 || v.X <= 0 {
		t.Errorf("position %.1f, %.1f", v.X, v.Y)
	}
}

// Every slot of the state message is a finite, plausible number, in every
// phase of a drive: rest, acceleration, a turn, braking.
func TestStatePlausible(t *testing.T) {
	v := NewVehicle(DefaultVehicle())
	msg := make([]float64, beamng.StateLen)
	check := func(phase string) {
		v.State(msg)
		for i, x := range msg[1:] {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				s, _ := beamng.At(beamng.FromBeamNG, i+1)
				t.Fatalf("%s: %s (%s) = %v", phase, s.Ref, s.Name, x)
			}
		}
		if msg[17] != math.Abs(v.V) || msg[33] != v.RPM || msg[26] != float64(v.Gear) || msg[31] != v.P.MaxRPM {
			t.Errorf("%s: groundspeed/rpm/gear/maxrpm slots wrong", phase)
		}
		total := msg[42] + msg[48] + msg[54] + msg[60]
		if math.Abs(total-v.P.Mass*gravity) > 1 {
			t.Errorf("%s: wheel loads add to %.0f N, want the weight %.0f N", phase, total, v.P.Mass*gravity)
		}
		for w := range 4 {
			if msg[38+6*w] != msg[17] || msg[37+6*w]*v.P.WheelRadius != v.V {
				t.Errorf("%s: wheel %s speed %v, angular velocity %v", phase, beamng.Wheels[w], msg[38+6*w], msg[37+6*w])
			}
		}
	}
	check("at rest")
	v.Throttle = 1
	drive(v, 3, nil)
	check("accelerating")
	if msg[18] <= 0 || msg[28] <= 0 || msg[1] != 1 || msg[2] != 1 {
		t.Errorf("accelerating: accX %v, engine load %v, throttle %v/%v", msg[18], msg[28], msg[1], msg[2])
	}
	v.Steering = 0.5
	drive(v, 2, nil)
	check("turning")
	if msg[19] <= 0 || msg[21] >= 0 || msg[48] <= msg[42] {
		t.Errorf("left turn: accY %v, roll %v, FR load %v vs FL %v", msg[19], msg[21], msg[48], msg[42])
	}
	v.Throttle, v.Brake, v.Steering = 0, 1, 0
	drive(v, 0.5, nil)
	check("braking")
	if msg[18] >= 0 || msg[39] != v.P.MaxBrake || msg[42] <= msg[54] {
		t.Errorf("braking: accX %v, FL braking torque %v, front load %v vs rear %v", msg[18], msg[39], msg[42], msg[54])
	}
}

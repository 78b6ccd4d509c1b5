// Package relative computes what VS Connect calls "function" properties
// between two vehicles of a scene: distance, gap, closing speed, time gap
// and time to collision, from each vehicle's position, heading and
// velocity as BeamNG sends them. BeamNG's Gen 1 message carries no such
// signal (and Gen 2's Ideal RADAR is unsigned and unreliable, spec §3.3),
// so beamconnect computes them itself.
package relative

import (
	"math"
	"strings"
)

// Property is one relative quantity of an ego vehicle (the field's
// remoteObject) to another (the field's params).
type Property uint8

const (
	None Property = iota
	// Distance is centre to centre, in 3-D: |p_o − p_e| (m). VS Connect's
	// VSAP_DISTANCE is the same.
	Distance
	// Gap is the other vehicle's position along the ego's heading:
	// (p_o − p_e) · h_e, h_e = (cos yaw_e, sin yaw_e) (m; positive ahead,
	// centre to centre: subtract half of both lengths for bumper to bumper).
	Gap
	// ClosingSpeed is how fast the gap shrinks: (v_e − v_o) · h_e (m/s;
	// positive while closing in).
	ClosingSpeed
	// TimeGap is gap / ego speed (s), the headway ACC keeps; invalid below
	// 0.1 m/s.
	TimeGap
	// TimeToCollision is gap / closing speed (s) while closing in and the
	// other vehicle is ahead; invalid otherwise (no collision course).
	TimeToCollision
)

var names = map[string]Property{
	"distance": Distance, "VSAP_DISTANCE": Distance,
	"gap": Gap, "closingSpeed": ClosingSpeed, "timeGap": TimeGap, "timeToCollision": TimeToCollision,
}

// Names lists the property names a config may use.
func Names() []string {
	return []string{"distance", "VSAP_DISTANCE", "gap", "closingSpeed", "timeGap", "timeToCollision"}
}

// Parse finds a property by its name (letter case ignored).
func Parse(name string) (Property, bool) {
	for n, p := range names {
		if strings.EqualFold(n, name) {
			return p, true
		}
	}
	return None, false
}

func (p Property) String() string {
	for _, n := range Names() {
		if names[n] == p && n != "VSAP_DISTANCE" {
			return n
		}
	}
	return "none"
}

// Unit is the property's SI unit.
func (p Property) Unit() string {
	switch p {
	case Distance, Gap:
		return "m"
	case ClosingSpeed:
		return "m/s"
	}
	return "s"
}

// State is what the properties need of one vehicle, in BeamNG's world
// frame: position (m), yaw (rad, heading from +X counter-clockwise),
// velocity (m/s) and speed over ground (m/s).
type State struct {
	X, Y, Z, Yaw, VX, VY, Speed float64
}

// Quantities name what a State holds, in the order of its fields, by
// their Gen 1 names; a Gen 2 CSV's rows carry them as their meaning
// (Kinematics/vehiclePositionX is posX).
var Quantities = [...]string{"posX", "posY", "posZ", "yaw", "velX", "velY", "groundspeed"}

// Needs lists the quantities property p reads of the ego vehicle and of
// the other one: a vehicle whose message lacks one cannot give p.
func (p Property) Needs() (ego, other []string) {
	switch p {
	case Distance:
		return []string{"posX", "posY", "posZ"}, []string{"posX", "posY", "posZ"}
	case Gap:
		return []string{"posX", "posY", "yaw"}, []string{"posX", "posY"}
	case ClosingSpeed:
		return []string{"yaw", "velX", "velY"}, []string{"velX", "velY"}
	case TimeGap:
		return []string{"posX", "posY", "yaw", "groundspeed"}, []string{"posX", "posY"}
	case TimeToCollision:
		return []string{"posX", "posY", "yaw", "velX", "velY"}, []string{"posX", "posY", "velX", "velY"}
	}
	return nil, nil
}

// Compute is property p of ego e to other o; ok is false where it is not
// defined (a time gap at standstill, a time to collision when not closing
// in), for which a field reports its invalidValue.
func (p Property) Compute(e, o State) (v float64, ok bool) {
	dx, dy, dz := o.X-e.X, o.Y-e.Y, o.Z-e.Z
	hx, hy := math.Cos(e.Yaw), math.Sin(e.Yaw)
	gap := dx*hx + dy*hy
	closing := (e.VX-o.VX)*hx + (e.VY-o.VY)*hy
	switch p {
	case Distance:
		return math.Sqrt(dx*dx + dy*dy + dz*dz), true
	case Gap:
		return gap, true
	case ClosingSpeed:
		return closing, true
	case TimeGap:
		if e.Speed < 0.1 {
			return 0, false
		}
		return gap / e.Speed, true
	case TimeToCollision:
		if closing <= 1e-6 || gap <= 0 {
			return 0, false
		}
		return gap / closing, true
	}
	return 0, false
}

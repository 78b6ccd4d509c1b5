package cosim

import (
	"strings"

	"beamconnect/beamng"
)

// Def is one signal of BeamNG's Gen 2 catalogue (cosimulationNames.lua and
// the coupling controller, spec §3.3).
type Def struct {
	Group   string // Kinematics, Driver, Wheels, Electrics, Powertrain, IMU, GPS, Ideal RADAR, Roads
	Name    string // for Wheels the base name: the CSV appends the wheel id (wheelSpeedFL)
	Unit    string
	Desc    string
	From    bool   // BeamNG applies it when it is a signalFrom row
	Meaning string // the Gen 1 name of the same quantity ("wheel%s_…" for wheels)
	// Trap says why BeamNG's controller mishandles the signal; "" when it
	// does not. Such rows are warned about.
	Trap string
}

// Kinds of signalFrom rows, in the order the editor writes them.
var Kinds = []string{"value", "multiply", "add", "freeze"}

const (
	trapCOG     = "BeamNG's controller cannot resolve the vehicleCOG* names (it tests names that do not exist): on BeamNG 0.32 every send then fails and nothing is ever sent; on 0.33 the value is a 0"
	trapShifted = "BeamNG's controller reads this name 4 slots off (a bug in kinematicsName2Id in every version seen): the value is another signal's"
	trapLater   = "only BeamNG versions newer than 0.33.3 know this name; older ones cannot resolve it"
)

var defs = buildDefs()

func buildDefs() []Def {
	var d []Def
	add := func(group, name, unit, desc, meaning string) {
		d = append(d, Def{Group: group, Name: name, Unit: unit, Desc: desc, Meaning: meaning})
	}
	xyz := func(base, unit, desc, gen1 string) {
		for _, a := range []string{"X", "Y", "Z"} {
			m := ""
			if gen1 != "" {
				m = gen1 + a
			}
			add("Kinematics", base+a, unit, desc+" "+a, m)
		}
	}
	xyz("vehiclePosition", "m", "position, world", "pos")
	xyz("vehicleVelocity", "m/s", "velocity, world", "vel")
	xyz("vehicleAcceleration", "m/s²", "acceleration sensor", "acc")
	add("Kinematics", "vehicleRoll", "rad", "roll angle", "roll")
	add("Kinematics", "vehiclePitch", "rad", "pitch angle", "pitch")
	add("Kinematics", "vehicleYaw", "rad", "yaw angle", "yaw")
	add("Kinematics", "vehicleRollRate", "rad/s", "roll rate", "")
	add("Kinematics", "vehiclePitchRate", "rad/s", "pitch rate", "")
	add("Kinematics", "vehicleYawRate", "rad/s", "yaw rate", "")
	add("Kinematics", "vehicleGroundSpeed", "m/s", "speed over ground", "groundspeed")
	add("Kinematics", "vehicleAltitude", "m", "altitude", "altitude")
	xyz("vehicleForward", "", "unit forward vector", "")
	xyz("vehicleUp", "", "unit up vector", "")
	xyz("vehicleRight", "", "unit right vector (forward × up)", "")
	add("Kinematics", "vehicleInitialLength", "m", "initial length", "")
	add("Kinematics", "vehicleInitialWidth", "m", "initial width", "")
	add("Kinematics", "vehicleInitialHeight", "m", "initial height", "")
	for _, base := range []string{"vehicleCOGWithWheels", "vehicleCOGWithoutWheels"} {
		xyz(base, "m", "centre of gravity", "")
		for i := len(d) - 3; i < len(d); i++ {
			d[i].Trap = trapCOG
		}
	}
	for _, base := range []string{"vehicleMidFrontBumper", "vehicleMidRearBumper", "vehicleFrontAxleMidpoint", "vehicleRearAxleMidpoint"} {
		xyz(base, "m", "position", "")
		for i := len(d) - 3; i < len(d); i++ {
			d[i].Trap = trapShifted
		}
	}

	driver := func(name, gen1, desc string, from bool) {
		d = append(d, Def{Group: "Driver", Name: name, Desc: desc, From: from, Meaning: gen1})
	}
	driver("throttle", "throttle", "[0,1] throttle", true)
	driver("throttleInput", "throttle_input", "[0,1] throttle as requested", false)
	driver("brake", "brake", "[0,1] brake", true)
	driver("brakeInput", "brake_input", "[0,1] brake as requested", false)
	driver("clutch", "clutch", "[0,1] clutch", true)
	driver("clutchInput", "clutch_input", "[0,1] clutch as requested", false)
	driver("parkingBrake", "parkingbrake", "[0,1] parking brake", true)
	driver("parkingBrakeInput", "parkingbrake_input", "[0,1] parking brake as requested", false)
	driver("steeringWheelPosition", "steering", "[-1,1] steering", true)
	driver("steeringWheelPositionInput", "steering_input", "[-1,1] steering as requested", false)
	d = append(d, Def{Group: "Driver", Name: "gearIndex", Desc: "-1=R, 0=N, 1+=forward", From: true, Meaning: "gear", Trap: trapLater})

	wheel := func(base, gen1, unit, desc string, from bool) {
		d = append(d, Def{Group: "Wheels", Name: base, Unit: unit, Desc: desc, From: from, Meaning: gen1})
	}
	wheel("wheelSpeed", "wheel%s_wheelSpeed", "m/s", "wheel circumferential speed", false)
	wheel("angularVelocity", "wheel%s_angularVelocity", "rad/s", "wheel angular velocity", false)
	wheel("downforce", "wheel%s_downForce", "N", "wheel load", false)
	wheel("wheelAngle", "", "rad", "wheel steering angle", false)
	wheel("brakingTorque", "wheel%s_brakingTorque", "N·m", "braking torque (From: applied every step as desiredBrakingTorque = -value)", true)
	wheel("propulsionTorque", "wheel%s_propulsionTorque", "N·m", "propulsion torque (From: applied every step)", true)
	wheel("frictionTorque", "wheel%s_frictionTorque", "N·m", "friction torque (From: applied every step)", true)

	for _, e := range []struct{ name, unit, desc string }{
		{"rpm", "1/min", "engine speed"}, {"gear", "", "gear"}, {"gearIndex", "", "gear index"},
		{"wheelspeed", "m/s", "speed from the wheels"}, {"airspeed", "m/s", "airspeed"},
		{"fuel", "", "[0,1] tank level"}, {"engineLoad", "", "[0,1]"}, {"ignitionLevel", "", "0–3"},
		{"highbeam", "", "0 or 1"}, {"lowbeam", "", "0 or 1"}, {"maxrpm", "1/min", "rev limit"},
		{"reverse", "", "0 or 1"}, {"signal_L", "", "left indicator"}, {"signal_R", "", "right indicator"},
		{"throttle", "", "[0,1]"}, {"brake", "", "[0,1]"}, {"clutch", "", "[0,1]"},
		{"parkingbrake", "", "[0,1]"}, {"steering", "", "[-1,1]"}, {"odometer", "m", "distance driven"},
		{"watertemp", "°C", "coolant temperature"}, {"oiltemp", "°C", "oil temperature"},
		{"engineRunning", "", "0 or 1"}, {"hazard", "", "0 or 1"}, {"horn", "", "0 or 1"},
	} {
		m := e.name
		if _, ok := beamng.Fixed.Find(beamng.FromBeamNG, m); !ok {
			m = ""
		}
		if e.name == "gearIndex" {
			m = "gear"
		}
		d = append(d, Def{Group: "Electrics", Name: e.name, Unit: e.unit, Desc: "electrics." + e.name + ": " + e.desc, Meaning: m})
	}
	for _, f := range PowertrainFields {
		d = append(d, Def{Group: "Powertrain", Name: "mainEngine " + f, Desc: "powertrain device field (any device: \"<device> " + f + "\")"})
	}

	sensor := func(group string, names ...string) {
		for _, n := range names {
			d = append(d, Def{Group: group, Name: n, Desc: group + " reading"})
		}
	}
	var imu []string
	imu = append(imu, "imuPositionX", "imuPositionY", "imuPositionZ")
	for a := 1; a <= 3; a++ {
		for _, c := range []string{"X", "Y", "Z"} {
			imu = append(imu, "imuAxis"+string(rune('0'+a))+"Direction"+c)
		}
	}
	imu = append(imu, "imuMass")
	for _, q := range []string{"AngularVelocityRaw", "AngularVelocitySmoothed", "AccelerationRaw", "AccelerationSmoothed", "AngularAcceleration"} {
		for a := 1; a <= 3; a++ {
			imu = append(imu, "imu"+q+"Axis"+string(rune('0'+a)))
		}
	}
	imu = append(imu, "imuReadingTimestamp")
	sensor("IMU", imu...)
	sensor("GPS", "gpsXCoordinate", "gpsYCoordinate", "gpsLongitude", "gpsLatitude", "gpsReadingTimestamp")
	var radar []string
	for v := 1; v <= 4; v++ {
		for _, q := range []string{"Distance", "Length", "Width", "VelocityX", "VelocityY", "VelocityZ",
			"AccelerationX", "AccelerationY", "AccelerationZ", "RelativeDistanceX", "RelativeDistanceY",
			"RelativeVelocityX", "RelativeVelocityY", "RelativeAccelerationX", "RelativeAccelerationY"} {
			radar = append(radar, "idealRADARVehicle"+string(rune('0'+v))+q)
		}
	}
	sensor("Ideal RADAR", radar...)
	d = append(d, Def{Group: "Ideal RADAR", Name: "idealRADARReadingTimestamp", Desc: "Ideal RADAR reading time", Trap: trapLater})
	roads := []string{"roadsRoadHalfWidth", "roadsRoadRadius", "roadsRoadHeading", "roadsDistanceToCenterline",
		"roadsDistanceToRoadLeftEdge", "roadsDistanceToRoadRightEdge", "roadsDrivability", "roadsSpeedLimit", "roadsIsOneWay"}
	for _, p := range []string{"Closest", "2ndClosest", "3rdClosest", "4thClosest"} {
		for _, c := range []string{"X", "Y", "Z"} {
			roads = append(roads, "roads"+p+"Point"+c)
		}
	}
	roads = append(roads, "roadsReadingTimestamp")
	sensor("Roads", roads...)
	return d
}

// PowertrainFields are the numeric fields of a powertrain device BeamNG
// sends as "<deviceName> <field>".
var PowertrainFields = []string{"inputAV", "gearRatio", "isBroken", "mode", "outputTorque1", "outputTorque2", "outputAV1", "outputAV2"}

// Catalogue lists every signal of the Gen 2 catalogue, wheels once each with
// their base name. The slice is shared: do not modify it.
func Catalogue() []Def { return defs }

// Groups are the Subsections BeamNG knows by name; besides them, an IMU's
// or a GPS's group is the sensor's name, which holds "IMU" or "GPS".
var Groups = []string{"Kinematics", "Driver", "Wheels", "Electrics", "Powertrain", "Ideal RADAR", "Local Roads [Info]"}

// Class says which catalogue group a CSV Subsection belongs to: the sensor
// groups are named by the sensor ("IMU1", "Front GPS"), the rest literally.
// It returns "" for a group BeamNG does not know.
func Class(group string) string {
	switch group {
	case "Kinematics", "Driver", "Wheels", "Electrics", "Powertrain", "Ideal RADAR":
		return group
	case "Local Roads [Info]":
		return "Roads"
	}
	switch {
	case strings.Contains(group, "IMU"):
		return "IMU"
	case strings.Contains(group, "GPS"):
		return "GPS"
	}
	return ""
}

// Lookup finds the catalogue entry of a CSV row's group and name. For
// Wheels it also returns the wheel id ("FL"); Electrics and Powertrain
// accept any name of the right form, since their names are the vehicle's.
func Lookup(group, name string) (Def, string, bool) {
	class := Class(group)
	switch class {
	case "":
		return Def{}, "", false
	case "Wheels":
		for _, d := range defs {
			if d.Group == "Wheels" && len(name) > len(d.Name) && strings.HasPrefix(name, d.Name) {
				return d, name[len(d.Name):], true
			}
		}
		return Def{}, "", false
	case "Electrics":
		for _, d := range defs {
			if d.Group == "Electrics" && d.Name == name {
				return d, "", true
			}
		}
		ok := name != "" && !strings.Contains(name, "parent")
		return Def{Group: "Electrics", Name: name, Desc: "electrics." + name}, "", ok
	case "Powertrain":
		dev, field, ok := strings.Cut(name, " ")
		if !ok || dev == "" {
			return Def{}, "", false
		}
		for _, f := range PowertrainFields {
			if f == field {
				return Def{Group: "Powertrain", Name: name, Desc: "powertrain device " + dev + ", " + field}, "", true
			}
		}
		return Def{}, "", false
	}
	for _, d := range defs {
		if d.Group == class && d.Name == name {
			return d, "", true
		}
	}
	return Def{}, "", false
}

// meaning is the Gen 1 name of a catalogue signal on a given wheel.
func (d Def) meaning(wheel string) string {
	if d.Group == "Wheels" && d.Meaning != "" {
		return strings.Replace(d.Meaning, "%s", wheel, 1)
	}
	return d.Meaning
}

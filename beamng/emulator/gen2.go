package emulator

import (
	"math"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
)

// gen2 is cosimulationCoupling.lua's side of a CSV-defined coupling (spec
// §3): the message layout from the CSV, the To values sampled from the
// vehicle, and the From semantics of §3.4, the shared freeze slot and its
// NaN poisoning included.
type gen2 struct {
	csv    *cosim.File
	lay    *beamng.Layout
	outLen int   // doubles sent: 1 + signalTo rows up to the first unknown group
	toSrc  []int // per To slot: a Gen 1 state index (≥ 1), or a special (< 0), or 0 for "0"
	state  []float64
	inLen  int // 1 + signalFrom rows: a shorter reply raises a Lua error
	from   []fromSignal
	frozen map[int]float64 // frozenValues: by freeze slot, -1 shared by every signal without one
	torque bool            // wheel torques are listed in From: forced every step
}

// fromSignal is one signal of the From rows: the slots of its rows.
type fromSignal struct {
	name             string
	value, mul, add  int // slots; -1 when the row is absent
	freeze           int
	wheel            int // 0–3 for Wheels signals, -1 otherwise
	driver, applying bool
}

// Specials: To signals not in Gen 1's message.
const (
	srcZero    = 0
	srcYawRate = -1 - iota
	srcFwdX
	srcFwdY
	srcUpZ
	srcRightX
	srcRightY
	srcLength
	srcWidth
	srcHeight
	srcWheelAngle
	srcEngineAV
)

func newGen2(f *cosim.File) *gen2 {
	l := f.Layout()
	g := &gen2{csv: f, lay: l, state: make([]float64, beamng.StateLen), frozen: map[int]float64{-1: 0}}
	tos := l.Signals(beamng.FromBeamNG)
	g.outLen = len(tos)
	g.toSrc = make([]int, len(tos))
	for i, s := range tos[1:] {
		if cosim.Class(s.Group) == "" {
			// An unknown group ends BeamNG's ipairs: the message stops here.
			g.outLen = i + 1
			break
		}
		g.toSrc[i+1] = toSource(s)
	}
	froms := l.Signals(beamng.ToBeamNG)
	g.inLen = len(froms)
	byName := map[string]int{}
	for i, s := range froms[1:] {
		slot := i + 1
		key := s.Group + "/" + s.Name
		k, ok := byName[key]
		if !ok {
			k = len(g.from)
			byName[key] = k
			fs := fromSignal{name: s.Name, value: -1, mul: -1, add: -1, freeze: -1, wheel: -1}
			def, wheel, known := cosim.Lookup(s.Group, s.Name)
			fs.applying = known && def.From
			fs.driver = def.Group == "Driver"
			if def.Group == "Wheels" {
				fs.wheel = wheelIndex(wheel)
				fs.name = def.Name
				if fs.applying && (def.Name == "brakingTorque" || def.Name == "propulsionTorque") {
					g.torque = true
				}
			}
			g.from = append(g.from, fs)
		}
		fs := &g.from[k]
		switch s.Kind {
		case "value":
			fs.value = slot
		case "multiply":
			fs.mul = slot
		case "add":
			fs.add = slot
		case "freeze":
			fs.freeze = slot
			g.frozen[slot] = 0
		}
	}
	return g
}

func wheelIndex(id string) int {
	for i, w := range beamng.Wheels {
		if w == id {
			return i
		}
	}
	return -1
}

// toSource says where the emulated value of a To signal comes from.
func toSource(s beamng.Signal) int {
	if s.Meaning != "" {
		if g1, ok := beamng.Fixed.Find(beamng.FromBeamNG, s.Meaning); ok {
			return g1.Index
		}
	}
	switch s.Name {
	case "vehicleYawRate":
		return srcYawRate
	case "vehicleForwardX":
		return srcFwdX
	case "vehicleForwardY":
		return srcFwdY
	case "vehicleUpZ":
		return srcUpZ
	case "vehicleRightX":
		return srcRightX
	case "vehicleRightY":
		return srcRightY
	case "vehicleInitialLength":
		return srcLength
	case "vehicleInitialWidth":
		return srcWidth
	case "vehicleInitialHeight":
		return srcHeight
	}
	if strings.HasPrefix(s.Name, "wheelAngleF") {
		return srcWheelAngle
	}
	if strings.HasSuffix(s.Name, " outputAV1") || strings.HasSuffix(s.Name, " inputAV") {
		return srcEngineAV
	}
	return srcZero
}

// fill writes the To values into out (outLen doubles, the id aside).
func (g *gen2) fill(v *Vehicle, out []float64) {
	v.State(g.state)
	for i := 1; i < g.outLen; i++ {
		src := g.toSrc[i]
		switch {
		case src > 0:
			out[i] = g.state[src]
		case src == srcZero:
			out[i] = 0
		default:
			out[i] = v.special(src)
		}
	}
}

func (v *Vehicle) special(src int) float64 {
	switch src {
	case srcYawRate:
		return v.YawRate
	case srcFwdX:
		return math.Cos(v.Yaw)
	case srcFwdY:
		return math.Sin(v.Yaw)
	case srcUpZ:
		return 1
	case srcRightX:
		return math.Sin(v.Yaw)
	case srcRightY:
		return -math.Cos(v.Yaw)
	case srcLength:
		return 4.5
	case srcWidth:
		return 1.8
	case srcHeight:
		return 1.45
	case srcWheelAngle:
		return v.steerAngle
	case srcEngineAV:
		return v.RPM * 2 * math.Pi / 60
	}
	return 0
}

func (g *gen2) layout() *beamng.Layout { return g.lay }
func (g *gen2) sendLen() int           { return g.outLen }

// timing decodes the CSV's times as BeamNG's controller does.
func (g *gen2) timing(cfg *Config) (int, int) {
	return g.csv.SendSkips(cfg.PhysicsDt), g.csv.Unanswered()
}

// apply runs §3.4 on an accepted reply: each signal's value, times
// multiply, plus add, through its freeze slot; the signals without a freeze
// row all share frozenValues[-1], so one NaN poisons every one of them for
// good, as in BeamNG. It returns how many applied values were NaN. A reply
// shorter than the From rows raises a Lua error in 0.32/0.33 (it indexes
// the missing slot): nothing is applied.
func (g *gen2) apply(v *Vehicle, msg []float64) (nans int, luaError bool) {
	if len(msg) < g.inLen {
		return 0, true
	}
	at := func(slot int) float64 {
		if slot < 0 {
			return 0 // index -1: set to 0.0
		}
		return msg[slot]
	}
	for i := range g.from {
		fs := &g.from[i]
		res := at(fs.value)
		if fs.mul >= 0 {
			res *= at(fs.mul)
		}
		if fs.add >= 0 {
			res += at(fs.add)
		}
		f := 0.0
		if fs.freeze >= 0 {
			if x := msg[fs.freeze]; x != 0 { // sign(abs(x)): 1 for any non-zero, NaN included
				f = 1
			}
		}
		held := g.frozen[fs.freeze] // fs.freeze is -1 without a freeze row
		out := (1-f)*res + f*held
		g.frozen[fs.freeze] = out
		if !fs.applying {
			continue
		}
		if out != out {
			nans++
		}
		g.set(v, fs, out)
	}
	return nans, false
}

// set applies one From signal to the vehicle. A NaN reaches the vehicle as
// 0 here (the emulated physics would not survive it); the poisoning stays
// in the controller's held value, as in BeamNG.
func (g *gen2) set(v *Vehicle, fs *fromSignal, x float64) {
	if x != x {
		x = 0
	}
	if fs.driver {
		switch fs.name {
		case "throttle":
			v.Throttle = clamp(x, 0, 1)
		case "brake":
			v.Brake = clamp(x, 0, 1)
		case "steeringWheelPosition":
			v.Steering = clamp(x, -1, 1)
		}
		return
	}
	if fs.wheel < 0 {
		return
	}
	switch fs.name {
	case "brakingTorque":
		v.DesiredBraking[fs.wheel] = -x
	case "propulsionTorque":
		v.Propulsion[fs.wheel] = x
	}
}

// reset is the controller reloaded: fresh module state.
func (g *gen2) reset(v *Vehicle) {
	for k := range g.frozen {
		g.frozen[k] = 0
	}
	v.TorqueMode = g.torque // listed wheel torques are forced (to 0) from load
}

package emulator

import (
	"beamconnect/beamng"
)

// side is what the generation of BeamNG's coupling controller decides on
// its side of the wire: the layout, how the message is built from the
// vehicle, how an accepted reply is applied, and its timing. The emulator's
// per-step algorithm is the same for every generation and never asks which
// one it runs.
type side interface {
	layout() *beamng.Layout
	// sendLen is the length of the messages the controller sends (a Gen 2
	// row it cannot resolve cuts them short).
	sendLen() int
	// timing is the controller's sendSkips and unanswered for cfg.
	timing(cfg *Config) (sendSkips, unanswered int)
	// fill writes the message's values (out[0], the id, is the caller's).
	fill(v *Vehicle, out []float64)
	// apply applies an accepted reply (msg holds the doubles it carried):
	// nans counts NaN values that reached a control; luaError says the
	// controller raised a Lua error instead of applying anything.
	apply(v *Vehicle, msg []float64) (nans int, luaError bool)
	// reset is the controller reloaded: fresh module state.
	reset(v *Vehicle)
}

// newSide is the controller cfg describes: Gen 2's laid out by its CSV,
// else Gen 1's.
func newSide(cfg *Config) side {
	if cfg.CSV != nil {
		return newGen2(cfg.CSV)
	}
	return gen1{}
}

// gen1 is vehicleSystemsCoupling.lua's side: the fixed layout.
type gen1 struct{}

func (gen1) layout() *beamng.Layout { return beamng.Fixed }
func (gen1) sendLen() int           { return beamng.StateLen }
func (gen1) reset(*Vehicle)         {}

func (gen1) timing(cfg *Config) (int, int) {
	return beamng.SendSkips(cfg.SimulinkTime, cfg.PhysicsDt), beamng.Unanswered(cfg.PingTime, cfg.SimulinkTime)
}

func (gen1) fill(v *Vehicle, out []float64) { v.State(out) }

// apply sets the vehicle's inputs from an accepted reply. Each field is
// applied only if it is a number (v == v): NaN keeps the previous value,
// and a short reply's missing fields read as nil, which the test passes
// over too.
func (gen1) apply(v *Vehicle, msg []float64) (int, bool) {
	get := func(i int) (float64, bool) {
		if i >= len(msg) || msg[i] != msg[i] {
			return 0, false
		}
		return msg[i], true
	}
	// input.event(..., FILTER_DIRECT): BeamNG's input system keeps pedals in
	// [0,1] and steering in [-1,1].
	if x, ok := get(1); ok {
		v.Throttle = clamp(x, 0, 1)
	}
	if x, ok := get(2); ok {
		v.Brake = clamp(x, 0, 1)
	}
	if x, ok := get(3); ok {
		v.Steering = clamp(x, -1, 1)
	}
	// Element 4, gear, is read and ignored ("needs to be linked").
	for w := range 4 {
		if x, ok := get(5 + w); ok {
			v.DesiredBraking[w] = -x // desiredBrakingTorque = -(brake[i])
		}
		if x, ok := get(9 + w); ok {
			v.Propulsion[w] = x // × wheelDir, which is 1 for every wheel here
		}
	}
	if x, ok := get(13); ok {
		v.TorqueMode = x >= 0.5
	}
	return 0, false
}

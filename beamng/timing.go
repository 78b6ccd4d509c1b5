package beamng

import "math"

// PhysicsDt is BeamNG's physics step: 0.5 ms, 2000 steps a second.
const PhysicsDt = 0.0005

// SendSkips is how many physics steps BeamNG's controller lets pass between
// two sends for a given simulinkTime, with the controller's own
// double-precision arithmetic: math.ceil(simulinkTime / physicsDt) - 1.
func SendSkips(simulinkTime, physicsDt float64) int {
	return int(math.Ceil(simulinkTime/physicsDt)) - 1
}

// Unanswered is the controller's window: how many messages may be in flight
// before it blocks, math.ceil(pingTime / simulinkTime).
func Unanswered(pingTime, simulinkTime float64) int {
	return int(math.Ceil(pingTime / simulinkTime))
}

// SendPeriod is the period BeamNG really sends at when asked for
// simulinkTime: a whole number of physics steps, rounded up.
func SendPeriod(simulinkTime, physicsDt float64) float64 {
	return float64(SendSkips(simulinkTime, physicsDt)+1) * physicsDt
}

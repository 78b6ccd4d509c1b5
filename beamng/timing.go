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
//
// The product steps × physicsDt carries float noise (37 × 0.0005 is
// 0.018500000000000003), and handed back to BeamNG as a simulinkTime that
// noise would cost a whole extra step. The result is therefore rounded to
// the double nearest its decimal value (to the picosecond), which BeamNG's
// ceil maps back to the same number of steps.
func SendPeriod(simulinkTime, physicsDt float64) float64 {
	steps := float64(SendSkips(simulinkTime, physicsDt) + 1)
	return math.Round(steps*physicsDt*1e12) / 1e12
}

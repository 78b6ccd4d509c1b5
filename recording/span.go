package recording

import "math"

// unitSpans are the smallest value ranges worth a panel's height, by unit:
// what a rig engineer reads as a change. Narrower, a settled speed's
// noise (19.975 to 20.025 m/s) or a throttle's last digits fill the panel
// and a loop that holds steady looks as if it oscillates.
var unitSpans = map[string]float64{
	"m/s": 1, "km/h": 2, "m/s²": 0.5, "m": 1, "rad": 0.05, "rad/s": 1, "deg": 2, "1/min": 100,
	"N·m": 10, "N": 10, "s": 0.1, "°C": 2, "": 0.1,
}

// MinSpan is the smallest range a panel shows for values of unit around
// magnitude (the largest |value|): the unit's (0.1 for a value without a
// unit, a pedal or a gear), and at least 10 % of the magnitude, so a value
// of thousands is not drawn to its last digit either.
func MinSpan(unit string, magnitude float64) float64 {
	s, ok := unitSpans[unit]
	if !ok {
		s = 0.1
	}
	if m := math.Abs(magnitude); m > 0 && !math.IsInf(m, 0) {
		s = max(s, 0.1*m)
	}
	return s
}

// UnitSpan is MinSpan's part that depends on the unit alone, as the live
// page gets it with each column.
func UnitSpan(unit string) float64 { return MinSpan(unit, 0) }

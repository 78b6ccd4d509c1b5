package models

import (
	"math"
	"sync/atomic"

	"beamconnect/quality"
)

// Reporter is a Model that says how well it controls: a report per loop,
// judged as beamng.quality judges any model's (package quality). The
// summary, the status line, --json and the live page show them when the
// config names no loops of its own. Quality is read from other goroutines
// while the model steps (the trackers publish atomically); final says the
// run is over.
type Reporter interface {
	Quality(final bool) []quality.Report
}

// newSpeedTracker follows a cruise controller's speed against its set
// speed: settled within 2 % of the step or the set speed, at least
// 0.1 m/s.
func newSpeedTracker() *quality.Tracker {
	return quality.New(quality.Options{MinBand: 0.1, Name: "speed", Unit: "m/s"})
}

func load(v *atomic.Uint64) float64 { return math.Float64frombits(v.Load()) }

func (m *CruisePedals) Quality(final bool) []quality.Report {
	return []quality.Report{withSetpoint(m.quality.Report(final), "setSpeed (model parameter)", "groundspeed")}
}

func (m *CruiseTorque) Quality(final bool) []quality.Report {
	return []quality.Report{withSetpoint(m.quality.Report(final), "setSpeed (model parameter)", "groundspeed")}
}

func (m *HeadingHold) Quality(final bool) []quality.Report {
	return []quality.Report{withSetpoint(m.quality.Report(final), "headingDeg (model parameter)", "yaw")}
}

// Quality of the follow model: the time gap it keeps, with the time gap
// now and the smallest time to collision seen.
func (m *Follow) Quality(final bool) []quality.Report {
	r := withSetpoint(m.quality.Report(final), "timeGap (model parameter)", "")
	r.Extra = []quality.Figure{{Name: "time gap now", Value: load(&m.gapNow), Unit: "s"}, {Name: "min time to collision", Value: load(&m.minTTC), Unit: "s"}}
	return []quality.Report{r}
}

func withSetpoint(r quality.Report, setpoint, signal string) quality.Report {
	r.Setpoint, r.Signal = setpoint, signal
	return r
}

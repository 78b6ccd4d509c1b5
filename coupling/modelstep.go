package coupling

import (
	"time"

	"beamconnect/timesync"
)

// modelTiming keeps how long the model's steps took: in lockstep a slow
// step slows BeamNG, so the summary says, as information, how fast the
// model let the simulation run and which steps were the slowest. It is the
// stage's, written under its lock; it allocates nothing.
type modelTiming struct {
	clock    timesync.Clock
	period   float64 // s: the simulation time a message stands for
	vehicles int     // messages per simulation step
	steps    Histogram
	slowest  [3]SlowStep // longest first
}

// SlowStep is one of the model's slowest steps: when, in the model's time,
// and how long it took.
type SlowStep struct {
	T    float64       `json:"t_s"`
	Took time.Duration `json:"-"`
	Ms   float64       `json:"ms"`
}

// observe records a step at model time t that took d.
func (m *modelTiming) observe(t float64, d time.Duration) {
	m.steps.Observe(d)
	if d <= m.slowest[len(m.slowest)-1].Took {
		return
	}
	i := len(m.slowest) - 1
	for i > 0 && m.slowest[i-1].Took < d {
		m.slowest[i] = m.slowest[i-1]
		i--
	}
	m.slowest[i] = SlowStep{T: t, Took: d, Ms: float64(d.Microseconds()) / 1000}
}

// ModelTiming is how long the model's steps took, for the summary.
type ModelTiming struct {
	// Mode is "lockstep" or "real time" (beamng.realTime); Timeout the
	// model timeout, and where it comes from.
	Mode        string
	Timeout     time.Duration
	TimeoutFrom string
	Steps       int64
	P50, P99    time.Duration
	Max         time.Duration
	// OverPeriod counts the steps that took longer than the period: in
	// lockstep each made BeamNG wait.
	OverPeriod int64
	// RealTimeFactor is the simulated time the steps stood for over the
	// time they took: how much faster than real time the model let the
	// simulation run (BeamNG's own work aside); 0 when it took no
	// measurable time.
	RealTimeFactor float64
	Slowest        []SlowStep
}

// ModelTiming reads how long the model's steps took so far.
func (s *Session) ModelTiming() ModelTiming {
	st := s.stage
	st.mu.Lock()
	defer st.mu.Unlock()
	m := &st.timing
	p := st.plan
	t := ModelTiming{Mode: p.Mode(), Timeout: seconds(p.ModelTimeout), TimeoutFrom: p.ModelTimeoutFrom,
		Steps: m.steps.Count(), P50: m.steps.Quantile(0.5), P99: m.steps.Quantile(0.99), Max: m.steps.Max()}
	t.OverPeriod = t.Steps - m.steps.CountAtMost(seconds(m.period))
	if sum := m.steps.Sum(); sum > 0 {
		t.RealTimeFactor = float64(t.Steps) * m.period / float64(max(m.vehicles, 1)) / sum.Seconds()
	}
	for _, s := range m.slowest {
		if s.Took > 0 {
			t.Slowest = append(t.Slowest, s)
		}
	}
	return t
}

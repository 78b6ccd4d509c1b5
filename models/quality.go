package models

import (
	"encoding/json"
	"math"
	"strconv"
	"sync/atomic"
)

// Figure is one number of a controller's report on how well it works.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"` // NaN: not known yet
	Unit  string  `json:"unit"`
}

// MarshalJSON writes a value not known yet (NaN, or an infinite time to
// collision) as null.
func (f Figure) MarshalJSON() ([]byte, error) {
	var v any = f.Value
	if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
		v = nil
	}
	return json.Marshal(struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
		Unit  string `json:"unit"`
	}{f.Name, v, f.Unit})
}

// String is "name value unit", or "name n/a" before it is known.
func (f Figure) String() string {
	if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
		return f.Name + " n/a"
	}
	return f.Name + " " + strconv.FormatFloat(f.Value, 'f', 3, 64) + " " + f.Unit
}

// Reporter is a Model that says how well it controls: the summary, the
// status line, --json and the live page show its figures. Quality is read
// from other goroutines while the model steps; the model keeps its figures
// in atomics.
type Reporter interface {
	Quality() []Figure
}

// tracking follows a controller's error: now, and once it has settled
// (first within its band), the RMS and the largest magnitude since, and when
// it settled. One goroutine observes; any may read. It allocates nothing.
type tracking struct {
	band    float64 // |error| at or below which the controller has settled
	started float64 // model time of the first observation; NaN before
	settled bool
	sumSq   float64
	n       float64

	now, rms, max, settledAt atomic.Uint64 // float64 bits
}

func (q *tracking) observe(t, e float64) {
	if e != e {
		return
	}
	if q.started != q.started {
		q.started = t
	}
	q.now.Store(math.Float64bits(e))
	if !q.settled && math.Abs(e) <= q.band {
		q.settled = true
		q.settledAt.Store(math.Float64bits(t - q.started))
		q.max.Store(math.Float64bits(0))
	}
	if !q.settled {
		return
	}
	q.sumSq += e * e
	q.n++
	q.rms.Store(math.Float64bits(math.Sqrt(q.sumSq / q.n)))
	if m := math.Float64frombits(q.max.Load()); math.Abs(e) > m {
		q.max.Store(math.Float64bits(math.Abs(e)))
	}
}

// reset starts over with a new band (a new set point: the controller
// settles anew).
func (q *tracking) reset(band float64) {
	q.band, q.started, q.settled, q.sumSq, q.n = band, math.NaN(), false, 0, 0
	for _, v := range []*atomic.Uint64{&q.now, &q.rms, &q.max, &q.settledAt} {
		v.Store(math.Float64bits(math.NaN()))
	}
}

// speedBand is where a cruise controller counts as settled: 2 % of its set
// speed, at least 0.1 m/s.
func speedBand(set float64) float64 { return max(0.02*math.Abs(set), 0.1) }

func load(v *atomic.Uint64) float64 { return math.Float64frombits(v.Load()) }

// figures are the tracking's report, the error named what and measured in
// unit (scaled by scale for display).
func (q *tracking) figures(what, unit string, scale float64) []Figure {
	return []Figure{
		{what + " now", load(&q.now) * scale, unit},
		{what + " RMS after settling", load(&q.rms) * scale, unit},
		{what + " max after settling", load(&q.max) * scale, unit},
		{"settled after", load(&q.settledAt), "s"},
	}
}

func (m *CruisePedals) Quality() []Figure { return m.quality.figures("speed error", "m/s", 1) }
func (m *CruiseTorque) Quality() []Figure { return m.quality.figures("speed error", "m/s", 1) }
func (m *HeadingHold) Quality() []Figure {
	return m.quality.figures("heading error", "deg", 180/math.Pi)
}

// Quality of the follow model: the time gap it keeps now and its error
// after settling, and the smallest time to collision seen.
func (m *Follow) Quality() []Figure {
	f := m.quality.figures("time gap error", "s", 1)
	return append([]Figure{{"time gap now", load(&m.gapNow), "s"}, {"min time to collision", load(&m.minTTC), "s"}}, f...)
}

// Package quality judges how well a controller holds its setpoint, the same
// way for every model: a Tracker follows a measured value against its
// setpoint (a number, a config field or a model parameter, any of which
// may change while the run goes on) and reports the error now, its RMS and
// largest magnitude since the loop first settled, the overshoot, the time
// it took to settle, and a verdict a rig engineer reads at a glance.
//
// The definitions, in the words of the docs:
//   - a setpoint step starts when the setpoint first has a value, when it
//     moves by more than the band at once, and when time goes back (BeamNG
//     restarted its coupling); every figure then starts over;
//   - the band is where the loop counts as settled: the band given, or 2 %
//     of the step (from the measured value when the step began) or of the
//     setpoint, whichever is larger;
//   - settled after: the time from the step's start to the first time the
//     error was within the band; the RMS and max after settling count from
//     then on;
//   - overshoot: how far the measured value went past the setpoint in the
//     step's direction (0 when it never crossed it), also as a percentage
//     of the step.
//
// Observe allocates nothing and never blocks: the coupling calls it on
// every message; readers on other goroutines call Report.
package quality

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// Verdicts a Report carries.
const (
	NoData     = "no data"     // nothing measured yet
	Settling   = "settling"    // not within the band yet (the run goes on)
	NotSettled = "not settled" // the run ended before the loop settled
	Good       = "good"        // settled, and held the setpoint since
	Poor       = "poor"        // settled, then strayed or oscillated
	// Faulted is a loop that held its setpoint in a run with faults: its
	// controls were not all the model's, so it is not called good.
	Faulted = "held, in a run with faults"
)

// strayFactor bounds the error after settling in a good loop: within this
// many bands at worst (a gear shift's dip passes, a loop that leaves the
// band for good does not).
const strayFactor = 3

// Options describe one tracked loop.
type Options struct {
	// Band, when > 0, is the settling band in the measured unit; 0 takes
	// 2 % of the step or of the setpoint, whichever is larger, at least
	// MinBand.
	Band, MinBand float64
	// Wrap, when > 0, is the period of an angle (2π for radians): errors
	// are taken the short way round.
	Wrap float64
	// Scale multiplies the values reported (180/π reports radians as
	// degrees); 0 is 1.
	Scale float64
	// Name and Unit name the loop in its reports (the unit after Scale).
	Name, Unit string
}

// Tracker follows one loop. One goroutine observes; any may read.
type Tracker struct {
	opt Options

	// The observer's state.
	lastT, t0    float64 // the latest observation; the step's start (NaN before)
	set, from    float64 // the setpoint, and the measured value at the step's start
	dir          float64 // +1 or -1: the step's direction
	band         float64
	settled      bool
	sumSq, n     float64
	maxAbs, peak float64 // the largest |error| since settling; the furthest past the setpoint
	steps        int64

	// Published for readers, float64 bits.
	pub [numFigures]atomic.Uint64
	// pubSteps counts setpoint steps; pubSettled is 1 once settled.
	pubSteps, pubSettled atomic.Int64
}

// The figures published.
const (
	fNow = iota
	fRMS
	fMax
	fOvershoot
	fSettledAfter
	fSetpoint
	fBand
	fStep
	fMeasured
	numFigures
)

// New makes a tracker.
func New(o Options) *Tracker {
	if o.Scale == 0 {
		o.Scale = 1
	}
	q := &Tracker{opt: o, lastT: math.NaN(), set: math.NaN()}
	for i := range q.pub {
		q.pub[i].Store(nan)
	}
	return q
}

var nan = math.Float64bits(math.NaN())

func (q *Tracker) put(i int, v float64) { q.pub[i].Store(math.Float64bits(v)) }
func (q *Tracker) get(i int) float64    { return math.Float64frombits(q.pub[i].Load()) }

// Observe takes the measured value and the setpoint at time t (the model's
// time, s). A NaN of either is skipped.
func (q *Tracker) Observe(t, measured, setpoint float64) {
	if measured != measured || setpoint != setpoint || t != t {
		return
	}
	e := q.errorOf(measured, setpoint)
	switch {
	case q.set != q.set, t < q.lastT-1e-9, math.Abs(setpoint-q.set) > q.band:
		q.step(t, measured, setpoint)
		e = q.errorOf(measured, setpoint)
	case setpoint != q.set:
		q.set = setpoint // a small move (a ramp): the same step goes on
		q.put(fSetpoint, setpoint*q.opt.Scale)
	}
	q.lastT = t
	q.put(fNow, e*q.opt.Scale)
	q.put(fMeasured, measured*q.opt.Scale)
	// Past the setpoint in the step's direction: measured - set = -e.
	if past := -e * q.dir; past > q.peak {
		q.peak = past
		q.put(fOvershoot, past*q.opt.Scale)
	}
	a := math.Abs(e)
	if !q.settled && a <= q.band {
		q.settled = true
		q.pubSettled.Store(1)
		q.put(fSettledAfter, t-q.t0)
		q.put(fMax, 0)
	}
	if !q.settled {
		return
	}
	q.sumSq += e * e
	q.n++
	q.put(fRMS, math.Sqrt(q.sumSq/q.n)*q.opt.Scale)
	if a > q.maxAbs {
		q.maxAbs = a
		q.put(fMax, a*q.opt.Scale)
	}
}

// errorOf is setpoint - measured, the short way round for an angle.
func (q *Tracker) errorOf(measured, setpoint float64) float64 {
	e := setpoint - measured
	if q.opt.Wrap > 0 {
		e = math.Remainder(e, q.opt.Wrap)
	}
	return e
}

// step starts a new setpoint step at time t.
func (q *Tracker) step(t, measured, setpoint float64) {
	size := q.errorOf(measured, setpoint)
	q.t0, q.set, q.from = t, setpoint, measured
	q.dir = 1
	if size < 0 {
		q.dir = -1
	}
	q.band = q.opt.Band
	if q.band <= 0 {
		q.band = max(0.02*max(math.Abs(size), math.Abs(setpoint)), q.opt.MinBand, 1e-12)
	}
	q.settled, q.sumSq, q.n, q.maxAbs, q.peak = false, 0, 0, 0, 0
	q.steps++
	q.pubSteps.Store(q.steps)
	q.pubSettled.Store(0)
	q.pub[fRMS].Store(nan)
	q.pub[fMax].Store(nan)
	q.pub[fSettledAfter].Store(nan)
	q.put(fOvershoot, 0)
	q.put(fSetpoint, setpoint*q.opt.Scale)
	q.put(fBand, q.band*q.opt.Scale)
	q.put(fStep, math.Abs(size)*q.opt.Scale)
}

// Report reads the tracker's figures now; final says the run is over (a
// loop still settling then did not settle).
func (q *Tracker) Report(final bool) Report {
	r := Report{
		Name: q.opt.Name, Unit: q.opt.Unit,
		Error: q.get(fNow), RMS: q.get(fRMS), Max: q.get(fMax), Overshoot: q.get(fOvershoot),
		SettledAfter: q.get(fSettledAfter), Value: q.get(fSetpoint), Band: q.get(fBand),
		Measured: q.get(fMeasured), Steps: q.pubSteps.Load(),
	}
	if step := q.get(fStep); step > 0 && r.Overshoot == r.Overshoot {
		r.OvershootPct = 100 * r.Overshoot / step
	} else {
		r.OvershootPct = math.NaN()
	}
	r.judge(q.pubSettled.Load() == 1, final)
	return r
}

// Figure is one further number of a model's own report (a follow model's
// smallest time to collision).
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"` // NaN: not known yet
	Unit  string  `json:"unit"`
}

// MarshalJSON writes a value not known (NaN, or infinite) as null.
func (f Figure) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
		Unit  string `json:"unit"`
	}{f.Name, orNull(f.Value), f.Unit})
}

// String is "name value unit", or "name n/a" before it is known.
func (f Figure) String() string {
	if !finite(f.Value) {
		return f.Name + " n/a"
	}
	return f.Name + " " + num(f.Value) + unitSuffix(f.Unit)
}

// Report is one loop's verdict.
type Report struct {
	Name     string  `json:"name"`     // what is controlled: groundspeed, speed, heading
	Signal   string  `json:"signal"`   // the measured value's column (out1.groundspeed), "" for a model's own
	Setpoint string  `json:"setpoint"` // where the setpoint comes from: 20, setSpeed (model parameter), out2.custom1
	Unit     string  `json:"unit"`
	Value    float64 `json:"setpoint_value"` // the setpoint now
	Measured float64 `json:"measured_value"` // the measured value now
	Band     float64 `json:"band"`
	Error    float64 `json:"error_now"` // setpoint - measured
	RMS      float64 `json:"error_rms_after_settling"`
	Max      float64 `json:"error_max_after_settling"`
	// Overshoot is how far past the setpoint the measured value went, in
	// the unit and as a percentage of the step.
	Overshoot    float64 `json:"overshoot"`
	OvershootPct float64 `json:"overshoot_percent"`
	SettledAfter float64 `json:"settled_after_s"`
	Steps        int64   `json:"setpoint_steps"`
	Verdict      string  `json:"verdict"` // good, poor, settling, not settled, no data
	// Why says the verdict in a sentence.
	Why   string   `json:"why"`
	Extra []Figure `json:"extra,omitempty"`
}

// Good reports whether the loop held its setpoint.
func (r Report) Good() bool { return r.Verdict == Good }

// judge sets the verdict from the figures.
func (r *Report) judge(settled, final bool) {
	u := unitSuffix(r.Unit)
	band := "±" + num(r.Band) + u
	switch {
	case !finite(r.Error):
		r.Verdict, r.Why = NoData, "nothing measured yet"
		if final {
			r.Why = "nothing was measured (the model never stepped)"
		}
	case !settled && final:
		r.Verdict, r.Why = NotSettled, fmt.Sprintf("never within %s, the error %s%s at the end", band, num(r.Error), u)
	case !settled:
		r.Verdict, r.Why = Settling, fmt.Sprintf("not within %s yet, the error %s%s", band, num(r.Error), u)
	case r.RMS > r.Band:
		r.Verdict, r.Why = Poor, fmt.Sprintf("settled after %s s, then its error's RMS (%s%s) exceeded %s: it oscillates or drifts", num(r.SettledAfter), num(r.RMS), u, band)
	case r.Max > strayFactor*r.Band:
		r.Verdict, r.Why = Poor, fmt.Sprintf("settled after %s s, then strayed up to %s%s from the setpoint, over %d times %s", num(r.SettledAfter), num(r.Max), u, strayFactor, band)
	default:
		r.Verdict, r.Why = Good, fmt.Sprintf("settled after %s s and held within %s since", num(r.SettledAfter), band)
	}
}

// InFaultedRun is the report of a loop in a run with faults (why says
// which): a loop that held its setpoint is Faulted, not good; other
// verdicts stay.
func (r Report) InFaultedRun(why string) Report {
	if r.Verdict == Good {
		r.Verdict = Faulted
		r.Why += "; but the run had faults (" + why + "), so it is not judged good"
	}
	return r
}

// Line is the report as the summary prints it: the verdict and why, then
// the figures known.
func (r Report) Line() string {
	u := unitSuffix(r.Unit)
	parts := []string{fmt.Sprintf("%s: %s: %s", r.Name, r.Verdict, r.Why)}
	if finite(r.Value) {
		p := "setpoint " + num(r.Value) + u
		if r.Setpoint != "" && r.Setpoint != num(r.Value) {
			p += " from " + r.Setpoint
		}
		parts = append(parts, p)
	}
	if finite(r.Error) {
		parts = append(parts, "error now "+num(r.Error)+u)
	}
	if finite(r.RMS) {
		parts = append(parts, "after settling RMS "+num(r.RMS)+u+", max "+num(r.Max)+u)
	}
	if finite(r.Overshoot) && finite(r.Error) {
		p := "overshoot " + num(r.Overshoot) + u
		if finite(r.OvershootPct) {
			p += fmt.Sprintf(" (%.1f %% of the step)", r.OvershootPct)
		}
		parts = append(parts, p)
	}
	if r.Steps > 1 {
		parts = append(parts, fmt.Sprintf("%d setpoint steps, the figures since the last", r.Steps))
	}
	for _, f := range r.Extra {
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}

// Short is the report in a few words, for a status line: "groundspeed
// good, err -0.04 m/s".
func (r Report) Short() string {
	if !finite(r.Error) {
		return r.Name + " " + r.Verdict
	}
	return r.Name + " " + r.Verdict + ", err " + num(r.Error) + unitSuffix(r.Unit)
}

// MarshalJSON writes the figures not known (NaN) as null.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		Value        any `json:"setpoint_value"`
		Measured     any `json:"measured_value"`
		Band         any `json:"band"`
		Error        any `json:"error_now"`
		RMS          any `json:"error_rms_after_settling"`
		Max          any `json:"error_max_after_settling"`
		Overshoot    any `json:"overshoot"`
		OvershootPct any `json:"overshoot_percent"`
		SettledAfter any `json:"settled_after_s"`
	}{plain(r), orNull(r.Value), orNull(r.Measured), orNull(r.Band), orNull(r.Error), orNull(r.RMS), orNull(r.Max),
		orNull(r.Overshoot), orNull(r.OvershootPct), orNull(r.SettledAfter)})
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func orNull(v float64) any {
	if !finite(v) {
		return nil
	}
	return v
}

func orNA(v float64, unit string) string {
	if !finite(v) {
		return "n/a"
	}
	return num(v) + unit
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

// num writes v with 4 significant digits, what a person compares, not
// every bit.
func num(v float64) string {
	a := math.Abs(v)
	if a >= 1e4 && a < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

package recording

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// sampleSize is how many of a field's values are kept (a uniform sample of
// them all) to estimate its quantiles in one pass.
const sampleSize = 4096

// Robust scaling clips only what is rare and far. A field's values run
// from its central band (5th to 95th percentile) outwards as long as each
// next value follows the last one closely: within the band's width, or
// what its unit counts as a change (UnitSpan). What lies beyond the first
// wider gap is clipped only when it is rare (at most rareShare of the
// values) and far: clipping makes the rest at least clipGain times taller
// than the full range, and than what its unit counts as a change. So a
// control's genuine excursions stay whole (a brake pressed to 0.5 while it
// rests at 0: on the way there it passes through the values between, or
// is within ten of its unit's changes), while a time to collision that
// jumps to 1e5 s, an invalid start of -1, a garbage value, are clipped.
const (
	bandLo, bandHi = 0.05, 0.95
	minSample      = 20
	clipGain       = 10
	rareShare      = 0.05
)

// field is one column drawn: its range from the first pass, its trace and
// clipped values from the second.
type field struct {
	name  Name
	unit  string
	order int // in the drawing
	color string

	n        int
	min, max float64
	fraction bool // a value that is not a whole number came: not a status, a gear, a count
	sample   []float64
	rng      *rand.Rand
	lo, hi   float64 // the range it needs: all of it, or the band without outliers

	panel  *panel
	header int // the last header the column was in (second pass)
	trace  trace
	// values clipped at the panel's edges, and where (pixel columns)
	above, below      int
	aboveAt, belowAt  []int
	seenMax, seenMin  float64
	clipHigh, clipLow float64 // the panel's edges when clipped
}

func newField(n Name, order int) *field {
	return &field{name: n, unit: n.Unit(), order: order, min: math.Inf(1), max: math.Inf(-1),
		rng: rand.New(rand.NewPCG(uint64(order)+1, 0x5eed)), seenMax: math.Inf(-1), seenMin: math.Inf(1)}
}

// observe takes one value in the first pass: the range, and a uniform
// sample (reservoir sampling) for the quantiles.
func (f *field) observe(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	f.min, f.max = min(f.min, v), max(f.max, v)
	f.fraction = f.fraction || v != math.Trunc(v)
	if len(f.sample) < sampleSize {
		f.sample = append(f.sample, v)
	} else if j := f.rng.IntN(f.n + 1); j < sampleSize {
		f.sample[j] = v
	}
	f.n++
}

// robust sets the range the field needs drawn: its central band widened
// by the band's width each way, when cutting the outliers beyond it makes
// the rest at least clipGain times taller; all of it otherwise. A field
// whose band has no width (a pedal at rest but for a few presses) keeps
// all of it: its excursions are what matters.
func (f *field) robust(noClip bool) {
	f.lo, f.hi = f.min, f.max
	if f.n == 0 {
		f.lo, f.hi = 0, 0
		return
	}
	// A field of whole numbers (a status, a gear, a count) has states,
	// not outliers: an error status of 4 among 3s is the story.
	if len(f.sample) < minSample || noClip || !f.fraction {
		return
	}
	// The first pass is over: the sample is sorted where it is, and let go.
	s := f.sample
	f.sample = nil
	slices.Sort(s)
	ia, ib := int(bandLo*float64(len(s)-1)+0.5), int(bandHi*float64(len(s)-1)+0.5)
	change := UnitSpan(f.unit)
	step := max(s[ib]-s[ia], change)
	// Upwards from the band's top, and downwards from its bottom, to the
	// first gap wider than a step.
	top := ib
	for top+1 < len(s) && s[top+1]-s[top] <= step {
		top++
	}
	bottom := ia
	for bottom > 0 && s[bottom]-s[bottom-1] <= step {
		bottom--
	}
	rare := func(n int) bool { return float64(n) <= rareShare*float64(len(s)) }
	lo, hi := f.min, f.max
	if top < len(s)-1 && rare(len(s)-1-top) {
		hi = s[top]
	}
	if bottom > 0 && rare(bottom) {
		lo = s[bottom]
	}
	if (lo != f.min || hi != f.max) && f.max-f.min >= clipGain*max(hi-lo, change) {
		f.lo, f.hi = lo, hi
	}
}

// clipText says what was clipped: "41 values above 4541 s (max 31746 s)",
// or "".
func (f *field) clipText() string {
	var parts []string
	u := ""
	if f.unit != "" {
		u = " " + f.unit
	}
	if f.above > 0 {
		parts = append(parts, fmt.Sprintf("%d values above %s%s (max %s%s)", f.above, short(f.clipHigh), u, short(f.seenMax), u))
	}
	if f.below > 0 {
		parts = append(parts, fmt.Sprintf("%d values below %s%s (min %s%s)", f.below, short(f.clipLow), u, short(f.seenMin), u))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return parts[0] + ", " + parts[1]
}

// short writes v with 4 significant digits, without an exponent from 1e-3
// to 1e10.
func short(v float64) string {
	if a := math.Abs(v); a >= 1e4 && a < 1e10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// trace is a field's polyline runs, reduced to the extremes per pixel
// column.
type trace struct {
	runs []run
	cur  *run
	// the pixel column being gathered
	px                      int
	have                    bool
	first, last, vmin, vmax float64
	minFirst                bool
	lastT                   float64
}

type run struct{ xs, ys []float64 }

// add takes one value at time t in the second pass. A value beyond the
// panel's range is drawn at its edge and counted.
func (f *field) add(t, v float64) {
	tr := &f.trace
	if math.IsNaN(v) || math.IsInf(v, 0) {
		f.cut() // a gap, as in the live scope
		return
	}
	if tr.have && t < tr.lastT-0.5 {
		f.cut() // time went back: BeamNG reloaded (vehicles' rows may interleave a little out of order)
	}
	tr.lastT = t
	pn := f.panel
	px := int(pn.PX(t))
	f.seenMax, f.seenMin = max(f.seenMax, v), min(f.seenMin, v)
	switch {
	case v > pn.Hi:
		f.above++
		f.clipHigh = pn.Hi
		f.aboveAt = appendPixel(f.aboveAt, px)
		v = pn.Hi
	case v < pn.Lo:
		f.below++
		f.clipLow = pn.Lo
		f.belowAt = appendPixel(f.belowAt, px)
		v = pn.Lo
	}
	if tr.have && px == tr.px {
		if v < tr.vmin {
			tr.vmin, tr.minFirst = v, false
		}
		if v > tr.vmax {
			tr.vmax, tr.minFirst = v, true
		}
		tr.last = v
		return
	}
	f.flush()
	tr.px, tr.have = px, true
	tr.first, tr.last, tr.vmin, tr.vmax, tr.minFirst = v, v, v, v, true
}

// appendPixel notes a pixel column, once.
func appendPixel(at []int, px int) []int {
	if n := len(at); n > 0 && at[n-1] == px {
		return at
	}
	return append(at, px)
}

// flush draws the pixel column gathered: first, the extremes in the order
// they came, last.
func (f *field) flush() {
	tr := &f.trace
	if !tr.have {
		return
	}
	if tr.cur == nil {
		tr.runs = append(tr.runs, run{})
		tr.cur = &tr.runs[len(tr.runs)-1]
	}
	x := float64(tr.px)
	pts := []float64{tr.first, tr.vmax, tr.vmin, tr.last}
	if tr.minFirst {
		pts[1], pts[2] = tr.vmin, tr.vmax
	}
	for i, v := range pts {
		if i > 0 && v == pts[i-1] {
			continue
		}
		tr.cur.xs = append(tr.cur.xs, x)
		tr.cur.ys = append(tr.cur.ys, f.panel.PY(v))
	}
	tr.have = false
}

// cut ends the current run.
func (f *field) cut() {
	f.flush()
	f.trace.cur = nil
}

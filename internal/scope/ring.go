// Package scope keeps the recent values of a running coupling for a live
// view: a ring of samples (time, then every port value in a recording's
// column order) that the coupling's loop fills and readers copy out.
//
// The loop must never wait for a reader, however slow: Push takes the lock
// only if it is free (TryLock); otherwise it holds the sample aside, in
// space of its own, and stores it with the next sample that finds the lock
// free. A reader holds the lock only to copy samples out, never while it
// writes to a network connection, so a stalled browser costs the loop
// nothing, and a reader preempted while it copies (a busy machine) costs
// no sample either: only a reader that holds the ring for longer than the
// held space lasts (a second of messages at most) makes Push drop samples,
// and they are counted.
package scope

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Column is one value of a sample: its name as a recording's header has it
// (out3.wheelspeed), the port it belongs to, which the live view draws as
// one group of plots, and its unit ("" for none), which decides the plot
// it shares within the port.
type Column struct {
	Name string `json:"name"`
	Port string `json:"port"`
	Unit string `json:"unit"`
	// MinSpan is the smallest value range worth a plot's height for the
	// unit (recording.MinSpan): a settled value's noise is not drawn as a
	// swing.
	MinSpan float64 `json:"min_span"`
	// Comment says what the value is (a recording's column comment): the
	// page shows it over the name.
	Comment string `json:"comment,omitempty"`
}

// Layout is what a sample holds. Generation changes whenever a reload
// changes the columns, so readers know to fetch the layout again.
type Layout struct {
	Generation int64    `json:"generation"`
	Columns    []Column `json:"columns"`
}

// Ring holds the last Capacity samples.
type Ring struct {
	mu     sync.Mutex
	layout Layout
	width  int
	t      []float64 // capacity
	v      []float64 // capacity × width
	n      uint64    // samples ever pushed (this generation)

	every   int // keep one message in every
	skip    int
	dropped atomic.Int64

	// Samples Push could not store while a reader held the ring: the
	// writer's own, never touched by a reader.
	heldT []float64
	heldV []float64 // len(heldT) × width
	held  int
}

// heldBytes bounds the held space: a wide layout holds fewer samples.
const heldBytes = 1 << 20

// New makes a ring of capacity samples with columns, keeping one message in
// every (1 keeps all): the view needs a screen's resolution, not BeamNG's
// 2000 messages a second.
func New(columns []Column, capacity, every int) *Ring {
	r := &Ring{every: max(every, 1)}
	r.t = make([]float64, max(capacity, 1))
	r.reset(columns)
	return r
}

func (r *Ring) reset(columns []Column) {
	r.layout = Layout{Generation: r.layout.Generation + 1, Columns: columns}
	r.width = len(columns)
	r.v = make([]float64, len(r.t)*r.width)
	r.n = 0
	held := min(len(r.t), max(64, min(2048, heldBytes/8/(r.width+1))))
	r.heldT = make([]float64, held)
	r.heldV = make([]float64, held*r.width)
	r.held = 0
}

// SetColumns changes the columns (a reload that changed the ports): a new
// generation, whose samples so far are the old ones with the columns that
// stayed (by name), and NaN, a gap, for the new ones, so a scope keeps its
// history across reloads. It waits for readers; it is not on the
// per-message path. Its caller makes sure it does not run while Push does
// (the coupling calls both under its stage's lock).
func (r *Ring) SetColumns(columns []Column) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.storeHeld() // in the old layout, which they are of
	old, oldW, oldV, oldT, n := r.layout.Columns, r.width, r.v, slices.Clone(r.t), r.n
	r.reset(columns)
	from := make([]int, len(columns))
	for i, c := range columns {
		from[i] = slices.IndexFunc(old, func(o Column) bool { return o.Name == c.Name })
	}
	capacity := uint64(len(r.t))
	kept := min(n, capacity)
	for k := range kept {
		slot := int((n - kept + k) % capacity)
		r.t[k] = oldT[slot]
		row := r.v[int(k)*r.width : int(k+1)*r.width]
		for i, j := range from {
			row[i] = math.NaN()
			if j >= 0 {
				row[i] = oldV[slot*oldW+j]
			}
		}
	}
	r.n = kept
}

// Layout is the current layout.
func (r *Ring) Layout() Layout {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.layout
}

// Push records the values of one message at time t: every vector of each
// group in turn, in order, as many values as the layout has columns. It
// never blocks and allocates nothing; it reports false when the sample was
// not kept (decimated, or dropped because a reader held the ring for longer
// than the held space lasts). One writer pushes at a time.
func (r *Ring) Push(t float64, groups ...[][]float64) bool {
	if r.skip++; r.skip < r.every {
		return false
	}
	r.skip = 0
	if !r.mu.TryLock() {
		if r.held == len(r.heldT) {
			r.dropped.Add(1)
			return false
		}
		r.heldT[r.held] = t
		fill(r.heldV[r.held*r.width:(r.held+1)*r.width], groups)
		r.held++
		return true
	}
	r.storeHeld()
	fill(r.next(t), groups)
	r.mu.Unlock()
	return true
}

// next makes room for the sample at time t and returns its row.
func (r *Ring) next(t float64) []float64 {
	slot := int(r.n % uint64(len(r.t)))
	r.n++
	r.t[slot] = t
	return r.v[slot*r.width : (slot+1)*r.width]
}

// storeHeld stores the held samples, in order, under the lock.
func (r *Ring) storeHeld() {
	for k := range r.held {
		copy(r.next(r.heldT[k]), r.heldV[k*r.width:(k+1)*r.width])
	}
	r.held = 0
}

// fill copies the groups' vectors into row, in order.
func fill(row []float64, groups [][][]float64) {
	i := 0
	for _, g := range groups {
		for _, vec := range g {
			i += copy(row[i:], vec)
		}
	}
	clear(row[i:]) // a short sample (not expected) shows zeros, not old values
}

// Dropped is how many samples readers' copies cost.
func (r *Ring) Dropped() int64 { return r.dropped.Load() }

// Samples is a reader's copy: times and values row by row.
type Samples struct {
	Generation int64
	T          []float64
	V          []float64 // len(T) × width
	Width      int
	Missed     uint64 // samples overwritten before this reader got to them
}

// Since copies the samples after cursor (a count of samples pushed, 0 at the
// start) into s, reusing its slices, and returns the new cursor. A cursor
// from an older generation, or one the ring has lapped, reads from the
// oldest sample kept.
func (r *Ring) Since(cursor uint64, generation int64, s *Samples) uint64 {
	return r.SinceAtMost(cursor, generation, s, 0)
}

// SinceAtMost is Since keeping at most limit samples (0: all): every k-th,
// counted back from the newest, which is always kept. A reader that shows
// a screen's worth copies only that, however far behind it is: its copy,
// and the time it holds the ring, stay bounded.
func (r *Ring) SinceAtMost(cursor uint64, generation int64, s *Samples, limit int) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.Generation, s.Width, s.Missed = r.layout.Generation, r.width, 0
	s.T, s.V = s.T[:0], s.V[:0]
	if generation != r.layout.Generation || cursor > r.n {
		cursor = 0
	}
	oldest := uint64(0)
	if r.n > uint64(len(r.t)) {
		oldest = r.n - uint64(len(r.t))
	}
	if cursor < oldest {
		if generation == r.layout.Generation && cursor > 0 {
			s.Missed = oldest - cursor
		}
		cursor = oldest
	}
	step := uint64(1)
	if n := r.n - cursor; limit > 0 && n > uint64(limit) {
		step = (n + uint64(limit) - 1) / uint64(limit)
		cursor += (n - 1) % step // the newest is kept
	}
	for k := cursor; k < r.n; k += step {
		slot := int(k % uint64(len(r.t)))
		s.T = append(s.T, r.t[slot])
		s.V = append(s.V, r.v[slot*r.width:(slot+1)*r.width]...)
	}
	return r.n
}

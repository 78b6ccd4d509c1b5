package coupling

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/recording"
)

// Recording buffers: the loop fills one while a writer goroutine writes
// another, so a slow or full disk never holds the loop up. Past
// maxBuffered bytes waiting, rows are counted lost rather than kept; past
// maxEvents waiting, events are dropped.
const (
	recordBufSize = 256 << 10
	maxBuffered   = 8 << 20
	maxEvents     = 1024
)

// Recorder records one row per BeamNG message, in the format its
// recording.Writer writes (CSV, MDF 4): BeamNG's simulation time, status,
// BeamNG's id, the reply id, the reload count, the local time, then every
// output and input port element, the setpoints and the model's own
// variables (recording.LayoutOf); and what happens during the run
// (reloads, model faults, status changes, diagnoses, rows lost, the run's
// faults) for formats that keep events.
//
// It loses nothing it could keep. Rows are encoded without allocating
// into a buffer of whole rows; the coupling hands the buffer to a writer
// goroutine every 250 ms, while BeamNG is silent too, so a crash loses at
// most that; the format keeps its file whole (a CSV file whole rows, an
// MDF file linked blocks); a write error (a full disk) is logged at once,
// the rows are counted lost, the coupling goes on, and later rows are
// written if the disk has room again.
type Recorder struct {
	f    recording.Writer
	name string
	log  *slog.Logger

	// Under the stage's lock (the loop's side).
	layout    *recording.Layout
	pending   bool // layout's header is not written yet: at the next row
	plan      *ports.Plan
	vals      []float64
	cur       *batch // rows the loop is filling
	lastFlush time.Time
	lastT     float64
	endT      float64          // the last row's time, set by Close for the writer
	reload    *recording.Event // a reload waiting for the time of its first row
	// A destination that takes nothing, said while the run goes on: since
	// when the writer has refused every hand-over, whether that was said,
	// and the lost rows' log, at once and then at most every lostSayEvery.
	refusedSince time.Time
	stallSaid    bool
	lostSaid     *models.Limiter
	// Rows held back while the model has not named its variables (before
	// the header is written): their values as the layout then had them,
	// and their vehicles.
	heldAll     []float64
	heldWidth   int
	heldVehicle []int

	full      chan *batch // to the writer
	free      chan *batch // back from it
	done      chan struct{}
	closeOnce sync.Once
	abandoned atomic.Bool // Close gave up on the writer: it counts nothing more

	evMu    sync.Mutex
	events  []recording.Event // from any goroutine, waiting for the next hand-over
	dropped int
	untimed atomic.Bool // an event waits for the next row's time

	rows     atomic.Int64 // rows recorded (handed over)
	written  atomic.Int64 // rows in the file
	lost     atomic.Int64 // rows that could not be written
	behind   atomic.Int64 // of those, rows never kept: the writer was too far behind
	failures int          // failed writes (writer goroutine)
	errMu    sync.Mutex
	err      error // the first write error
}

// batch is what one hand-over carries: encoded rows, and events.
type batch struct {
	data   []byte
	events []recording.Event
}

// NewRecorder records plan's run to w as CSV. log (may be nil) hears of
// write errors when they happen.
func NewRecorder(w io.Writer, plan *ports.Plan, log *slog.Logger) *Recorder {
	name := "the recording"
	if f, ok := w.(interface{ Name() string }); ok {
		name = f.Name()
	}
	return NewRecorderOf(recording.NewCSV(w), name, plan, log)
}

// NewRecorderOf records plan's run with w, a format's writer; name names
// the file in errors.
func NewRecorderOf(w recording.Writer, name string, plan *ports.Plan, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{
		f: w, log: log, name: name, lastT: math.NaN(), lostSaid: models.NewLimiter(lostSayEvery),
		cur:  &batch{data: make([]byte, 0, recordBufSize)},
		full: make(chan *batch, 1), free: make(chan *batch, 3), done: make(chan struct{}),
	}
	r.free <- &batch{data: make([]byte, 0, recordBufSize)}
	r.free <- &batch{data: make([]byte, 0, recordBufSize)}
	go r.write()
	r.Layout(plan, nil)
	return r
}

// Layout lays the rows out for plan and the model's variables vars
// (models.Sampler): at the start, at every reload, and when the model's
// variables change. A new plan is a reload, recorded as an event at the
// time of the first row it applies to, with what changed and the config's
// text. The header is written with the next row (or at Close), so that
// the layouts given before the first row write one; a format writes none
// for a layout whose columns it has already (a reload of parameters).
func (r *Recorder) Layout(plan *ports.Plan, vars []models.Variable) {
	if r.plan != nil && r.plan != plan {
		ch := ports.Diff(r.plan, plan)
		what := append(append([]string{}, ch.Live...), ch.RestartOnly...)
		if ch.Params != "" {
			what = append(what, ch.Params)
		}
		// The same config by another plan (a recorder made before the
		// session's) is no reload.
		if text := strings.Join(what, "; "); text != "" {
			r.reload = &recording.Event{Time: math.NaN(), Vehicle: -1, Kind: recording.Reload, Name: "reload", Text: text, Config: plan.Config}
		}
	}
	if r.pending && r.heldWidth > 0 && r.plan != nil && r.plan != plan {
		// A reload while rows are held: they go under the layout they
		// were made with.
		r.header()
		r.release()
	}
	r.plan = plan
	r.layout = recording.LayoutOf(plan, vars)
	r.pending = true
}

// hold keeps a row back while the header waits for the model's names;
// false when there is no more room (the row is then written as it is).
func (r *Recorder) hold(e *recording.Entry) bool {
	n := len(r.layout.Columns)
	if r.heldWidth != 0 && r.heldWidth != n || len(r.heldVehicle) >= maxHeldRows || len(r.heldAll)+n > maxHeldValues {
		return false
	}
	if r.untimed.Load() {
		r.stamp(e.Time)
	}
	r.lastT = e.Time
	r.heldWidth = n
	r.vals = r.layout.Flatten(r.vals, e)
	r.heldAll = append(r.heldAll, r.vals...)
	r.heldVehicle = append(r.heldVehicle, e.Vehicle)
	r.rows.Add(1)
	return true
}

// release writes the rows held back under the header just written: the
// model's columns it did not have then are NaN.
func (r *Recorder) release() {
	if r.heldWidth == 0 {
		return
	}
	n := len(r.layout.Columns)
	for i, v := range r.heldVehicle {
		row := r.heldAll[i*r.heldWidth : (i+1)*r.heldWidth]
		r.vals = append(r.vals[:0], row...)
		for len(r.vals) < n {
			r.vals = append(r.vals, math.NaN())
		}
		r.cur.data = r.f.Row(r.cur.data, v, r.vals[:n])
		if len(r.cur.data) >= recordBufSize*3/4 {
			r.handOver(time.Now())
		}
	}
	r.heldAll, r.heldVehicle, r.heldWidth = nil, nil, 0
}

// header writes the pending layout's header. A header is never dropped:
// the rows after it are read by it.
func (r *Recorder) header() {
	r.pending = false
	r.cur.data = r.f.Header(r.cur.data, r.layout)
}

// maxHeld bounds the rows held back while the model names its variables.
const (
	maxHeldValues = 1 << 19 // 4 MB of values
	maxHeldRows   = 20000
)

// Row records one message's row. Before the header is written, while the
// model has not named its variables yet (an exec program starting), the row
// is held back, up to a bound, and written under the header the names
// make. It allocates nothing (holding rows, only at the start).
func (r *Recorder) Row(e *recording.Entry) {
	if r.pending {
		if e.VariablesPending && r.hold(e) {
			return
		}
		r.header()
		r.release()
	}
	t := e.Time
	if r.reload != nil {
		r.reload.Time = t
		r.Event(*r.reload)
		r.reload = nil
	}
	if r.untimed.Load() {
		r.stamp(t)
	}
	r.lastT = t
	r.vals = r.layout.Flatten(r.vals, e)
	before := len(r.cur.data)
	r.cur.data = r.f.Row(r.cur.data, e.Vehicle, r.vals)
	if len(r.cur.data) > maxBuffered {
		// The writer is far behind: the row is counted lost, not kept, and
		// said at once (then at most every lostSayEvery): the log's handler
		// never blocks.
		r.cur.data = r.cur.data[:before]
		r.behind.Add(1)
		lost := r.lost.Add(1)
		if n, ok := r.lostSaid.Allow(time.Now()); ok {
			r.log.Error("recording: rows are lost: the destination is too far behind (a pipe nobody reads, a hung or slow disk?); the coupling goes on",
				"file", r.name, "rows_lost", lost, "since_said", n)
		}
		return
	}
	r.rows.Add(1)
	if len(r.cur.data) >= recordBufSize*3/4 {
		r.handOver(time.Now()) // before the buffer would have to grow
	}
}

// Event records something that happened, at e.Time (NaN: at the time of
// the next row, the message whose step it happened in). Safe from any
// goroutine; it never blocks for long.
func (r *Recorder) Event(e recording.Event) {
	if r == nil {
		return
	}
	r.evMu.Lock()
	defer r.evMu.Unlock()
	if len(r.events) >= maxEvents {
		if r.dropped++; r.dropped == 1 {
			r.log.Warn("recording: events come faster than they are written; dropping them", "file", r.name)
		}
		return
	}
	r.events = append(r.events, e)
	if math.IsNaN(e.Time) {
		r.untimed.Store(true)
	}
}

// stamp gives the events waiting for a row's time the time t.
func (r *Recorder) stamp(t float64) {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	for i := range r.events {
		if math.IsNaN(r.events[i].Time) {
			r.events[i].Time = t
		}
	}
	r.untimed.Store(false)
}

// flushBy hands the rows over to the writer when the last hand-over is
// older than every, and says when to call again. It never blocks: when the
// writer is still busy, the rows wait for the next call.
func (r *Recorder) flushBy(now time.Time, every time.Duration) (next time.Time) {
	if (len(r.cur.data) > 0 || r.eventsWaiting()) && now.Sub(r.lastFlush) >= every {
		if r.handOver(now); now.Sub(r.lastFlush) >= every {
			return now.Add(every / 10) // the writer is busy: soon again
		}
	}
	if next = r.lastFlush.Add(every); !next.After(now) {
		next = now.Add(every) // nothing to hand over
	}
	return next
}

func (r *Recorder) eventsWaiting() bool {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	return len(r.events) > 0
}

func (r *Recorder) handOver(now time.Time) {
	// Only this goroutine sends on full and receives from free, so the
	// lengths can only move in its favour between check and use.
	if len(r.full) == 0 && len(r.free) > 0 {
		r.lastFlush = now
		r.takeEvents(r.cur)
		r.full <- r.cur
		r.cur = <-r.free
		r.cur.data, r.cur.events = r.cur.data[:0], r.cur.events[:0]
		if r.stallSaid {
			r.log.Info("recording: the destination takes rows again", "file", r.name, "after", now.Sub(r.refusedSince).Round(time.Millisecond))
		}
		r.refusedSince, r.stallSaid = time.Time{}, false
		return
	}
	// The writer still holds what it was handed: a destination that has
	// taken nothing for stallAfter is said while the run goes on, not
	// only when Close gives up on it.
	switch {
	case r.refusedSince.IsZero():
		r.refusedSince = now
	case !r.stallSaid && now.Sub(r.refusedSince) >= stallAfter:
		r.stallSaid = true
		r.log.Warn("recording: the destination takes no rows (a pipe nobody reads, a hung disk?); the coupling goes on, rows wait in memory and past 8 MB are lost",
			"file", r.name, "for", now.Sub(r.refusedSince).Round(time.Millisecond))
	}
}

// stallAfter is how long the writer may hold rows it was handed before the
// destination is said to take none; lostSayEvery bounds how often lost rows
// are said (the first at once).
const (
	stallAfter   = time.Second
	lostSayEvery = 10 * time.Second
)

// takeEvents moves the events waiting into b, but those still waiting
// for a row's time.
func (r *Recorder) takeEvents(b *batch) {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	kept := r.events[:0]
	for _, e := range r.events {
		if math.IsNaN(e.Time) {
			kept = append(kept, e)
			continue
		}
		b.events = append(b.events, e)
	}
	clear(r.events[len(kept):])
	r.events = kept
}

// closeWait bounds how long Close waits for the writer: a destination
// that blocks (a hung network disk, a pipe nobody reads) must not hold the
// end of a run, its summary, or its exit.
var closeWait = 2 * time.Second

// Close writes what is left, ends the file (an MDF file is finalized) and
// waits for the writer, at most closeWait. It returns the first write
// error, or, when the destination did not take the rows in time, says so:
// those rows are counted lost.
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() {
		wait := time.NewTimer(closeWait)
		defer wait.Stop()
		if r.pending {
			r.header()
			r.release()
		}
		// What waits for a row's time when none comes: the last row's.
		last := r.lastT
		if math.IsNaN(last) {
			last = 0
		}
		r.endT = last
		if r.reload != nil {
			r.reload.Time = last
			r.Event(*r.reload)
			r.reload = nil
		}
		r.stamp(last)
		r.takeEvents(r.cur)
		if len(r.cur.data) > 0 || len(r.cur.events) > 0 {
			select {
			case r.full <- r.cur:
				r.cur = nil
			case <-wait.C:
				r.abandon()
				return
			}
		}
		close(r.full)
		select {
		case <-r.done:
		case <-wait.C:
			r.abandon()
		}
	})
	return r.Err()
}

// abandon gives up on a writer stuck in its destination: every row not
// written by now is lost, said at once.
func (r *Recorder) abandon() {
	r.abandoned.Store(true)
	// Every row kept and not written, and those never kept.
	lost := r.behind.Load() + r.rows.Load() - r.written.Load()
	r.lost.Store(lost)
	err := fmt.Errorf("%s took no rows for %v (a hung disk, or a pipe nobody reads): %d rows lost", r.name, closeWait, lost)
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	r.log.Error("recording: the destination blocks; giving up on it so the run can end", "file", r.name, "rows_lost", lost, "waited", closeWait)
}

// Err is the first write error, nil when every row was written.
func (r *Recorder) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// Rows, Written and Lost count rows recorded, rows in the file, and rows
// that could not be written.
func (r *Recorder) Rows() int64    { return r.rows.Load() }
func (r *Recorder) Written() int64 { return r.written.Load() }
func (r *Recorder) Lost() int64    { return r.lost.Load() }

// write is the writer goroutine.
func (r *Recorder) write() {
	defer close(r.done)
	for b := range r.full {
		written, lost, err := r.f.Write(b.data, b.events)
		if r.abandoned.Load() {
			return // the rows were counted lost when Close gave up
		}
		r.written.Add(written)
		if err != nil {
			r.failed(err, lost)
		}
		r.free <- b
	}
	if lost := r.lost.Load(); lost > 0 && !r.abandoned.Load() {
		// The file says it too: converted or plotted, it is not taken for
		// the whole run.
		r.f.Write(nil, []recording.Event{{Time: r.endT, Vehicle: -1, Kind: recording.Lost, Name: "recording lost rows",
			Text: fmt.Sprintf("%d rows could not be written (%v): the file does not hold the whole run", lost, r.Err())}})
	}
	if err := r.f.Close(); err != nil && !r.abandoned.Load() {
		r.failed(err, 0)
	}
}

// failed handles a write that did not go through: the rows are counted
// lost, and the error is logged at once (the first time, then once per 100
// failed writes).
func (r *Recorder) failed(err error, rows int64) {
	lost := r.lost.Add(rows)
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	if r.failures++; r.failures%100 == 1 {
		r.log.Error("recording: a write failed (disk full?); the coupling goes on, these rows are lost",
			"file", r.name, "err", err, "rows_lost", lost)
	}
}

// fault records a model fault beginning, changing or ending (was → now),
// at the time of the message whose step saw it.
func (r *Recorder) fault(was, now error, lasted time.Duration) {
	if r == nil {
		return
	}
	e := recording.Event{Time: math.NaN(), Vehicle: -1, Kind: recording.FaultBegin, Name: "model fault"}
	if now == nil {
		e.Kind, e.Text = recording.FaultEnd, fmt.Sprintf("the model recovered after %v: %v", lasted.Round(time.Millisecond), was)
	} else {
		e.Text = now.Error() + "; BeamNG gets neutral controls until the model recovers"
	}
	r.Event(e)
}

package coupling

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"beamconnect/beamng"
	"beamconnect/ports"
	"beamconnect/recording"
	"beamconnect/scope"
)

// truncater is a file the recorder can cut back to its last whole row.
type truncater interface {
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// recordHeader starts every header row of a recording; a file that starts
// with it is a recording, which --record may replace.
const recordHeader = "time,status,id,reply_id,reloads"

// fleetHeader starts the header rows of a several-vehicle recording.
const fleetHeader = "time,vehicle,status,id,reply_id,reloads"

// Recording buffers: the loop fills one while a writer goroutine writes
// another, so a slow or full disk never holds the loop up. Past
// maxBuffered bytes waiting, rows are counted lost rather than kept.
const (
	recordBufSize = 256 << 10
	maxBuffered   = 8 << 20
)

// Recorder writes one CSV row per BeamNG message: local time, status,
// BeamNG's id, the reply id, the reload count, then every output and input
// port element.
//
// It loses nothing it could keep. Rows are formatted without allocating
// into a buffer of whole rows; the coupling hands the buffer to a writer
// goroutine every 250 ms, while BeamNG is silent too, so a crash loses at
// most that; the file only ever receives whole rows (after a failed write
// it is cut back to the last whole row); a write error (a full disk) is
// logged at once, the rows are counted lost, the coupling goes on, and
// later rows are written if the disk has room again.
type Recorder struct {
	w    io.Writer
	file truncater // when w can: cut back to whole rows after a failed write
	name string
	log  *slog.Logger
	// vehicles names the vehicles of a several-vehicle plan (a vehicle
	// column); nil for one vehicle.
	vehicles []string

	cur       []byte // rows the loop is filling
	line      []byte
	lastFlush time.Time
	full      chan []byte // to the writer
	free      chan []byte // back from it
	done      chan struct{}
	closeOnce sync.Once
	abandoned atomic.Bool // Close gave up on the writer: it counts nothing more

	rows     atomic.Int64 // rows recorded (handed over)
	written  atomic.Int64 // rows in the file
	lost     atomic.Int64 // rows that could not be written
	offset   int64        // bytes of whole rows in the file (writer goroutine)
	failures int          // failed writes (writer goroutine)
	errMu    sync.Mutex
	err      error // the first write error
}

// NewRecorder writes the header for plan's ports to w. log (may be nil)
// hears of write errors when they happen.
func NewRecorder(w io.Writer, plan *ports.Plan, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{
		w: w, log: log, name: "the recording",
		cur: make([]byte, 0, recordBufSize), line: make([]byte, 0, 8192),
		full: make(chan []byte, 1), free: make(chan []byte, 3), done: make(chan struct{}),
	}
	if f, ok := w.(truncater); ok {
		r.file = f
	}
	if f, ok := w.(interface{ Name() string }); ok {
		r.name = f.Name()
	}
	r.free <- make([]byte, 0, recordBufSize)
	r.free <- make([]byte, 0, recordBufSize)
	go r.write()
	r.Header(plan)
	return r
}

// Header writes a header row for plan's ports. A config reload that
// changes the ports writes a new one, so a reader splits the file at rows
// starting with "time,".
func (r *Recorder) Header(plan *ports.Plan) {
	h := []byte(recordHeader)
	r.vehicles = nil
	if len(plan.Vehicles) > 1 {
		// A row per message of any vehicle: which one, and every field
		// named by its vehicle.
		h = []byte(fleetHeader)
		for _, v := range plan.Vehicles {
			r.vehicles = append(r.vehicles, v.Name)
		}
	}
	name := func(_ int, name string) { h = append(append(h, ','), name...) }
	columnNames(plan, beamng.FromBeamNG, name)
	h = append(h, ",directive"...)
	columnNames(plan, beamng.ToBeamNG, name)
	for _, c := range setpointColumns(plan) {
		name(0, c)
	}
	h = append(h, '\n')
	r.add(h, false)
}

// columnNames names the values of the ports after port 0 in one direction,
// as a recording's header does: out3.wheelspeed, in2.throttle, and with
// several vehicles out3.lead.wheelspeed. It calls fn with each value's port
// number and name, in the order of a recording's row.
func columnNames(plan *ports.Plan, dir beamng.Direction, fn func(port int, name string)) {
	prefix, list := "out", plan.Outputs
	if dir == beamng.ToBeamNG {
		prefix, list = "in", plan.Inputs
	}
	several := len(plan.Vehicles) > 1
	var h []byte
	for _, p := range list[1:] {
		for i := range p.Fields {
			f := &p.Fields[i]
			for k := range f.Width {
				h = append(h[:0], prefix...)
				h = strconv.AppendInt(h, int64(p.Number), 10)
				h = append(h, '.')
				if several {
					h = append(h, plan.Vehicles[f.Vehicle].Name...)
					h = append(h, '.')
				}
				switch f.Source {
				case ports.Slot:
					h = append(h, f.Signal(dir, k).Name...)
				default:
					h = append(h, f.Label(plan)...)
					if f.Width > 1 {
						h = strconv.AppendInt(append(h, '_'), int64(k), 10)
					}
				}
				fn(p.Number, string(h))
			}
		}
	}
}

// ScopeColumns is the layout of a scope sample (Options.Scope): status, the
// outputs, the directive and the inputs, named as in a recording, each with
// its unit as a recording's plot finds it.
func ScopeColumns(plan *ports.Plan) []scope.Column {
	several := len(plan.Vehicles) > 1
	column := func(name, port string) scope.Column {
		c := scope.Column{Name: name, Port: port}
		if n, ok := recording.ParseName(name, several); ok {
			c.Unit = n.Unit()
		}
		c.MinSpan = recording.UnitSpan(c.Unit)
		return c
	}
	cols := []scope.Column{column("status", "out0")}
	columnNames(plan, beamng.FromBeamNG, func(port int, name string) {
		cols = append(cols, column(name, "out"+strconv.Itoa(port)))
	})
	cols = append(cols, column("directive", "in0"))
	columnNames(plan, beamng.ToBeamNG, func(port int, name string) {
		cols = append(cols, column(name, "in"+strconv.Itoa(port)))
	})
	for _, name := range setpointColumns(plan) {
		c := column(name, "")
		if n, ok := recording.ParseName(name, several); ok {
			c.Port = n.Port // drawn with the value it is the setpoint of
		}
		cols = append(cols, c)
	}
	return cols
}

// Row records one message, set the setpoints of beamng.quality's loops
// after the ports. It allocates nothing.
func (r *Recorder) Row(t float64, vehicle int, s Status, id, replyID float64, reloads int64, outs, ins [][]float64, set []float64) {
	b := strconv.AppendFloat(r.line[:0], t, 'f', 6, 64)
	b = append(b, ',')
	if r.vehicles != nil {
		b = append(b, r.vehicles[vehicle]...)
		b = append(b, ',')
	}
	b = strconv.AppendInt(b, int64(s), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, id, 'f', -1, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, replyID, 'f', -1, 64)
	b = strconv.AppendInt(append(b, ','), reloads, 10)
	for _, p := range outs[1:] {
		for _, v := range p {
			b = strconv.AppendFloat(append(b, ','), v, 'g', -1, 64)
		}
	}
	for _, p := range ins {
		for _, v := range p {
			b = strconv.AppendFloat(append(b, ','), v, 'g', -1, 64)
		}
	}
	for _, v := range set {
		b = strconv.AppendFloat(append(b, ','), v, 'g', -1, 64)
	}
	r.line = append(b, '\n')
	r.add(r.line, true)
	if len(r.cur) >= recordBufSize*3/4 {
		r.handOver(time.Now()) // before the buffer would have to grow
	}
}

// add appends a whole row to the buffer being filled, or counts it lost
// when the writer is so far behind that too much already waits.
func (r *Recorder) add(row []byte, data bool) {
	if len(r.cur)+len(row) > maxBuffered {
		if data {
			r.lost.Add(1)
		}
		return
	}
	r.cur = append(r.cur, row...)
	if data {
		r.rows.Add(1)
	}
}

// FlushEvery hands the rows over to the writer when the last hand-over is
// older than every, and says when to call again. It never blocks: when the
// writer is still busy, the rows wait for the next call.
func (r *Recorder) FlushEvery(now time.Time, every time.Duration) (next time.Time) {
	if len(r.cur) > 0 && now.Sub(r.lastFlush) >= every {
		if r.handOver(now); now.Sub(r.lastFlush) >= every {
			return now.Add(every / 10) // the writer is busy: soon again
		}
	}
	if next = r.lastFlush.Add(every); !next.After(now) {
		next = now.Add(every) // nothing to hand over
	}
	return next
}

func (r *Recorder) handOver(now time.Time) {
	// Only this goroutine sends on full and receives from free, so the
	// lengths can only move in its favour between check and use.
	if len(r.full) == 0 && len(r.free) > 0 {
		r.lastFlush = now
		r.full <- r.cur
		r.cur = (<-r.free)[:0]
	}
}

// closeWait bounds how long Close waits for the writer: a destination
// that blocks (a hung network disk, a pipe nobody reads) must not hold the
// end of a run, its summary, or its exit.
var closeWait = 2 * time.Second

// Close writes what is left and waits for the writer, at most closeWait.
// It returns the first write error, or, when the destination did not take
// the rows in time, says so: those rows are counted lost.
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() {
		wait := time.NewTimer(closeWait)
		defer wait.Stop()
		if len(r.cur) > 0 {
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
	lost := r.rows.Load() - r.written.Load()
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
	for buf := range r.full {
		n, err := r.w.Write(buf)
		if err == nil && n < len(buf) {
			err = io.ErrShortWrite
		}
		// Whole rows that made it count as written; a part of a row is cut
		// off the file again, so it holds whole rows only.
		whole := 0
		if err == nil {
			whole = n
		} else if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			whole = i + 1
		}
		r.offset += int64(whole)
		if r.abandoned.Load() {
			return // the rows were counted lost when Close gave up
		}
		r.written.Add(dataRows(buf[:whole]))
		if err != nil {
			r.failed(err, n > whole, dataRows(buf[whole:]))
		}
		r.free <- buf[:0]
	}
}

// dataRows counts the rows in b that are not header rows.
func dataRows(b []byte) int64 {
	// A data row starts with a number; a header row with "time,".
	n := int64(bytes.Count(b, []byte{'\n'}))
	n -= int64(bytes.Count(b, []byte("\ntime,")))
	if bytes.HasPrefix(b, []byte("time,")) {
		n--
	}
	return n
}

// failed handles a write that did not go through: the file is cut back to
// its last whole row, the rows are counted lost, and the error is logged
// at once (the first time, then once per 100 failed writes).
func (r *Recorder) failed(err error, partial bool, rows int64) {
	if r.file != nil && partial {
		if r.file.Truncate(r.offset) == nil {
			r.file.Seek(r.offset, io.SeekStart)
		}
	}
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

// ErrNotRecording is returned by OpenRecording for a file that is not a
// recording, which --record does not overwrite without --force.
var ErrNotRecording = errors.New("not a recording")

// OpenRecording creates the file for --record. It refuses the config file
// being run, always, and any existing file that is not an earlier
// recording (whose first row starts "time,status,id,reply_id") unless force
// is set: a typo must not destroy a config or a log.
func OpenRecording(path, configPath string, force bool) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil {
		if cfi, err := os.Stat(configPath); err == nil && os.SameFile(fi, cfi) {
			return nil, fmt.Errorf("--record %s is the config file being run: expected another file, such as %s",
				path, filepath.Join(filepath.Dir(path), "run.csv"))
		}
		if !force && fi.Mode().IsRegular() && fi.Size() > 0 {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			first, _ := bufio.NewReader(f).Peek(len(fleetHeader))
			f.Close()
			if !bytes.HasPrefix(first, []byte(recordHeader)) && !bytes.HasPrefix(first, []byte(fleetHeader)) {
				return nil, fmt.Errorf("--record %s: the file exists and is %w (its first row does not start %q): expected a new file, an earlier recording, or --force to overwrite it",
					path, ErrNotRecording, recordHeader)
			}
		}
		if !fi.Mode().IsRegular() {
			if !force {
				return nil, fmt.Errorf("--record %s: not a regular file: give --force to write to it anyway", path)
			}
			// A pipe or a device: opening it must not wait for a reader
			// (a FIFO with none would hold the run before it starts).
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return nil, fmt.Errorf("--record %s: %w (a pipe needs its reader started first)", path, err)
			}
			return f, nil
		}
	}
	return os.Create(path)
}

// Package logqueue keeps logging off the caller's goroutine. A Queue hands
// every log record (and every raw write to the same stream) to a bounded
// queue that one goroutine of its own writes out, so a log call never
// blocks and never does I/O: when stderr's reader is stuck, or gone, the
// coupling goes on; the records that did not fit are dropped, counted and
// reported by a line once the writer catches up.
package logqueue

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Queue; the zero value is sensible.
type Options struct {
	// Size is how many records and writes may wait for the writer
	// (default 1024). Beyond it, records are dropped.
	Size int
	// WriteWait bounds how long a raw Write waits for room in a full queue
	// before its bytes are dropped (default 1 s). Log records never wait.
	WriteWait time.Duration
}

// Queue is a bounded queue of log output in front of a handler and the
// stream it writes to. Its methods are safe for concurrent use.
type Queue struct {
	ch   chan entry
	base slog.Handler // the real handler, for the "records dropped" line
	out  io.Writer    // the stream, for raw writes
	wait time.Duration

	dropped  atomic.Uint64 // records and writes that found the queue full
	failed   atomic.Uint64 // records and writes the stream refused
	written  atomic.Uint64 // entries the writer finished (ok or failed)
	reported uint64        // dropped entries already reported; writer only
	// stalledAt is written+1 when a raw Write gave up waiting: until the
	// writer finishes another entry, later writes drop at once instead of
	// each waiting WriteWait for a writer that is stuck.
	stalledAt atomic.Uint64

	stop      chan struct{}
	stopOnce  sync.Once
	finished  chan struct{}
	closeOnce sync.Once

	// The status line (SetStatus), the writer's only: its text, and
	// whether it is drawn on the terminal now.
	status string
	drawn  bool
}

// entry is one thing for the writer to do: a record for a handler, raw
// bytes for the stream, a new status line, or a flush marker to close.
type entry struct {
	h      slog.Handler
	r      slog.Record
	raw    []byte
	status *string
	flush  chan struct{}
}

// New starts a queue in front of next, a handler that writes to out, and
// of out itself (see Writer). Close it at exit.
func New(next slog.Handler, out io.Writer, o Options) *Queue {
	if o.Size <= 0 {
		o.Size = 1024
	}
	if o.WriteWait <= 0 {
		o.WriteWait = time.Second
	}
	q := &Queue{
		ch: make(chan entry, o.Size), base: next, out: out, wait: o.WriteWait,
		stop: make(chan struct{}), finished: make(chan struct{}),
	}
	go q.writeOut()
	return q
}

// Handler is the queue's slog.Handler: records go to the handler given
// to New, written by the queue's goroutine.
func (q *Queue) Handler() slog.Handler { return &handler{q: q, next: q.base} }

// Writer is the stream given to New behind the queue, for output that is
// not a log record (a usage error, a status line): it keeps its order
// among the records. A Write copies its bytes and returns at once while
// the queue has room; in a full queue it waits at most WriteWait, then
// drops the bytes (counted as dropped). It never returns an error.
func (q *Queue) Writer() io.Writer { return writer{q} }

// SetStatus shows line as the terminal's status line: one line, without a
// newline, kept below everything else written. The writer clears it before
// a record or a raw write and draws it again once the queue is empty, so
// log lines never run into it. "" clears it. Like a record, a status line
// that finds the queue full is dropped (the next one replaces it anyway),
// but it is not counted as a lost record.
func (q *Queue) SetStatus(line string) {
	if q.closed() {
		return
	}
	select {
	case q.ch <- entry{status: &line}:
	default:
	}
}

// Dropped is how many records (and raw writes) found the queue full, or
// closed, and were not written.
func (q *Queue) Dropped() uint64 {
	select {
	case <-q.finished:
		q.discardLeft() // what slipped in while the queue closed
	default:
	}
	return q.dropped.Load()
}

// closed reports whether Close has been called: nothing queued from then
// on would be written.
func (q *Queue) closed() bool {
	select {
	case <-q.stop:
		return true
	default:
		return false
	}
}

// discardLeft counts as dropped the records and writes left in the queue
// once its writer has stopped.
func (q *Queue) discardLeft() {
	for {
		select {
		case e := <-q.ch:
			if e.flush == nil {
				q.dropped.Add(1)
			}
		default:
			return
		}
	}
}

// Failed is how many records (and raw writes) the stream refused, such as
// a pipe whose reader has gone (EPIPE).
func (q *Queue) Failed() uint64 { return q.failed.Load() }

// Flush waits until everything queued before it has been written, or for
// at most d. It reports whether the queue was flushed.
func (q *Queue) Flush(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	mark := make(chan struct{})
	select {
	case q.ch <- entry{flush: mark}:
	case <-t.C:
		return false
	case <-q.finished:
		return false
	}
	select {
	case <-mark:
		return true
	case <-t.C:
		return false
	case <-q.finished:
		return false
	}
}

// Close flushes the queue, waiting at most d (a stuck stream must not
// hold the exit), then stops its goroutine once the write it may be stuck
// in returns. Records logged after Close are dropped (and counted). It
// reports whether everything was written.
func (q *Queue) Close(d time.Duration) bool {
	ok := q.Flush(d)
	q.stopOnce.Do(func() { close(q.stop) })
	return ok
}

// offer queues e if there is room, and counts it dropped if not, or if
// the queue is closed.
func (q *Queue) offer(e entry) bool {
	if q.closed() {
		q.dropped.Add(1)
		return false
	}
	select {
	case q.ch <- e:
		return true
	default:
		q.dropped.Add(1)
		return false
	}
}

// writeOut is the queue's goroutine: the only one that writes.
func (q *Queue) writeOut() {
	defer close(q.finished)
	ctx := context.Background() // the caller's context may be done by now
	for {
		var e entry
		select {
		case e = <-q.ch:
		case <-q.stop:
			q.discardLeft()
			return
		}
		switch {
		case e.flush != nil:
			q.reportDrops(ctx)
			if len(q.ch) == 0 && !q.drawn {
				q.drawStatus()
			}
			close(e.flush)
			continue
		case e.status != nil:
			q.status = *e.status
			if q.status == "" && q.drawn {
				q.clearStatus()
			}
			q.drawStatus()
			continue
		case e.raw != nil:
			q.clearStatus()
			if _, err := q.out.Write(e.raw); err != nil {
				q.failed.Add(1)
			}
		default:
			q.clearStatus()
			if err := e.h.Handle(ctx, e.r); err != nil {
				q.failed.Add(1)
			}
		}
		q.written.Add(1)
		if len(q.ch) == 0 {
			q.reportDrops(ctx)
			q.drawStatus()
		}
	}
}

// clearStatus takes the status line off the terminal, if it is drawn, so
// what comes next starts on a clean line.
func (q *Queue) clearStatus() {
	if q.drawn {
		q.out.Write([]byte("\r\033[K"))
		q.drawn = false
	}
}

// drawStatus (re)draws the status line on the current line.
func (q *Queue) drawStatus() {
	if q.status == "" {
		return
	}
	q.out.Write([]byte("\r\033[K" + q.status))
	q.drawn = true
}

// reportDrops writes one line for the records dropped since the last one,
// now that the writer has caught up.
func (q *Queue) reportDrops(ctx context.Context) {
	n := q.dropped.Load() - q.reported
	if n == 0 {
		return
	}
	q.reported += n
	q.clearStatus()
	r := slog.NewRecord(time.Now(), slog.LevelWarn, fmt.Sprintf("%d log records dropped", n), 0)
	r.AddAttrs(slog.String("why", "the log's reader did not keep up"), slog.Uint64("dropped_total", q.reported))
	if err := q.base.Handle(ctx, r); err != nil {
		q.failed.Add(1)
	}
}

// handler queues records for next.
type handler struct {
	q    *Queue
	next slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle resolves r's values here, on the caller's goroutine (a
// LogValuer, a slice or a pointer may change once the call returns), and
// queues the copy; it drops it when the queue is full. It never blocks and
// never fails.
func (h *handler) Handle(_ context.Context, r slog.Record) error {
	h.q.offer(entry{h: h.next, r: snapshotRecord(r)})
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{q: h.q, next: h.next.WithAttrs(snapshotAttrs(as))}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{q: h.q, next: h.next.WithGroup(name)}
}

// writer queues raw bytes; see Queue.Writer.
type writer struct{ q *Queue }

func (w writer) Write(p []byte) (int, error) {
	q := w.q
	if len(p) == 0 {
		return 0, nil
	}
	if q.closed() {
		q.dropped.Add(1)
		return len(p), nil
	}
	e := entry{raw: bytes.Clone(p)}
	select {
	case q.ch <- e:
		return len(p), nil
	default:
	}
	// Wait, unless an earlier write gave up and the writer has finished
	// nothing since (stalledAt is then written+1, never 0).
	if q.stalledAt.Load() != q.written.Load()+1 {
		t := time.NewTimer(q.wait)
		defer t.Stop()
		select {
		case q.ch <- e:
			return len(p), nil
		case <-t.C:
			q.stalledAt.Store(q.written.Load() + 1)
		case <-q.finished:
		}
	}
	q.dropped.Add(1)
	return len(p), nil
}

package child

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
)

// record is one log line for the master's logger.
type record struct {
	status   uint8
	category string
	msg      string
}

// maxQueued bounds the log lines waiting for an answer to carry them:
// beyond it lines are counted, not kept, so a log storm cannot grow the
// child without bound.
const maxQueued = 1000

// logQueue keeps the coupling's log lines until an answer carries them
// to the master, which logs them through its FMI logger: the FMU calls
// the logger only within a call, on the master's thread, as the standards
// expect. Logging never blocks the coupling's loop.
type logQueue struct {
	mu      sync.Mutex
	recs    []record
	dropped int
}

func (q *logQueue) add(r record) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.recs) >= maxQueued {
		q.dropped++
		return
	}
	q.recs = append(q.recs, r)
}

// say queues a line of beamconnect's own.
func (q *logQueue) say(status uint8, format string, args ...any) {
	q.add(record{status: status, category: category(status), msg: fmt.Sprintf(format, args...)})
}

func category(status uint8) string {
	switch {
	case status >= statusError:
		return "logStatusError"
	case status == statusWarning:
		return "logStatusWarning"
	}
	return "logEvents"
}

// pending reports whether lines wait.
func (q *logQueue) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.recs) > 0 || q.dropped > 0
}

// take appends to w as many lines as fit in room bytes (their count
// first), keeping the rest for the next answer.
func (q *logQueue) take(w *writer, room int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dropped > 0 {
		q.recs = append(q.recs, record{statusWarning, "logStatusWarning",
			fmt.Sprintf("%d log lines were not kept (more than %d waited for the master's next call)", q.dropped, maxQueued)})
		q.dropped = 0
	}
	at := len(w.b)
	w.u32(0)
	n, used := 0, 4
	for _, r := range q.recs {
		size := 1 + 4 + len(r.category) + 4 + len(r.msg)
		if used+size > room {
			break
		}
		w.u8(r.status)
		w.str(r.category)
		w.str(r.msg)
		used += size
		n++
	}
	q.recs = q.recs[:copy(q.recs, q.recs[n:])]
	w.b[at], w.b[at+1], w.b[at+2], w.b[at+3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
}

// handler is the coupling's slog handler: each record a line, its
// attributes as key=value after the message.
type handler struct {
	q     *logQueue
	attrs []slog.Attr
	group string
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return true
		}
		b.WriteByte(' ')
		if h.group != "" {
			b.WriteString(h.group + ".")
		}
		b.WriteString(a.Key)
		b.WriteByte('=')
		v := a.Value.String()
		if strings.ContainsAny(v, " \"=") || v == "" {
			v = strconv.Quote(v)
		}
		b.WriteString(v)
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	status := uint8(statusOK)
	switch {
	case r.Level >= slog.LevelError:
		status = statusError
	case r.Level >= slog.LevelWarn:
		status = statusWarning
	}
	h.q.add(record{status, category(status), b.String()})
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{q: h.q, attrs: append(append([]slog.Attr{}, h.attrs...), as...), group: h.group}
}

func (h *handler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &handler{q: h.q, attrs: h.attrs, group: g}
}

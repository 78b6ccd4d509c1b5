package monitor

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"beamconnect/internal/scope"
)

// The event stream sends the page what changed, as Server-Sent Events:
//
//	event: layout   the scope's columns (at the start, and after a reload
//	                that changed the ports)
//	event: samples  new scope samples, column by column: {"t":[…],"v":[[…],…]}
//	event: state    the status, counters, history and reloads (4 a second)
//
// Samples go out 20 times a second, at most maxRate a second per client
// (thinned out as they are copied from the ring, which may hold more). A
// client that stops reading holds only its own handler: the ring is copied
// under its lock, never written to the connection under it, and a write
// that cannot finish within writeTimeout ends the stream.
//
// A client joining gets the window the ring holds first, the backlog. It
// is encoded once per backlogEvery and shared, read-only, by every client
// that joins meanwhile, and it is thinned out to limits.backlogBytes: a
// crowd of viewers opening the page costs one encoding and bounded memory,
// not a copy of the ring each. After it, a client copies at most what it
// sends (maxRate a second), so what one holds is bounded too.
const (
	streamEvery  = 50 * time.Millisecond
	backlogEvery = 250 * time.Millisecond
	maxRate      = 500 // samples a second per client
	writeTimeout = 10 * time.Second
	maxBacklog   = 60000 // samples sent on connecting
)

// backlog is the start of a stream: the layout, then the ring's window.
type backlog struct {
	gen    int64
	cursor uint64 // the ring's count at the newest sample in data
	at     time.Time
	data   []byte // read-only once made
}

// sharedBacklog returns the backlog of the ring's current generation,
// encoded at most backlogEvery ago; clients asking while it is encoded
// wait for it rather than encoding their own.
func (s *Server) sharedBacklog() (*backlog, error) {
	s.backlogMu.Lock()
	defer s.backlogMu.Unlock()
	now := time.Now()
	ring := s.opt.Ring
	if b := s.backlog; b != nil && now.Sub(b.at) < backlogEvery && b.gen == ring.Layout().Generation {
		return b, nil
	}
	l := ring.Layout()
	// What one sample takes as JSON at most: 7 significant digits, sign,
	// exponent and comma per value, and its time.
	perSample := 16 * (len(l.Columns) + 1)
	limit := max(1, min(maxBacklog, s.limits.backlogBytes/perSample))
	var smp scope.Samples
	cursor := ring.SinceAtMost(0, l.Generation, &smp, limit)
	if smp.Generation != l.Generation {
		l = ring.Layout() // a reload in between: the samples are of the new layout
	}
	lj, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	data := appendEvent(nil, "layout", lj)
	if len(smp.T) > 0 {
		data = appendSamples(data, &smp, 0)
	}
	s.backlog = &backlog{gen: smp.Generation, cursor: cursor, at: now, data: data}
	return s.backlog, nil
}

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if !s.streams.enter(s.limits.streams) {
		refuseStream(w, s.limits.streams)
		return
	}
	defer s.streams.leave()
	rc := http.NewResponseController(w)
	// The server's read timeout is for requests; a stream is open for as
	// long as the page is.
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var (
		cursor uint64
		gen    int64 = -1
		smp    scope.Samples
		buf    []byte
		sent   int64 = -1 // the last state sent
		last         = time.Now()
	)
	write := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	start := func() bool {
		b, err := s.sharedBacklog()
		if err != nil || !write(b.data) {
			return false
		}
		gen, cursor, last = b.gen, b.cursor, b.at
		return true
	}
	if !start() {
		return
	}
	tick := time.NewTicker(streamEvery)
	defer tick.Stop()
	// ?still=N ends the stream after N seconds with a "still" event: the
	// page then keeps what it drew, and a headless browser that waits for
	// the network to go quiet (--virtual-time-budget) can take its
	// screenshot.
	var still <-chan time.Time
	if d, ok := stillFor(r); ok {
		t := time.NewTimer(d)
		defer t.Stop()
		still = t.C
	}
	for {
		buf = buf[:0]
		// What came since the last samples sent, at maxRate: a client that
		// was slow to take its last write gets the time since thinned out,
		// up to a second's worth.
		now := time.Now()
		budget := max(1, min(maxRate, int(maxRate*now.Sub(last).Seconds())+1))
		cursor = s.opt.Ring.SinceAtMost(cursor, gen, &smp, budget)
		if smp.Generation != gen {
			// A reload changed the columns: the new layout and its backlog.
			if !start() {
				return
			}
			continue
		}
		if len(smp.T) > 0 {
			buf = appendSamples(buf, &smp, 0)
			last = now
		}
		s.mu.Lock()
		st, seq := s.state, s.seq
		s.mu.Unlock()
		if seq != sent {
			buf = appendEvent(buf, "state", st)
			sent = seq
		}
		if len(buf) > 0 && !write(buf) {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		case <-still:
			write(appendEvent(nil, "still", []byte(`{"reason":"the page asked for a still view"}`)))
			return
		}
	}
}

// maxStill bounds ?still=: a still view of a run, not a stream.
const maxStill = 10 * time.Minute

// stillFor reads ?still=SECONDS (0 < SECONDS ≤ 600) of an events request.
func stillFor(r *http.Request) (time.Duration, bool) {
	v := r.URL.Query().Get("still")
	if v == "" {
		return 0, false
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || !(s > 0) {
		return 0, false
	}
	return min(time.Duration(s*float64(time.Second)), maxStill), true
}

func appendEvent(buf []byte, name string, data []byte) []byte {
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

// appendSamples writes a samples event with at most budget samples, keeping
// every k-th (and always the newest, so the live value is current).
func appendSamples(buf []byte, smp *scope.Samples, budget int) []byte {
	n := len(smp.T)
	k := 1
	if budget > 0 && n > budget {
		k = (n + budget - 1) / budget
	}
	// Keep the samples whose index from the newest is a multiple of k.
	first := (n - 1) % k
	buf = append(buf, "event: samples\ndata: {\"g\":"...)
	buf = strconv.AppendInt(buf, smp.Generation, 10)
	if smp.Missed > 0 {
		buf = append(buf, ",\"missed\":"...)
		buf = strconv.AppendUint(buf, smp.Missed, 10)
	}
	buf = append(buf, ",\"t\":["...)
	for i := first; i < n; i += k {
		if i != first {
			buf = append(buf, ',')
		}
		buf = appendNumber(buf, smp.T[i])
	}
	buf = append(buf, "],\"v\":["...)
	for c := range smp.Width {
		if c > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		for i := first; i < n; i += k {
			if i != first {
				buf = append(buf, ',')
			}
			buf = appendNumber(buf, smp.V[i*smp.Width+c])
		}
		buf = append(buf, ']')
	}
	return append(buf, "]}\n\n"...)
}

// appendNumber writes v as JSON: NaN and infinities, which JSON lacks, as
// null (a gap in the trace).
func appendNumber(buf []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(buf, "null"...)
	}
	return strconv.AppendFloat(buf, v, 'g', 7, 64)
}

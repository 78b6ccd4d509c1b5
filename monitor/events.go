package monitor

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"beamconnect/scope"
)

// The event stream sends the page what changed, as Server-Sent Events:
//
//	event: layout   the scope's columns (at the start, and after a reload
//	                that changed the ports)
//	event: samples  new scope samples, column by column: {"t":[…],"v":[[…],…]}
//	event: state    the status, counters, history and reloads (4 a second)
//
// Samples go out 20 times a second, at most maxRate a second per client
// (decimated on the way out: the ring may hold more). A client that stops
// reading holds only its own handler: the ring is copied under its lock,
// never written to the connection under it, and a write that cannot finish
// within writeTimeout ends the stream.
const (
	streamEvery  = 50 * time.Millisecond
	maxRate      = 500 // samples a second per client
	writeTimeout = 10 * time.Second
	maxBacklog   = 60000 // samples sent on connecting
)

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var (
		cursor  uint64
		gen     int64 = -1
		smp     scope.Samples
		buf     []byte
		sent    int64 = -1 // the last state sent
		backlog       = true
	)
	tick := time.NewTicker(streamEvery)
	defer tick.Stop()
	for {
		buf = buf[:0]
		cursor = s.opt.Ring.Since(cursor, gen, &smp)
		if smp.Generation != gen {
			gen, backlog = smp.Generation, true
			l := s.opt.Ring.Layout()
			if l.Generation == gen {
				b, err := json.Marshal(l)
				if err != nil {
					return
				}
				buf = appendEvent(buf, "layout", b)
			}
		}
		if n := len(smp.T); n > 0 {
			budget := maxRate * int(streamEvery) / int(time.Second)
			if backlog {
				// What the ring holds already: the whole window, at the
				// rate the live samples will come.
				budget = min(maxBacklog, int(maxRate*(smp.T[n-1]-smp.T[0]))+1)
			}
			buf = appendSamples(buf, &smp, budget)
			backlog = false
		}
		s.mu.Lock()
		st, seq := s.state, s.seq
		s.mu.Unlock()
		if seq != sent {
			buf = appendEvent(buf, "state", st)
			sent = seq
		}
		if len(buf) > 0 {
			rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := w.Write(buf); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
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

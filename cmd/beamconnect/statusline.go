package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"beamconnect/coupling"
	"beamconnect/ports"
	"beamconnect/timesync"
)

// statusLine redraws one line on stderr four times a second while the run
// goes on, when stderr is a terminal. It reads only counters. The line fits
// the terminal: the most important parts first (the status, what to check
// while waiting for BeamNG, problems), the rest while there is room. The
// log's queue draws it (logqueue.SetStatus): cleared before each log line
// and drawn again after, so the two never share a line. The returned func
// stops it and clears the line.
func statusLine(c *call, sess *coupling.Session) func() {
	if !c.stderrIsTTY || c.logs == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		rates := newRates(len(sess.Links()))
		for {
			select {
			case <-done:
				c.logs.SetStatus("")
				return
			case now := <-t.C:
				width := terminalWidth(c)
				c.logs.SetStatus(fitLine(statusParts(sess, now, start, rates), width-1))
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// terminalWidth is the terminal's width in columns: $COLUMNS, else what the
// terminal says, else 80.
func terminalWidth(c *call) int {
	if v, ok := c.lookupEnv("COLUMNS"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 20 {
			return n
		}
	}
	if f, ok := c.stderr.(*os.File); ok {
		if n := ttyColumns(f); n > 20 {
			return n
		}
	}
	return 80
}

// rates turns message counts into rates between two samples.
type rates struct {
	last []int64
	at   time.Time
}

func newRates(n int) *rates { return &rates{last: make([]int64, n)} }

func (r *rates) rate(v int, n int64, now time.Time) float64 {
	dt := now.Sub(r.at).Seconds()
	x := 0.0
	if !r.at.IsZero() && dt > 0 {
		x = float64(n-r.last[v]) / dt
	}
	r.last[v] = n
	return x
}

// part is one piece of the status line; rank orders what is kept when the
// terminal is narrow (0 always).
type part struct {
	text string
	rank int
}

func statusParts(sess *coupling.Session, now, start time.Time, r *rates) []part {
	plan := sess.Plan()
	links := sess.Links()
	run := sess.Values()
	var msgs int64
	for _, l := range links {
		msgs += l.Stats().Get(coupling.Messages)
	}
	// A diagnosis that holds says what is wrong instead of a status that
	// flips (BeamNG connected for one message, silent for 2 s, again);
	// after BeamNG stopped, how to end the run.
	var parts []part
	for _, d := range sess.Diagnoses(now) {
		if d.Holds && d.Kind != "nothing" { // the waiting part says that
			who := ""
			if d.Vehicle != "" {
				who = d.Vehicle + ": "
			}
			parts = append(parts, part{who + d.Short, 0})
		}
	}
	if len(parts) == 0 {
		parts = append(parts, part{sess.Status().String(), 0})
	}
	if msgs > 0 {
		for _, l := range links {
			if last := l.Stats().LastArrival(); l.Status() != ports.Connected && now.Sub(last) > 2*time.Second {
				who := "BeamNG"
				if len(links) > 1 {
					who = l.Name() + "'s BeamNG"
				}
				parts = append(parts, part{fmt.Sprintf("%s stopped sending %.0f s ago (Ctrl-C ends the run cleanly)", who, now.Sub(last).Seconds()), 0})
			}
		}
	}
	if msgs == 0 {
		l := links[0]
		parts = append(parts, part{fmt.Sprintf("waiting %.0f s for BeamNG to send to %v", now.Sub(start).Seconds(), l.SendTo()), 0},
			part{fmt.Sprintf("is its coupling started, replying to %v? see: beamconnect compile", l.Remote()), 1})
	}
	for _, r := range sess.Control() {
		parts = append(parts, part{r.Short(), 2})
	}
	if n := run[coupling.ModelFaults]; n > 0 {
		parts = append(parts, part{fmt.Sprintf("MODEL FAULTS %d", n), 1})
	}
	for _, l := range links {
		st := l.Stats()
		who := ""
		if len(links) > 1 {
			who = l.Name() + " "
		}
		if lost, since := st.LockstepLostNow(); lost {
			parts = append(parts, part{fmt.Sprintf("%sLOCKSTEP LOST %.1f s", who, now.Sub(since).Seconds()), 1})
		}
		if n := st.Get(coupling.Overdue); n > 0 {
			parts = append(parts, part{fmt.Sprintf("%sOVERDUE %d", who, n), 2})
		}
	}
	if n := run.Dropped(); n > 0 {
		parts = append(parts, part{fmt.Sprintf("dropped %d", n), 2})
	}
	for v, l := range links {
		st := l.Stats()
		rate := r.rate(v, st.Get(coupling.Messages), now)
		if len(links) > 1 {
			parts = append(parts, part{fmt.Sprintf("%s %s %.0f msg/s", l.Name(), l.Status(), rate), 3})
			continue
		}
		sync := syncWords(plan.TimeSync)
		if plan.TimeSync == timesync.Slave && msgs > 0 && now.Sub(st.LastArrival()) > 2*time.Duration(plan.Period*float64(time.Second)) {
			sync += ", blocked: waiting for BeamNG's time"
		}
		parts = append(parts, part{fmt.Sprintf("simulated %.3f s", l.SimTime()), 3}, part{fmt.Sprintf("local time %.3f s, %s", st.LocalTime(), sync), 4},
			part{fmt.Sprintf("%.0f msg/s", rate), 3},
			part{fmt.Sprintf("turnaround p50 %.0f µs p99 %.0f µs", us(st.Turnaround.Quantile(0.5)), us(st.Turnaround.Quantile(0.99))), 4})
	}
	r.at = now
	parts = append(parts, part{"reply ids " + string(plan.ReplyID), 5},
		part{fmt.Sprintf("stalls recovered %d", run[coupling.StallsRecovered]), 4},
		part{fmt.Sprintf("reloads %d", run[coupling.Reloads]), 5})
	return parts
}

// syncWords says what the time sync does, for the status line: "no time
// sync" rather than a bare "none".
func syncWords(m timesync.Mode) string {
	switch m {
	case timesync.Slave:
		return "BeamNG's time (time sync slave)"
	case timesync.Master:
		return "replies paced to it (time sync master)"
	}
	return "no time sync"
}

// fitLine joins the parts that fit in width columns, keeping their order:
// lower ranks first, parts of rank 0 always (cut to the width if need be).
func fitLine(parts []part, width int) string {
	const sep = " | "
	keep := make([]bool, len(parts))
	used := 0
	for rank := 0; rank <= 5; rank++ {
		for i, p := range parts {
			if p.rank != rank {
				continue
			}
			w := utf8.RuneCountInString(p.text)
			if used > 0 {
				w += len(sep)
			}
			if rank > 0 && used+w > width {
				continue
			}
			keep[i], used = true, used+w
		}
	}
	var b strings.Builder
	for i, p := range parts {
		if keep[i] {
			if b.Len() > 0 {
				b.WriteString(sep)
			}
			b.WriteString(p.text)
		}
	}
	line := b.String()
	if utf8.RuneCountInString(line) > width {
		line = string([]rune(line)[:max(width-1, 0)]) + "…"
	}
	return line
}

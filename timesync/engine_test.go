package timesync

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// fakeClock only moves when told to, or when a wait asks it to: the suite
// covers every mode without sleeping.
type fakeClock struct {
	t     time.Time
	late  time.Duration // how late each wait ends
	waits int
}

func (c *fakeClock) Now() time.Time { return c.t }
func (c *fakeClock) WaitUntil(t time.Time) {
	c.waits++
	if t.After(c.t) {
		c.t = t.Add(c.late)
	}
}
func (c *fakeClock) advance(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

func newFake() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestNone(t *testing.T) {
	for _, tt := range []struct{ dilation, want float64 }{{1, 2}, {0.5, 1}, {0, 2}, {-1, 2}} {
		t.Run(fmt.Sprintf("dilation %v", tt.dilation), func(t *testing.T) {
			c := newFake()
			e := NewEngine(None, tt.dilation, 0.005, c)
			got := e.Message(7, c.advance(2*time.Second))
			if !near(got, tt.want) || e.Hold(7) != 0 || c.waits != 0 || e.Blocked() {
				t.Errorf("dilation %v: local %v, want %v; waits %d", tt.dilation, got, tt.want, c.waits)
			}
			// time + receive_time_offset is the local time.
			if !near(e.Remote(7)+e.ReceiveTimeOffset(), got) {
				t.Errorf("offset %v does not agree with local %v", e.ReceiveTimeOffset(), got)
			}
		})
	}
}

func TestSlave(t *testing.T) {
	c := newFake()
	e := NewEngine(Slave, 1, 0.005, c)
	c.advance(time.Hour) // the wall clock is irrelevant
	if got := e.Message(200, c.t); got != 1 || e.ReceiveTimeOffset() != 0 || !e.Blocked() {
		t.Errorf("local %v offset %v blocked %v; want 1, 0, true", got, e.ReceiveTimeOffset(), e.Blocked())
	}
	c.advance(time.Minute)
	if e.IdleTime() != 1 {
		t.Errorf("idle time moved without BeamNG: %v", e.IdleTime())
	}
	if e.Hold(200) != 0 || c.waits != 0 {
		t.Error("a slave never holds replies")
	}
}

// Master: each reply is held until its message's remote time, paced by the
// dilation, on an absolute schedule that does not drift.
func TestMaster(t *testing.T) {
	for _, dilation := range []float64{1, 0.5, 2} {
		c := newFake()
		e := NewEngine(Master, dilation, 0.005, c)
		start := c.t
		e.Message(10, c.t) // anchors: message 10 is due now
		e.Hold(10)
		for id := 11.0; id < 1011; id++ {
			// BeamNG answers at once (free-running): 100 µs after the last reply.
			e.Message(id, c.advance(100*time.Microsecond))
			e.Hold(id)
		}
		wall := c.t.Sub(start).Seconds()
		if want := 1000 * 0.005 / dilation; !near(wall, want) {
			t.Errorf("dilation %v: 1000 messages took %v s, want %v", dilation, wall, want)
		}
		if e.Overruns != 0 || e.PacingError(0.99) != 0 || e.Held != 1000 {
			t.Errorf("dilation %v: overruns %d, p99 %v, held %d", dilation, e.Overruns, e.PacingError(0.99), e.Held)
		}
	}
}

// A slow step overruns the schedule and is counted; the schedule does not
// move, so the next replies catch up instead of drifting.
func TestMasterOverrunNoDrift(t *testing.T) {
	c := newFake()
	e := NewEngine(Master, 1, 0.005, c)
	start := c.t
	e.Message(0, c.t)
	for id := 1.0; id <= 100; id++ {
		d := 100 * time.Microsecond
		if id == 50 {
			d = 12 * time.Millisecond // a hiccup
		}
		e.Message(id, c.advance(d))
		e.Hold(id)
	}
	if e.Overruns != 2 {
		t.Errorf("%d overruns, want 2 (messages 50 and 51 were ready after their time)", e.Overruns)
	}
	if got := c.t.Sub(start); got != 500*time.Millisecond {
		t.Errorf("100 messages took %v, want 500ms: the schedule drifted", got)
	}
	if p := e.PacingError(1); p != 7*time.Millisecond {
		t.Errorf("worst lateness %v", p)
	}
	// Re-anchoring (after a BeamNG stall) restarts the schedule at the
	// message instead of bursting to catch up.
	e.Anchor(500, c.advance(3*time.Second))
	e.Message(501, c.advance(100*time.Microsecond))
	if held := e.Hold(501); held != 4900*time.Microsecond {
		t.Errorf("after re-anchoring, held %v, want 4.9ms", held)
	}
}

// An unthrottled master (dilation ≤ 0) never holds.
func TestMasterUnthrottled(t *testing.T) {
	c := newFake()
	e := NewEngine(Master, 0, 0.005, c)
	e.Message(0, c.t)
	e.Message(1, c.advance(time.Microsecond))
	if e.Hold(1) != 0 || c.waits != 0 {
		t.Error("held a reply with timeDilation 0")
	}
}

// The real clock's sleep-then-spin lands within a fraction of a
// millisecond; this is a sanity check, the figures are in the benchmark.
func TestRealClockWaits(t *testing.T) {
	due := time.Now().Add(3 * time.Millisecond)
	RealClock{}.WaitUntil(due)
	if late := time.Since(due); late < 0 {
		t.Errorf("returned %v early", -late)
	}
}

// BenchmarkPacing measures how late the real clock ends a 0.5 ms wait:
// the pacing error of master mode at BeamNG's fastest rate.
func BenchmarkPacing(b *testing.B) {
	var lates []time.Duration
	next := time.Now()
	for b.Loop() {
		next = next.Add(500 * time.Microsecond)
		RealClock{}.WaitUntil(next)
		lates = append(lates, time.Since(next))
	}
	e := &Engine{Errors: lates}
	b.ReportMetric(float64(e.PacingError(0.5).Nanoseconds())/1e3, "late-p50-µs")
	b.ReportMetric(float64(e.PacingError(0.99).Nanoseconds())/1e3, "late-p99-µs")
	b.ReportMetric(float64(e.PacingError(0.999).Nanoseconds())/1e3, "late-p999-µs")
}

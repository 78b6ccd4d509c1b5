package timesync

import (
	"slices"
	"time"
)

// Clock is the wall clock the engine paces against. The real one sleeps and
// then spins to hit a deadline; tests inject a fake that only advances.
type Clock interface {
	Now() time.Time
	// WaitUntil returns at t or as soon after as it can.
	WaitUntil(t time.Time)
}

// SpinMargin is how long before a deadline the real clock stops sleeping
// and spins: Go's timers wake up to 1 ms late on Linux (go-notes §3).
const SpinMargin = 1200 * time.Microsecond

// RealClock sleeps until SpinMargin before the deadline, then spins on
// time.Now: tens of microseconds late at worst on an idle machine, where
// time.Sleep alone is half a millisecond late or more.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) WaitUntil(t time.Time) {
	if d := time.Until(t) - SpinMargin; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
	}
}

// Engine is the coupling's simulation clock. It says what local time each
// BeamNG message is stepped at, and in master mode holds each reply until
// local time, paced by the dilation, has reached the message's remote time.
type Engine struct {
	Mode     Mode
	Dilation float64 // timeDilation: 1 real time, 0.5 half speed, ≤ 0 unthrottled
	Period   float64 // BeamNG's send period, s: message k is remote time k × Period
	clock    Clock

	start time.Time // wall time of local time 0

	// Master schedule: message id is due at origin + (id − id0) × Period / Dilation.
	origin   time.Time
	id0      float64
	anchored bool

	local  float64 // local time of the latest message
	remote float64 // remote time of the latest message

	// Pacing statistics (master): how late each reply went out against its
	// deadline, and how many were already late when ready.
	Errors []time.Duration // reused ring of the last errors; see PacingError
	errN   int
	// Paced counts the replies held or found late so far; LastError is the
	// latest one's pacing error.
	Paced     int64
	LastError time.Duration
	Overruns  int64
	Held      int64
}

// NewEngine starts a clock at clock.Now() (the clock may be nil for the
// real one).
func NewEngine(mode Mode, dilation, period float64, clock Clock) *Engine {
	if clock == nil {
		clock = RealClock{}
	}
	return &Engine{Mode: mode, Dilation: dilation, Period: period, clock: clock, start: clock.Now(), Errors: make([]time.Duration, 0, pacingWindow)}
}

// pacingWindow is how many recent pacing errors are kept for percentiles.
const pacingWindow = 1 << 16

// Remote is the remote simulation time of BeamNG message id.
func (e *Engine) Remote(id float64) float64 { return RemoteTime(id, e.Period) }

// wallLocal is local time by the wall clock: elapsed × dilation, or plain
// elapsed time when unthrottled.
func (e *Engine) wallLocal(now time.Time) float64 {
	s := now.Sub(e.start).Seconds()
	if e.Dilation > 0 {
		return s * e.Dilation
	}
	return s
}

// Message takes BeamNG message id, received at arrival, and returns the
// local time the model steps at. In slave mode local time is the message's
// remote time; otherwise it is the wall clock scaled by the dilation.
func (e *Engine) Message(id float64, arrival time.Time) float64 {
	e.remote = e.Remote(id)
	if e.Mode == Slave {
		e.local = e.remote
	} else {
		e.local = e.wallLocal(arrival)
	}
	if e.Mode == Master && !e.anchored {
		e.Anchor(id, arrival)
	}
	return e.local
}

// Local is the local time of the latest message.
func (e *Engine) Local() float64 { return e.local }

// ReceiveTimeOffset is local minus remote time of the latest message: what
// VS Connect adds to a remote time to get the corresponding local time.
// In slave mode it is 0 by construction.
func (e *Engine) ReceiveTimeOffset() float64 { return e.local - e.remote }

// Blocked reports, in slave mode, whether the client waits for BeamNG: the
// latest remote time is not ahead of local time, so nothing new can be
// stepped until the next message.
func (e *Engine) Blocked() bool { return e.Mode == Slave && e.remote <= e.local }

// Anchor (re)starts the master schedule: message id is due at t. Called at
// the first message and whenever reply ids are re-based, so a stall is not
// followed by a burst to catch up.
func (e *Engine) Anchor(id float64, t time.Time) {
	e.origin, e.id0, e.anchored = t, id, true
}

// Hold waits, in master mode with a positive dilation, until message id is
// due, and records how late the wait ended. In other modes it returns at
// once. It returns how long it waited.
func (e *Engine) Hold(id float64) time.Duration {
	if e.Mode != Master || e.Dilation <= 0 || !e.anchored || id == e.id0 {
		return 0 // the anchor message is due when it arrives
	}
	due := e.origin.Add(time.Duration((id - e.id0) * e.Period / e.Dilation * float64(time.Second)))
	now := e.clock.Now()
	if now.After(due) {
		e.Overruns++ // the model or the network was slower than the schedule
		e.record(now.Sub(due))
		return 0
	}
	e.clock.WaitUntil(due)
	after := e.clock.Now()
	e.Held++
	e.record(after.Sub(due))
	return after.Sub(now)
}

func (e *Engine) record(d time.Duration) {
	e.Paced++
	e.LastError = d
	if len(e.Errors) < cap(e.Errors) {
		e.Errors = append(e.Errors, d)
	} else {
		e.Errors[e.errN%len(e.Errors)] = d
	}
	e.errN++
}

// PacingError is the q-quantile of how late held replies went out against
// their schedule (0 when none were held).
func (e *Engine) PacingError(q float64) time.Duration {
	if len(e.Errors) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), e.Errors...)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

// IdleTime is local time while no message comes: it stands still in slave
// mode (time is BeamNG's) and follows the wall clock otherwise.
func (e *Engine) IdleTime() float64 {
	if e.Mode == Slave {
		return e.local
	}
	return e.wallLocal(e.clock.Now())
}

// Retune changes the mode and dilation of a running clock (a config
// reload). Local time carries on from where it is; a master schedule
// restarts at the next message.
func (e *Engine) Retune(mode Mode, dilation float64) {
	now := e.clock.Now()
	if e.Mode != Slave && mode != Slave && dilation > 0 && e.Dilation > 0 {
		// Keep wall-derived local time continuous across the change.
		local := e.wallLocal(now)
		e.start = now.Add(-time.Duration(local / dilation * float64(time.Second)))
	}
	e.Mode, e.Dilation, e.anchored = mode, dilation, false
}

// SleepClock waits with time.Sleep alone: coarse on the real clock (up to
// a millisecond late), exact on a fake one (testing/synctest), where
// RealClock's final spin on time.Now would never end.
type SleepClock struct{}

func (SleepClock) Now() time.Time { return time.Now() }

func (SleepClock) WaitUntil(t time.Time) { time.Sleep(time.Until(t)) }

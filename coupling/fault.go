package coupling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/models"
	"beamconnect/timesync"
)

// errStepHung is the fault of a model whose step ran past the model timeout.
var errStepHung = errors.New("the model's step ran longer than the model timeout")

// faultState watches the model. A model fault (an exec program that exited
// or stopped answering, a step that panicked or ran past the model timeout)
// is logged when it begins, reported as status 4 (error) by every vehicle,
// and answered for with neutral controls, never the model's last ones;
// BeamNG keeps getting replies, so it does not stall. It is the stage's:
// one model, one fault state, whichever vehicle's message steps it.
type faultState struct {
	log      *slog.Logger
	stats    *Stats
	clock    timesync.Clock
	faulter  models.Faulter // nil when the model cannot fail on its own
	panicked error          // a panic in Step: the model is not stepped again
	current  error          // the fault in force; nil while healthy
	since    time.Time
	timeout  time.Duration
	active   atomic.Bool // current != nil, for the links' status

	// The hung-step watchdog, for models whose step may block: it answers
	// the message being handled with neutral controls once the step has run
	// past the timeout.
	watched   bool
	stepStart atomic.Int64             // unix ns the current step began; 0 outside a step
	pending   atomic.Pointer[answerer] // who answers the message the step is for
	pendingID atomic.Uint64            // float64 bits of the reply id the step is for
	firedFor  atomic.Int64             // the stepStart the watchdog answered for
	fired     atomic.Bool              // the watchdog answered the message being handled
}

func (f *faultState) init(m models.Model, timeout float64, stats *Stats, log *slog.Logger, clock timesync.Clock) {
	f.log, f.stats, f.clock = log, stats, clock
	f.faulter, _ = m.(models.Faulter)
	f.timeout = seconds(timeout)
	// A model whose step is pure computation cannot hang: no watchdog, and
	// nothing of it woken while the coupling runs.
	b, ok := m.(models.Bounded)
	f.watched = f.timeout > 0 && !(ok && b.Bounded())
}

// answerer answers the message a hung step is for with neutral controls
// (a vehicle's link).
type answerer interface {
	answerNeutral(replyID float64)
}

// begin tells the watchdog that a step for the reply replyID starts, which
// a answers if the step hangs.
func (f *faultState) begin(a *answerer, replyID float64) {
	if !f.watched {
		return
	}
	f.pending.Store(a)
	f.pendingID.Store(math.Float64bits(replyID))
	f.stepStart.Store(f.clock.Now().UnixNano())
}

// end tells the watchdog the step is over, and reports (once) whether the
// watchdog answered its message already.
func (f *faultState) end() (answered bool) {
	if !f.watched {
		return false
	}
	f.stepStart.Store(0)
	f.pending.Store(nil)
	return f.fired.Swap(false)
}

// step steps the model and reports whether it is faulted. A panic is
// recovered: the model is faulted for good (its state can no longer be
// trusted), and the coupling goes on with neutral controls instead of dying
// with the last controls applied.
func (f *faultState) step(m models.Model, t float64, outs, ins [][]float64) bool {
	if f.panicked == nil {
		f.run(m, t, outs, ins)
	}
	var err error
	switch {
	case f.panicked != nil:
		err = f.panicked
	case f.fired.Load():
		err = errStepHung
	case f.faulter != nil:
		err = f.faulter.Fault()
	}
	if err != f.current {
		f.transition(err)
	}
	return err != nil
}

func (f *faultState) run(m models.Model, t float64, outs, ins [][]float64) {
	defer func() {
		if r := recover(); r != nil {
			f.panicked = fmt.Errorf("the model panicked: %v", r)
			f.log.Error("model panicked; it is not stepped again, BeamNG gets neutral controls for the rest of the run",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	m.Step(t, outs, ins)
}

// transition logs a fault beginning, changing or ending.
func (f *faultState) transition(err error) {
	now := f.clock.Now()
	switch {
	case f.current == nil:
		f.stats.inc(ModelFaults)
		f.since = now
		if err != errStepHung { // the watchdog logged that one when it fired
			f.log.Error("model fault: BeamNG gets neutral controls (pedals released, wheel torques 0) until the model recovers",
				"fault", err.Error(), "timeout", f.timeout)
		}
	case err == nil:
		f.log.Info("model recovered: its controls go to BeamNG again", "fault", f.current.Error(), "lasted", now.Sub(f.since).Round(time.Millisecond))
	default:
		f.log.Error("model fault", "fault", err.Error(), "was", f.current.Error())
	}
	f.current = err
	f.active.Store(err != nil)
}

// watch runs the hung-step watchdog until ctx ends or the returned func is
// called. It wakes a few times per timeout, reads two atomics, and acts
// only when a step has run past the timeout: it sends BeamNG neutral
// controls under the pending reply id, on the link whose message waits, so
// BeamNG's last controls are not the model's while it hangs, and logs at
// once.
func (f *faultState) watch(ctx context.Context) func() {
	if !f.watched {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(max(f.timeout/5, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				f.check(f.clock.Now())
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// check fires the watchdog if the step in progress ran past the timeout.
func (f *faultState) check(now time.Time) {
	start := f.stepStart.Load()
	if start == 0 || now.UnixNano()-start < int64(f.timeout) || f.firedFor.Load() == start {
		return
	}
	f.firedFor.Store(start)
	ran := time.Duration(now.UnixNano() - start).Round(time.Millisecond)
	a := f.pending.Load()
	if a == nil {
		f.log.Error("the model's step is hung (no BeamNG message waits on it)", "running_for", ran, "timeout", f.timeout)
		return
	}
	id := math.Float64frombits(f.pendingID.Load())
	(*a).answerNeutral(id)
	f.fired.Store(true)
	f.log.Error("model fault: its step is hung; answered BeamNG with neutral controls (pedals released, wheel torques 0)",
		"running_for", ran, "timeout", f.timeout, "reply_id", id)
}

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
	record   *Recorder // hears of faults and recoveries (nil: no recording)
	timeout  time.Duration
	active   atomic.Bool // current != nil, for the links' status

	// The hung-step watchdog, for models whose step may block: it answers
	// the message being handled with neutral controls once the step has run
	// past the timeout.
	// stepStart is the unix ns the current step began, 0 outside a step,
	// or claimed (-1) once the watchdog has answered for the step: whoever
	// changes it first, the watchdog or the step's end, decides.
	watched   bool
	stepStart atomic.Int64
	pending   atomic.Pointer[waiter] // the message the step is for
	// waiters are every vehicle's messages: while a step hangs, those that
	// wait for the stage are answered too.
	waiters []*waiter
}

// waiter is one vehicle's message in the stage or waiting for it, as the
// hung-step watchdog sees it.
type waiter struct {
	a     answerer
	name  string        // the vehicle's, for the log
	id    atomic.Uint64 // float64 bits of the message's reply id
	state atomic.Int32  // idle, waiting for the stage, or answered by the watchdog meanwhile
}

const (
	idle int32 = iota
	waiting
	answeredWaiting
)

// await tells the watchdog the message with reply id waits for the stage.
func (w *waiter) await(id float64) {
	w.id.Store(math.Float64bits(id))
	w.state.Store(waiting)
}

// entered tells the watchdog the message has the stage, and reports
// whether the watchdog answered it while it waited.
func (w *waiter) entered() (answered bool) { return w.state.Swap(idle) == answeredWaiting }

// answerIfWaiting answers a message still waiting for the stage, once.
func (w *waiter) answerIfWaiting() bool {
	if !w.state.CompareAndSwap(waiting, answeredWaiting) {
		return false
	}
	w.a.answerNeutral(math.Float64frombits(w.id.Load()))
	return true
}

// claimed is stepStart once the watchdog has answered for the step.
const claimed = -1

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

// begin tells the watchdog that a step for w's message starts (its reply
// id published by await), counting from the message's arrival: the
// timeout is milliseconds, what came before the step microseconds.
func (f *faultState) begin(w *waiter, arrival time.Time) {
	if !f.watched {
		return
	}
	f.pending.Store(w)
	f.stepStart.Store(arrival.UnixNano())
}

// end tells the watchdog the step is over, and reports whether the
// watchdog answered its message already. After end the watchdog cannot
// answer for this step: the two race for stepStart.
func (f *faultState) end() (answered bool) {
	if !f.watched {
		return false
	}
	answered = f.stepStart.Swap(0) == claimed
	f.pending.Store(nil)
	return answered
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
	case f.watched && f.stepStart.Load() == claimed:
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
	f.record.fault(f.current, err, now.Sub(f.since))
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

// check fires the watchdog if the step in progress ran past the timeout:
// it answers the step's message, and every other vehicle's message that
// waits for the stage meanwhile, with neutral controls.
func (f *faultState) check(now time.Time) {
	start := f.stepStart.Load()
	if start == claimed {
		f.answerWaiting() // messages that came since
		return
	}
	if start <= 0 || now.UnixNano()-start < int64(f.timeout) {
		return
	}
	// Read whose step it is before claiming: once claimed, the step's end
	// may clear it.
	w := f.pending.Load()
	if w == nil || !f.stepStart.CompareAndSwap(start, claimed) {
		return // the step ended meanwhile
	}
	ran := time.Duration(now.UnixNano() - start).Round(time.Millisecond)
	id := math.Float64frombits(w.id.Load())
	w.a.answerNeutral(id)
	f.log.Error("model fault: its step is hung; answered BeamNG with neutral controls (pedals released, wheel torques 0)",
		"running_for", ran, "timeout", f.timeout, "reply_id", id)
	f.answerWaiting()
}

// answerWaiting answers the other vehicles' messages that wait for the
// hung step's stage, so no BeamNG holds the model's last controls.
func (f *faultState) answerWaiting() {
	for _, w := range f.waiters {
		if w.answerIfWaiting() {
			f.log.Error("model fault: its step is hung; answered another vehicle's waiting message with neutral controls",
				"vehicle", w.name, "reply_id", math.Float64frombits(w.id.Load()))
		}
	}
}

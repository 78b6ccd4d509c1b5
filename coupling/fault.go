package coupling

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"beamconnect/models"
	"beamconnect/timesync"
)

// faultState watches the model. A model fault (an exec program that exited
// or stopped answering, an FMU that failed, crashed or hung, a step that
// panicked) is logged when it begins, reported as status 4 (error) by every
// vehicle, and answered for with neutral controls, never the model's last
// ones; BeamNG keeps getting replies, so it does not stall. A fault ends
// when its cause does (the model answers well again), and is logged then
// too. It is the stage's: one model, one fault state, whichever vehicle's
// message steps it.
//
// Every model bounds its own step (Step waits for a program or a worker
// with a deadline), so the loop needs no watchdog: a hang is the model's to
// report, as a fault, while its step has returned.
type faultState struct {
	log      *slog.Logger
	stats    *Stats
	clock    timesync.Clock
	faulter  models.Faulter // nil when the model cannot fail on its own
	panicked error          // a panic in Step: the model is not stepped again
	current  error          // the fault in force; nil while healthy
	since    time.Time
	record   *Recorder   // hears of faults and recoveries (nil: no recording)
	active   atomic.Bool // current != nil, for the links' status
}

func (f *faultState) init(m models.Model, stats *Stats, log *slog.Logger, clock timesync.Clock) {
	f.log, f.stats, f.clock = log, stats, clock
	f.faulter, _ = m.(models.Faulter)
}

// step steps the model on a message's data and reports whether it
// computed its controls from them, and whether it is faulted (then BeamNG
// must get neutral controls, whatever it computed). A panic is recovered:
// the model is faulted for good (its state can no longer be trusted), and
// the coupling goes on with neutral controls instead of dying with the
// last controls applied.
func (f *faultState) step(m models.Model, t float64, outs, ins [][]float64) (computed, faulted bool) {
	if f.panicked == nil {
		computed = f.run(func() bool { return m.Step(t, outs, ins) })
	}
	return computed, f.update()
}

// idle steps a model that wants to see the status while no data come.
func (f *faultState) idle(m models.Model, t float64, outs, ins [][]float64) {
	if i, ok := m.(models.Idler); ok && f.panicked == nil {
		f.run(func() bool { i.Idle(t, outs, ins); return false })
	}
	f.update()
}

func (f *faultState) run(step func() bool) (computed bool) {
	defer func() {
		if r := recover(); r != nil {
			computed = false
			f.panicked = fmt.Errorf("the model panicked: %v", r)
			f.log.Error("model panicked; it is not stepped again, BeamNG gets neutral controls for the rest of the run",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return step()
}

// update reads the model's fault and logs a change; it reports whether
// the model is faulted.
func (f *faultState) update() bool {
	var err error
	switch {
	case f.panicked != nil:
		err = f.panicked
	case f.faulter != nil:
		err = f.faulter.Fault()
	}
	if err != f.current {
		f.transition(err)
	}
	return err != nil
}

// transition logs a fault beginning, changing or ending.
func (f *faultState) transition(err error) {
	now := f.clock.Now()
	switch {
	case f.current == nil:
		f.stats.inc(ModelFaults)
		f.since = now
		f.log.Error("model fault: BeamNG gets neutral controls (pedals released, wheel torques 0) until the model recovers",
			"fault", err.Error())
	case err == nil:
		f.log.Info("model recovered: its controls go to BeamNG again", "fault", f.current.Error(), "lasted", now.Sub(f.since).Round(time.Millisecond))
	default:
		f.log.Error("model fault", "fault", err.Error(), "was", f.current.Error())
	}
	f.record.fault(f.current, err, now.Sub(f.since))
	f.current = err
	f.active.Store(err != nil)
}

package coupling

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/timesync"
)

// faultState watches the model. A model fault (an exec program that exited
// or stopped answering, an FMU that failed, crashed or hung, a step that
// panicked, controls computed as NaN or ±Inf) is logged when it begins,
// reported as status 4 (error) by every vehicle, and answered for with
// neutral controls, never the model's last ones; BeamNG keeps getting
// replies, so it does not stall. A fault ends when its cause does (the
// model answers well again), and is logged then too. It is the stage's:
// one model, one fault state, whichever vehicle's message steps it.
//
// Every model bounds its own step (Step waits for a program or a worker up
// to the model timeout, or in real time its deadline), so the loop needs
// no watchdog: a hang is the model's to report, as a fault, while its step
// has returned.
type faultState struct {
	log      *slog.Logger
	stats    *Stats
	clock    timesync.Clock
	faulter  models.Faulter // nil when the model cannot fail on its own
	panicked error          // a panic in Step: the model is not stepped again
	// nonFinite is a control the model's last computed step wrote as NaN
	// or ±Inf (not models.Keep): a fault until a step computes every
	// control finite. bad is where, for its words to be made once.
	nonFinite error
	bad       [2]int
	current   error // the fault in force; nil while healthy
	// why counts the messages answered neutral while current is in force:
	// NonFinite, NotComputed for a step with no answer in time
	// (models.ErrLate), FaultedReplies otherwise.
	why    Counter
	since  time.Time
	record *Recorder   // hears of faults and recoveries (nil: no recording)
	active atomic.Bool // current != nil, for the links' status
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
//
// The controls of a computed step are checked: one the model wrote as NaN
// or ±Inf (a computation gone wrong; models.Keep is not one) makes the
// step a fault, never "keep the previous value".
func (f *faultState) step(m models.Model, plan *ports.Plan, t float64, outs, ins [][]float64) (computed, faulted bool) {
	if f.panicked == nil {
		computed = f.run(func() bool { return m.Step(t, outs, ins) })
	}
	if computed {
		f.checkControls(plan, ins)
	}
	return computed, f.update()
}

// checkControls sets or clears the non-finite fault from the controls a
// step computed. It allocates only when the fault begins or moves to
// another control.
func (f *faultState) checkControls(plan *ports.Plan, ins [][]float64) {
	for pn, v := range ins {
		for k, x := range v {
			if x-x == 0 || models.IsKeep(x) {
				continue
			}
			if f.nonFinite == nil || f.bad != [2]int{pn, k} {
				f.bad = [2]int{pn, k}
				f.nonFinite = fmt.Errorf("the model computed %v for %s: not a control BeamNG may get (a NaN is a computation gone wrong, not \"keep the value\")", x, controlName(plan, pn, k))
			}
			return
		}
	}
	f.nonFinite = nil
}

// controlName names input port pn's element k.
func controlName(plan *ports.Plan, pn, k int) string {
	if pn < len(plan.Inputs) {
		for _, fd := range plan.Inputs[pn].Fields {
			if k >= fd.Offset && k < fd.Offset+fd.Width {
				if fd.Width > 1 {
					return fmt.Sprintf("%s[%d]", fd.Name, k-fd.Offset)
				}
				return fd.Name
			}
		}
	}
	return fmt.Sprintf("input port %d element %d", pn, k)
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
	if err == nil {
		err = f.nonFinite
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
	switch {
	case err != nil && err == f.nonFinite:
		f.why = NonFinite
	case errors.Is(err, models.ErrLate):
		f.why = NotComputed
	default:
		f.why = FaultedReplies
	}
	f.active.Store(err != nil)
}

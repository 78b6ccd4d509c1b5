package coupling

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/beamng"
	"beamconnect/models"
	"beamconnect/rawudp"
)

// errStepHung is the fault of an in-process model whose step ran past the
// model timeout.
var errStepHung = errors.New("the model's step ran longer than the model timeout")

// neutralReply is what BeamNG gets instead of the model's controls while
// the model is faulted, and when the coupling disconnects: pedals released,
// wheel torques 0, drive mode back to pedals; steering, gear and the custom
// slots NaN, which means "keep" (BeamNG's Gen 1 skips a NaN; for Gen 2
// keepLast resends the last value). In a Gen 2 layout the multiply, add
// and freeze rows go neutral too (1, 0, 0), so a frozen or scaled pedal
// is released as well.
func neutralReply(l *beamng.Layout) []float64 {
	r := make([]float64, l.Len(beamng.ToBeamNG))
	for i := range r {
		r[i] = math.NaN()
	}
	zero := []string{"throttle", "brake", "driveMode"}
	for _, w := range beamng.Wheels {
		zero = append(zero, "wheel"+w+"_brakingTorque", "wheel"+w+"_propulsionTorque")
	}
	for i, s := range l.Signals(beamng.ToBeamNG) {
		switch {
		case i == 0:
		case s.Kind == "multiply":
			r[i] = 1
		case s.Kind == "add" || s.Kind == "freeze":
			r[i] = 0
		case slices.Contains(zero, s.Name) || s.Meaning != "" && slices.Contains(zero, s.Meaning):
			r[i] = 0
		}
	}
	return r
}

// faultState watches the model. A model fault (an exec program that exited
// or stopped answering, a step that panicked or ran past the model timeout)
// is logged when it begins, reported as status 4 (error), and answered for
// with neutral controls, never the model's last ones; BeamNG keeps getting
// replies, so it does not stall.
type faultState struct {
	c        *Coupling
	faulter  models.Faulter // nil when the model cannot fail on its own
	panicked error          // a panic in Step: the model is not stepped again
	current  error          // the fault in force; nil while healthy
	since    time.Time
	timeout  time.Duration

	// The hung-step watchdog (for in-process models, whose step runs on
	// the loop): it answers the pending message with neutral controls once
	// the step has run past the timeout.
	conn      atomic.Pointer[net.UDPConn]   // the socket, where Go's
	sock      atomic.Pointer[rawudp.Socket] // or raw
	stepStart atomic.Int64                  // unix ns the current step began; 0 outside a step
	pendingID atomic.Uint64                 // float64 bits of the reply id the step is for; NaN outside Handle
	firedFor  atomic.Int64                  // the stepStart the watchdog answered for
	fired     atomic.Bool                   // the watchdog answered the message being handled
}

func (f *faultState) init(c *Coupling) {
	f.c = c
	f.faulter, _ = c.model.(models.Faulter)
	f.timeout = time.Duration(c.plan.ModelTimeout * float64(time.Second))
	f.pendingID.Store(math.Float64bits(math.NaN()))
}

// active reports whether a fault is in force.
func (f *faultState) active() bool { return f.current != nil }

// pending tells the watchdog which reply id the current step is for.
func (f *faultState) pending(replyID float64) { f.pendingID.Store(math.Float64bits(replyID)) }

// step steps the model and reports whether it is faulted, in which case
// BeamNG must get neutral controls. A panic is recovered: the model is
// faulted for good (its state can no longer be trusted), and the coupling
// goes on with neutral controls instead of dying with the last controls
// applied.
func (c *Coupling) step(t float64) (faulted bool) {
	f := &c.fault
	if c.sh != nil && c.sh.panicked != nil && f.panicked == nil {
		f.panicked = c.sh.panicked // another vehicle's step panicked: the model is gone for all
	}
	if f.panicked == nil {
		c.stepModel(c.modelTime(t))
	}
	return f.check(c)
}

func (c *Coupling) stepModel(t float64) {
	f := &c.fault
	f.stepStart.Store(time.Now().UnixNano())
	defer func() {
		f.stepStart.Store(0)
		if r := recover(); r != nil {
			f.panicked = fmt.Errorf("the model panicked: %v", r)
			if c.sh != nil {
				c.sh.panicked = f.panicked
			}
			c.log.Error("model panicked; it is not stepped again, BeamNG gets neutral controls for the rest of the run",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	c.model.Step(t, c.outs, c.ins)
}

// check updates the fault state after a step and reports whether the reply
// must be neutral. It allocates nothing while nothing changes.
func (f *faultState) check(c *Coupling) bool {
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
		f.transition(c, err)
	}
	return err != nil
}

// transition logs a fault beginning, changing or ending, and reports it.
func (f *faultState) transition(c *Coupling, err error) {
	now := time.Now()
	switch {
	case f.current == nil:
		c.stats.ModelFaults.Add(1)
		f.since = now
		if err != errStepHung { // the watchdog logged that one when it fired
			c.log.Error("model fault: BeamNG gets neutral controls (pedals released, wheel torques 0) until the model recovers",
				"fault", err.Error(), "timeout", f.timeout)
		}
	case err == nil:
		c.log.Info("model recovered: its controls go to BeamNG again", "fault", f.current.Error(), "lasted", now.Sub(f.since).Round(time.Millisecond))
	default:
		c.log.Error("model fault", "fault", err.Error(), "was", f.current.Error())
	}
	f.current = err
	c.report()
}

// answeredByWatchdog reports (once) that the watchdog already answered the
// message just handled.
func (f *faultState) answeredByWatchdog() bool { return f.fired.Swap(false) }

// watch runs the hung-step watchdog until ctx ends or the returned func is
// called. It wakes a few times per timeout, reads two atomics, and acts
// only when a step has run past the timeout: it sends BeamNG neutral
// controls under the pending reply id, so BeamNG's last controls are not
// the model's while it hangs, and logs at once.
func (f *faultState) watch(ctx context.Context) func() {
	if f.timeout <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		reply := make([]float64, len(f.c.neutral))
		tx := make([]byte, 8*len(f.c.neutral))
		tick := time.NewTicker(max(f.timeout/5, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				start := f.stepStart.Load()
				if start == 0 || now.UnixNano()-start < int64(f.timeout) || f.firedFor.Load() == start {
					continue
				}
				f.firedFor.Store(start)
				id := math.Float64frombits(f.pendingID.Load())
				conn, sock := f.conn.Load(), f.sock.Load()
				ran := time.Duration(now.UnixNano() - start).Round(time.Millisecond)
				if math.IsNaN(id) || (conn == nil && sock == nil) {
					f.c.log.Error("the model's step is hung (no BeamNG message waits on it)", "running_for", ran, "timeout", f.timeout)
					continue
				}
				copy(reply, f.c.neutral)
				if f.c.gen2 {
					f.c.hungMu.Lock()
					copy(reply, f.c.hungReply) // "keep" resolved: no NaN to a Gen 2 BeamNG
					f.c.hungMu.Unlock()
				}
				reply[0] = id
				if b, err := beamng.Encode(tx, reply); err == nil {
					if sock != nil {
						sock.SendShared(b, f.c.remote)
					} else {
						conn.WriteToUDPAddrPort(b, f.c.remote)
					}
				}
				f.fired.Store(true)
				f.c.stats.NeutralReplies.Add(1)
				f.c.log.Error("model fault: its step is hung; answered BeamNG with neutral controls (pedals released, wheel torques 0)",
					"running_for", ran, "timeout", f.timeout, "reply_id", id)
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

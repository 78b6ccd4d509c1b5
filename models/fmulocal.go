package models

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"beamconnect/fmu/fmi"
	"beamconnect/fmu/host"
	"beamconnect/mailbox"
)

// localFMU is an FMU loaded into beamconnect (modelParams.inProcess). Its C
// code runs on a worker goroutine locked to an OS thread of its own, never
// on the coupling's loop: a step waits for the worker with the deadline, as
// it waits for a child process. A step that hangs is a fault at once; once
// it has run past killAfter its thread is abandoned (it can be stopped only
// with the process) and the FMU is instantiated again on a new one.
type localFMU struct {
	w     *worker                // nil while a new instance is being made
	fresh atomic.Pointer[worker] // a new instance, ready to take over
	b     backoff
	base  [2]int64 // catch-ups and resets of instances that ended
	timer *time.Timer
}

// localSpin is how long a step spins on the worker's answer before it
// sleeps, and workerSpin how long the worker spins for the next request
// before it sleeps: an FMU's step usually takes microseconds and, at full
// rate, the next request comes tens of them later, far less than waking a
// sleeping thread takes. The child process's handoff spins alike.
const (
	localSpin  = host.DefaultSpin
	workerSpin = host.DefaultHostSpin
)

// A worker's request is idle, requested (the worker has it) or answered
// (its result waits for the loop).
const (
	reqIdle int32 = iota
	reqAsked
	reqAnswered
)

// worker is one instance of the FMU and the locked goroutine that calls
// it. The loop writes a request's fields while the state is idle, the
// worker its result while it is asked: the state's atomic stores order the
// two.
type worker struct {
	st    *fmi.Stepper
	since time.Time // when it was made
	good  bool      // it has stepped well (the loop's)

	state   atomic.Int32
	askedAt atomic.Int64 // unix ns the pending request was made
	req     chan struct{}
	done    chan struct{}
	quit    chan struct{}
	exited  chan struct{}
	gone    atomic.Bool // abandoned: hung in the FMU's code
	slow    bool        // the pending step ran past the model timeout (the loop's)

	// The request.
	t       float64
	in      []float64
	tune    []fmi.Var
	tuneVal []float64
	// The result.
	out              []float64
	ok               bool
	err              error
	tuneErr          error
	catchUps, resets int64
}

func (m *FMU) startLocal() error {
	w, err := newWorker(m)
	if err != nil {
		return err
	}
	m.local = &localFMU{w: w, b: newBackoff(), timer: time.NewTimer(time.Hour)}
	m.local.timer.Stop()
	return nil
}

// newWorker instantiates the FMU on a new locked goroutine and returns
// once it is ready.
func newWorker(m *FMU) (*worker, error) {
	w := &worker{
		since: time.Now(),
		req:   make(chan struct{}, 1), done: make(chan struct{}, 1),
		quit: make(chan struct{}), exited: make(chan struct{}),
		in: make([]float64, len(m.inputs)), out: make([]float64, len(m.outputs)),
	}
	ready := make(chan error, 1)
	setup := m.currentSetup()
	go w.run(setup, m.fmuLog, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// run is the worker's goroutine: it instantiates the FMU and steps it for
// each request, on one OS thread, until told to quit.
func (w *worker) run(setup fmi.Setup, log fmi.Logger, ready chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer close(w.exited)
	st, err := fmi.NewStepper(setup, log)
	if err != nil {
		ready <- err
		return
	}
	w.st = st
	ready <- nil
	for {
		if !w.awaitRequest(workerSpin) {
			st.Close()
			return
		}
		w.tuneErr = nil
		if len(w.tune) > 0 {
			w.tuneErr = st.SetParams(w.tune, w.tuneVal)
		}
		w.ok, w.err = false, nil
		if w.tuneErr == nil {
			w.ok, w.err = st.Step(w.t, w.in, w.out)
		}
		w.catchUps, w.resets = st.CatchUps, st.Resets
		if w.gone.Load() {
			return // abandoned while it hung: nobody waits for it
		}
		w.state.Store(reqAnswered)
		select {
		case w.done <- struct{}{}:
		default:
		}
	}
}

// awaitRequest waits for the loop's next request: spinning for spin, then
// asleep; false when told to quit.
func (w *worker) awaitRequest(spin time.Duration) bool {
	if mailbox.SpinWait(func() bool { return w.state.Load() == reqAsked }, spin) {
		return true
	}
	for {
		select {
		case <-w.req: // a token may be an older request's, taken by the spin
			if w.state.Load() == reqAsked {
				return true
			}
		case <-w.quit:
			return false
		}
	}
}

// step hands this message's data to the worker and waits up to the
// deadline for its step; it reports whether the outputs were computed from
// them.
func (l *localFMU) step(m *FMU, t float64, out, in [][]float64) bool {
	w := l.current(m)
	if w == nil {
		return false // being instantiated again: the fault says so
	}
	switch w.state.Load() {
	case reqAsked:
		m.skipped.Add(1) // still on an older message's step
		l.checkHung(m, w)
		return false
	case reqAnswered:
		l.collect(m, w, nil) // an older message's: its health counts, its outputs do not
		if l.w != w {
			return false
		}
	}
	m.gather(out)
	copy(w.in, m.inVals)
	w.t = t
	w.tune, w.tuneVal = append(w.tune[:0], m.tune...), append(w.tuneVal[:0], m.tuneVal...)
	m.sentTune()
	w.askedAt.Store(time.Now().UnixNano())
	w.slow = false
	w.state.Store(reqAsked)
	select {
	case w.req <- struct{}{}:
	default: // a token is there already: the worker takes this request with it
	}
	if !l.await(m, w) {
		m.missed.Add(1) // its result is collected at the next message
		l.checkHung(m, w)
		return false
	}
	return l.collect(m, w, in)
}

// await waits for the worker's answer: a short spin, then a sleep bounded
// by the deadline.
func (l *localFMU) await(m *FMU, w *worker) bool {
	if mailbox.SpinWait(func() bool { return w.state.Load() == reqAnswered }, localSpin) {
		return true
	}
	l.timer.Reset(m.deadline)
	defer l.timer.Stop()
	for w.state.Load() != reqAnswered {
		select {
		case <-w.done:
		case <-l.timer.C:
			return w.state.Load() == reqAnswered
		}
	}
	return true
}

// collect takes the worker's result: a fault, or the outputs applied to in
// (nil: an older message's, not applied). It reports whether in was set.
func (l *localFMU) collect(m *FMU, w *worker, in [][]float64) bool {
	ok, err, tuneErr := w.ok, w.err, w.tuneErr
	copy(m.outVals, w.out)
	m.catchUps.Store(l.base[0] + w.catchUps)
	m.resets.Store(l.base[1] + w.resets)
	w.state.Store(reqIdle)
	var bad *fmi.BadOutput
	switch {
	case tuneErr != nil:
		m.tuneRefused(tuneErr)
		l.retire(m, w)
	case errors.As(err, &bad):
		m.failures.Add(1)
		m.setFault(err)
	case err != nil:
		m.failures.Add(1)
		m.setFault(fmt.Errorf("the FMU failed: %w", err))
		l.retire(m, w)
	case ok:
		w.good = true
		m.healthy()
		if in != nil {
			m.apply(in)
			return true
		}
	}
	return false
}

// current is the worker in use, taking over a new instance when one is
// ready.
func (l *localFMU) current(m *FMU) *worker {
	if l.w == nil {
		w := l.fresh.Swap(nil)
		if w == nil {
			return nil // the restart's backoff is still running
		}
		l.w = w
		m.restarts.Add(1)
		m.log.Info("the FMU is instantiated again", "fmu", m.file)
	}
	return l.w
}

// checkHung faults a step that has run past the model timeout, and
// abandons its thread once it has run past killAfter too: the FMU is then
// instantiated again on a new thread.
func (l *localFMU) checkHung(m *FMU, w *worker) {
	asked := w.askedAt.Load()
	if w.state.Load() != reqAsked || asked == 0 {
		return
	}
	ran := time.Duration(time.Now().UnixNano() - asked)
	if ran <= m.timeout {
		return
	}
	if !w.slow {
		w.slow = true
		m.setFault(fmt.Errorf("the FMU's step has not returned after %v, longer than the model timeout %v", ran.Round(time.Millisecond), m.timeout))
	}
	if ran > max(killAfter, 4*m.timeout) {
		m.log.Error("the FMU's step has not returned: its thread is abandoned (it runs on inside beamconnect until the run ends) and the FMU is instantiated again",
			"fmu", m.file, "running_for", ran.Round(time.Millisecond))
		w.gone.Store(true)
		l.drop(m, w, "its step hung")
	}
}

// retire ends a worker whose instance failed, and instantiates the FMU
// again after the backoff.
func (l *localFMU) retire(m *FMU, w *worker) {
	close(w.quit)
	l.drop(m, w, "the FMU failed")
}

// drop lets go of the worker in use and starts a new one after the
// backoff, unless restarts are off.
func (l *localFMU) drop(m *FMU, w *worker, why string) {
	l.base[0], l.base[1] = m.catchUps.Load(), m.resets.Load()
	l.w = nil
	l.b.ran(time.Since(w.since), w.good)
	if !m.restart {
		m.log.Error(why+"; not instantiating it again (modelParams.restart is false)", "fmu", m.file)
		err := errors.New(why + ", and modelParams.restart is false")
		m.procFault.Store(&err)
		return
	}
	m.log.Error(why+"; instantiating it again", "fmu", m.file, "in", l.b.next)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for l.b.wait(m.closing) {
			nw, err := newWorker(m)
			if err == nil {
				l.fresh.Store(nw)
				return
			}
			m.log.Error("cannot instantiate the FMU again", "err", err, "next_try_in", l.b.next)
		}
	}()
}

// close ends the workers that are not hung, terminating their FMUs.
func (l *localFMU) close() {
	for _, w := range []*worker{l.w, l.fresh.Swap(nil)} {
		if w == nil || w.gone.Load() {
			continue
		}
		close(w.quit)
		select {
		case <-w.exited:
		case <-time.After(2 * time.Second): // its step hangs: leave it
		}
	}
}

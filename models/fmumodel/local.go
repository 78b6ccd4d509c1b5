package fmumodel

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"beamconnect/fmu/fmi"
	"beamconnect/internal/mailbox"
	"beamconnect/models"
)

// localFMU is an FMU loaded into beamconnect (modelParams.inProcess). Its C
// code runs on a worker goroutine locked to an OS thread of its own, never
// on the coupling's loop: a step waits for the worker as it waits for a
// child process. A step that hangs is a fault once it has run past the
// model timeout; once it has run past killAfter its thread is abandoned (it
// can be stopped only with the process) and the FMU is instantiated again
// on a new one, at most maxAbandoned times: the next hang is a fault for
// good, so a thread is never leaked without bound.
type localFMU struct {
	w     *worker                // nil while a new instance is being made
	fresh atomic.Pointer[worker] // a new instance, ready to take over
	b     models.Backoff
	base  [5]int64 // catch-ups, resets, solver steps, rejected steps and events of instances that ended
	final bool     // the FMU cannot run as configured (or hung too often): no restart
}

// maxAbandoned is how many threads hung in the FMU's step are abandoned,
// each followed by a new instance, before a hang is a fault for good: an
// FMU that hangs again and again would otherwise leave a thread (a core,
// if it spins) behind every few seconds for as long as the run lasts.
const maxAbandoned = 3

// worker is one instance of the FMU and the locked goroutine that calls
// it. The loop and the worker hand each request and its answer over
// through a mailbox of this process (mailbox.InProcess), as the FMU in its
// child process does across processes: each side spins while that pays,
// then sleeps on a futex or an event. The loop writes a request's fields
// and asks; the worker writes its result and replies: the box's sequence
// numbers order the two.
type worker struct {
	st    *fmi.Stepper
	since time.Time // when it was made
	good  bool      // it has stepped well (the loop's)

	ask     *mailbox.Box // the loop's end
	answer  *mailbox.Box // the worker's end
	asked   bool         // a request is out whose answer the loop has not taken (the loop's)
	askedAt atomic.Int64 // unix ns the pending request was made
	exited  chan struct{}
	gone    atomic.Bool // abandoned: hung in the FMU's code
	slow    bool        // the pending step ran past the model timeout (the loop's)

	// The request.
	seq     uint64 // its sequence number, which the result carries
	t       float64
	reset   bool
	in      []float64
	tune    []fmi.Var
	tuneVal []float64
	// The result.
	doneSeq uint64 // the request it answers
	out     []float64
	ok      bool
	err     error
	tuneErr error
	counts  [5]int64 // catch-ups, resets, solver steps, rejected steps, events
}

func (m *FMU) startLocal() error {
	w, err := newWorker(m)
	if err != nil {
		return err
	}
	m.local = &localFMU{w: w, b: models.NewBackoff()}
	return nil
}

// newWorker instantiates the FMU on a new locked goroutine and returns
// once it is ready.
func newWorker(m *FMU) (*worker, error) {
	ask, answer, err := mailbox.InProcess()
	if err != nil {
		return nil, fmt.Errorf("model fmu: %w", err)
	}
	w := &worker{
		since: time.Now(), ask: ask, answer: answer, exited: make(chan struct{}),
		in: make([]float64, len(m.inputs)), out: make([]float64, len(m.outVals)),
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
		if _, err := w.answer.Next(time.Time{}); err != nil {
			st.Close() // told to quit: the box is closed
			return
		}
		w.tuneErr, w.ok, w.err = nil, false, nil
		if w.reset {
			w.err = st.Reset()
		}
		if w.err == nil && len(w.tune) > 0 {
			w.tuneErr = st.SetParams(w.tune, w.tuneVal)
		}
		if w.err == nil && w.tuneErr == nil {
			w.ok, w.err = st.Step(w.t, w.in, w.out)
		}
		sol := st.Solver()
		w.counts = [5]int64{st.CatchUps, st.Resets, sol.Steps, sol.Rejected, sol.Events}
		w.doneSeq = w.seq
		if w.gone.Load() {
			st.Close() // abandoned while it hung, it came back: nobody waits for it
			return
		}
		w.answer.Reply(0)
	}
}

// send hands the worker request seq, for the step at point; false while
// it is being instantiated again or still on an older request.
func (l *localFMU) send(m *FMU, point float64, seq uint64) bool {
	w := l.current(m)
	if w == nil {
		return false // being instantiated again: the fault says so
	}
	if w.asked && !w.ask.Answered() {
		m.skipped.Add(1) // still on an older message's step
		l.checkHung(m, w)
		return false
	}
	if w.asked {
		l.take(m, w) // an older request's answer, which came after its wait: its health, not its outputs
		if l.w != w {
			return false // it failed: a new instance is on its way
		}
	}
	copy(w.in, m.inVals)
	w.seq, w.t, w.reset = seq, point, m.reset
	w.tune, w.tuneVal = append(w.tune[:0], m.tune...), append(w.tuneVal[:0], m.tuneVal...)
	m.sentTune()
	m.reset = false
	w.askedAt.Store(time.Now().UnixNano())
	w.slow = false
	w.asked = true
	w.ask.Ask(0)
	return true
}

// await waits for the worker's answer (until m.until), and takes it; only
// the answer to the request sent counts.
func (l *localFMU) await(m *FMU) bool {
	w := l.w
	if w == nil {
		return false
	}
	if !l.wait(m, w) {
		l.checkHung(m, w)
		return false // its result is collected at a later message
	}
	l.take(m, w)
	return m.doneSeq == m.seq
}

// collect takes the worker's answer if it came since.
func (l *localFMU) collect(m *FMU) {
	if w := l.w; w != nil && w.asked && w.ask.Answered() {
		l.take(m, w)
	}
}

// wait waits for the worker's answer until m.until.
func (l *localFMU) wait(m *FMU, w *worker) bool {
	_, err := w.ask.Await(m.until(w.askedAt.Load()))
	return err == nil
}

// take takes the worker's result: a fault, an end, or the outputs of the
// step it answers, when that is the request awaited.
func (l *localFMU) take(m *FMU, w *worker) {
	ok, err, tuneErr := w.ok, w.err, w.tuneErr
	for i, n := range w.counts {
		[...]*atomic.Int64{&m.catchUps, &m.resets, &m.steps, &m.rejected, &m.events}[i].Store(l.base[i] + n)
	}
	if m.answered(w.doneSeq, ok && err == nil && tuneErr == nil) && ok && err == nil {
		copy(m.outVals, w.out)
	}
	w.asked = false
	var bad *fmi.BadOutput
	var end *fmi.Terminated
	switch {
	case tuneErr != nil:
		m.tuneRefused(tuneErr)
		l.retire(m, w)
	case errors.As(err, &end):
		m.end(end.Error())
	case errors.As(err, &bad):
		m.failures.Add(1)
		m.setFault(err)
	case fmi.Unfit(err):
		m.failures.Add(1)
		l.final = true
		m.unfit("the FMU failed: " + err.Error())
		l.retire(m, w)
	case err != nil:
		m.failures.Add(1)
		m.setFault(fmt.Errorf("the FMU failed: %w", err))
		l.retire(m, w)
	case ok:
		w.good = true
		m.healthy()
	}
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
	if !w.asked || w.ask.Answered() || asked == 0 {
		return
	}
	ran := time.Duration(time.Now().UnixNano() - asked)
	if ran < m.timeout {
		return
	}
	if !w.slow {
		w.slow = true
		m.setFault(hungStep(ran, m.timeout))
	}
	if ran > max(killAfter, 4*m.timeout) {
		w.gone.Store(true)
		n := m.abandoned.Add(1)
		if n >= maxAbandoned {
			l.final = true
			err := fmt.Errorf("the FMU's step hung %d times in process: each time its thread was abandoned (%d threads run on inside beamconnect until it ends), and it is not instantiated again; run it in its child process (no modelParams.inProcess), where a hung step's process is stopped", n, n)
			m.procFault.Store(&err)
			m.log.Error("FMU fault", "fmu", filepath.Base(m.file), "err", err.Error())
		} else {
			m.log.Error("the FMU's step has not returned: its thread is abandoned (it runs on inside beamconnect until the run ends) and the FMU is instantiated again",
				"fmu", m.file, "running_for", ran.Round(time.Millisecond), "threads_abandoned", n, "at_most", maxAbandoned)
		}
		l.drop(m, w, "its step hung")
	}
}

// retire ends a worker whose instance failed, and instantiates the FMU
// again after the backoff.
func (l *localFMU) retire(m *FMU, w *worker) {
	w.ask.Close()
	l.drop(m, w, "the FMU failed")
}

// drop lets go of the worker in use and starts a new one after the
// backoff, unless restarts are off.
func (l *localFMU) drop(m *FMU, w *worker, why string) {
	l.base = [5]int64{m.catchUps.Load(), m.resets.Load(), m.steps.Load(), m.rejected.Load(), m.events.Load()}
	l.w = nil
	l.b.Ran(time.Since(w.since), w.good)
	if l.final {
		return // it cannot run as configured: the fault stays
	}
	if !m.restart {
		m.log.Error(why+"; not instantiating it again (modelParams.restart is false)", "fmu", m.file)
		if f := m.fault.Load(); f != nil {
			why = (*f).Error() // what failed, not only that it did
		}
		err := errors.New(why + ", and modelParams.restart is false")
		m.procFault.Store(&err)
		return
	}
	m.log.Error(why+"; instantiating it again", "fmu", m.file, "in", l.b.Next())
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for l.b.Wait(m.closing) {
			nw, err := newWorker(m)
			if err == nil {
				l.fresh.Store(nw)
				return
			}
			m.log.Error("cannot instantiate the FMU again", "err", err, "next_try_in", l.b.Next())
		}
	}()
}

// close ends the workers that are not hung, terminating their FMUs.
func (l *localFMU) close() {
	for _, w := range []*worker{l.w, l.fresh.Swap(nil)} {
		if w == nil || w.gone.Load() {
			continue
		}
		w.ask.Close()
		select {
		case <-w.exited:
		case <-time.After(2 * time.Second): // its step hangs: leave it
		}
	}
}

package models

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"beamconnect/fmu/fmi"
)

// localFMU is an FMU loaded into beamconnect (modelParams.inProcess).
type localFMU struct {
	st    *fmi.Stepper // nil while it is being instantiated again
	since time.Time    // when st began
	good  bool         // st has stepped well
	fresh atomic.Pointer[fmi.Stepper]
	b     backoff
	base  [2]int64 // catch-ups and resets of instances that failed
}

func (m *FMU) startLocal() error {
	st, err := fmi.NewStepper(m.currentSetup(), m.fmuLog)
	if err != nil {
		return err
	}
	m.local = &localFMU{st: st, since: time.Now(), b: newBackoff()}
	return nil
}

func (l *localFMU) step(m *FMU, t float64, out, in [][]float64) {
	if l.st == nil {
		st := l.fresh.Swap(nil)
		if st == nil {
			return // the restart's backoff is still running
		}
		l.st, l.since, l.good = st, time.Now(), false
		m.restarts.Add(1)
		m.log.Info("the FMU is instantiated again", "fmu", m.file)
	}
	if !stepping(out) {
		return // not connected: no fresh data to act on
	}
	m.gather(out)
	ok, err := l.st.Step(t, m.inVals, m.outVals)
	m.catchUps.Store(l.base[0] + l.st.CatchUps)
	m.resets.Store(l.base[1] + l.st.Resets)
	var bad *fmi.BadOutput
	switch {
	case errors.As(err, &bad):
		m.failures.Add(1)
		m.setFault(err)
	case err != nil:
		m.failures.Add(1)
		m.setFault(fmt.Errorf("the FMU failed: %w", err))
		l.base[0], l.base[1] = m.catchUps.Load(), m.resets.Load()
		l.st.Close()
		l.st = nil
		l.b.ran(time.Since(l.since), l.good)
		if !m.restart {
			m.log.Error("the FMU failed; not instantiating it again (modelParams.restart is false)", "fmu", m.file)
			return
		}
		m.log.Error("the FMU failed; instantiating it again", "fmu", m.file, "in", l.b.next)
		l.restartLater(m)
	case ok:
		l.good = true
		m.apply(in)
		m.healthy()
	}
}

// restartLater instantiates the FMU again after the backoff, off the
// coupling's loop; the next step picks it up.
func (l *localFMU) restartLater(m *FMU) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for l.b.wait(m.closing) {
			st, err := fmi.NewStepper(m.currentSetup(), m.fmuLog)
			if err == nil {
				l.fresh.Store(st)
				return
			}
			m.log.Error("cannot instantiate the FMU again", "err", err, "next_try_in", l.b.next)
		}
	}()
}

// tune sets changed parameters at once.
func (l *localFMU) tune(m *FMU, list []fmi.Var, vals []float64) {
	if l.st == nil {
		return // a restarted instance gets them from the setup
	}
	if err := l.st.SetParams(list, vals); err != nil {
		m.setFault(fmt.Errorf("the FMU refused the tuned parameters: %w", err))
	}
}

func (l *localFMU) close() {
	if l.st != nil {
		l.st.Close()
	}
	if st := l.fresh.Swap(nil); st != nil {
		st.Close()
	}
}

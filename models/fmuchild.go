package models

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"beamconnect/fmu/host"
)

// childFMU is an FMU in a child process (the default): a crash or hang of
// its code is a fault beamconnect survives.
type childFMU struct {
	argv   []string
	client atomic.Pointer[host.Client] // nil while the host is started again
	first  atomic.Bool                 // the current host has not answered yet
	slow   atomic.Bool                 // the outstanding step has run past the model timeout
	hung   atomic.Bool                 // the current host was stopped for hanging
	failed atomic.Bool                 // the current host was stopped after its FMU failed
	timer  *time.Timer                 // the step's deadline
	answer host.Answer
	// Catch-ups and resets of hosts that ended, and of the current one.
	base, last [2]atomic.Int64
	oldAge     atomic.Int64 // ns: the longest wait of hosts that ended
}

func (m *FMU) startChild() error {
	argv, err := FMUHost()
	if err != nil {
		return err
	}
	c := &childFMU{argv: argv, timer: time.NewTimer(time.Hour)}
	c.timer.Stop()
	cl, err := c.start(m)
	if err != nil {
		return err
	}
	m.child = c
	m.wg.Add(1)
	go c.supervise(m, cl)
	return nil
}

// start runs a host and opens the FMU in it.
func (c *childFMU) start(m *FMU) (*host.Client, error) {
	lim := &limiter{every: 100 * time.Millisecond}
	logLine := func(line string) {
		if n, ok := lim.allow(time.Now()); ok {
			m.log.Warn("FMU host", "fmu", filepath.Base(m.file), "says", line, "lines_since_last_shown", n)
		}
	}
	cl, err := host.Start(c.argv, m.dir, m.currentSetup(), startGrace, logLine)
	if err != nil {
		return nil, err
	}
	c.first.Store(true)
	c.slow.Store(false)
	c.hung.Store(false)
	c.failed.Store(false)
	c.client.Store(cl)
	return cl, nil
}

func (c *childFMU) step(m *FMU, t float64, out, in [][]float64) bool {
	cl := c.client.Load()
	if cl == nil {
		return false // being started again: the fault says so
	}
	c.take(m, cl, nil) // an older message's answer: its health counts, its outputs do not
	m.gather(out)
	if !cl.Send(t, m.tune, m.tuneVal, m.inVals) {
		m.skipped.Add(1) // still busy with an older message's step
		c.checkHung(m, cl)
		return false
	}
	m.sentTune()
	computed := false
	c.timer.Reset(m.deadline)
wait:
	for {
		if got, applied := c.take(m, cl, in); got {
			computed = applied
			break
		}
		select {
		case <-cl.Answers():
		case <-c.timer.C:
			m.missed.Add(1) // this message gets neutral controls
			break wait
		case <-cl.Done():
			break wait
		}
	}
	c.timer.Stop()
	c.checkHung(m, cl)
	return computed
}

// take handles the newest answer, if there is one, and applies its outputs
// to in (nil: an older message's answer, not applied): got says whether
// there was one, applied whether in was set.
func (c *childFMU) take(m *FMU, cl *host.Client, in [][]float64) (got, applied bool) {
	if !cl.Take(m.outVals, &c.answer) {
		return false, false
	}
	c.first.Store(false)
	c.slow.Store(false)
	a := &c.answer
	c.last[0].Store(int64(a.CatchUps))
	c.last[1].Store(int64(a.Resets))
	m.catchUps.Store(c.base[0].Load() + int64(a.CatchUps))
	m.resets.Store(c.base[1].Load() + int64(a.Resets))
	switch a.Result {
	case host.Stepped:
		m.healthy()
		if in != nil {
			m.apply(in)
			applied = true
		}
	case host.BadOutput:
		m.failures.Add(1)
		m.setFault(errors.New(a.Err))
	case host.Failed:
		m.failures.Add(1)
		m.setFault(errors.New("the FMU failed: " + a.Err))
		if !c.failed.Swap(true) {
			cl.Kill() // its instance is unusable: a new host makes a new one
		}
	case host.TuneFailed:
		m.tuneRefused(errors.New(a.Err))
		if !c.failed.Swap(true) {
			cl.Kill() // an instance that refused a call may be unusable: a new host makes a new one
		}
	}
	return true, applied
}

// killAfter is how long a step may run before its host is stopped as
// hung: long past the model timeout, so that a host the machine merely
// held up for a while (a loaded machine) keeps its FMU's state. The fault,
// and neutral controls, begin at the model timeout.
const killAfter = time.Second

// checkHung faults a step that has run past the model timeout (the first
// step of a host may take startGrace: it initializes the FMU), and stops
// its host once it has run past killAfter too.
func (c *childFMU) checkHung(m *FMU, cl *host.Client) {
	asked := cl.Outstanding()
	if asked == 0 || c.hung.Load() {
		return
	}
	limit := m.timeout
	if c.first.Load() {
		limit = max(limit, startGrace)
	}
	ran := time.Duration(time.Now().UnixNano() - asked)
	if ran <= limit {
		return
	}
	if !c.slow.Swap(true) {
		m.setFault(fmt.Errorf("the FMU's step has not returned after %v, longer than the model timeout %v", ran.Round(time.Millisecond), limit))
	}
	if ran > max(killAfter, 4*limit) {
		c.hung.Store(true)
		m.log.Error("the FMU's step has not returned: stopping its host process", "fmu", filepath.Base(m.file), "running_for", ran.Round(time.Millisecond))
		cl.Kill()
	}
}

// supervise reports a host that ended at once and starts another with
// backoff, unless restarts are off or the model is closing.
func (c *childFMU) supervise(m *FMU, cl *host.Client) {
	defer m.wg.Done()
	b := newBackoff()
	for {
		started := time.Now()
		select {
		case <-cl.Done():
		case <-m.closing:
			return
		}
		select {
		case <-m.closing:
			return // closing stopped it
		default:
		}
		b.ran(time.Since(started), !c.first.Load())
		why := "the FMU's host process ended: " + cl.Why()
		switch {
		case c.hung.Load():
			why = "the FMU's host process was stopped: its step hung"
		case c.failed.Load():
			why = "the FMU's host process was stopped: its FMU failed"
		}
		if m.restart {
			m.log.Error(why+"; starting it again", "fmu", m.file, "in", b.next)
		} else {
			m.log.Error(why+"; not starting it again (modelParams.restart is false)", "fmu", m.file)
		}
		err := errors.New(why)
		m.procFault.Store(&err)
		c.client.Store(nil)
		for i := range c.base {
			c.base[i].Add(c.last[i].Swap(0))
		}
		c.oldAge.Store(max(c.oldAge.Load(), int64(cl.MaxAge())))
		if !m.restart {
			return
		}
		for {
			if !b.wait(m.closing) {
				return
			}
			ncl, err := c.start(m)
			if err == nil {
				cl = ncl
				m.restarts.Add(1)
				break
			}
			m.log.Error("cannot start the FMU's host again", "err", strings.TrimPrefix(err.Error(), "model fmu: "), "next_try_in", b.next)
		}
	}
}

func (c *childFMU) maxAge() time.Duration {
	age := time.Duration(c.oldAge.Load())
	if cl := c.client.Load(); cl != nil {
		age = max(age, cl.MaxAge())
	}
	return age
}

func (c *childFMU) close() {
	if cl := c.client.Load(); cl != nil {
		cl.Close()
	}
}

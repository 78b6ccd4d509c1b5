package fmumodel

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"beamconnect/fmu/host"
	"beamconnect/models"
)

// childFMU is an FMU in a child process (the default): a crash or hang of
// its code is a fault beamconnect survives.
type childFMU struct {
	argv      []string
	client    atomic.Pointer[host.Client] // nil while the host is started again
	first     atomic.Bool                 // the current host has not answered yet
	slow      atomic.Bool                 // the outstanding step has run past the model timeout
	hung      atomic.Bool                 // the current host was stopped for hanging
	failed    atomic.Bool                 // the current host was stopped after its FMU failed
	failedWhy atomic.Pointer[string]      // what the FMU said when it failed, kept in the fault that follows
	final     atomic.Bool                 // the FMU cannot run as configured: no restart
	answer    host.Answer
	outs      []float64 // the answer's outputs
	// Catch-ups, resets, solver steps, rejected steps and events of hosts
	// that ended, and of the current one.
	base, last [5]atomic.Int64
	oldAge     atomic.Int64 // ns: the longest wait of hosts that ended
	unseen     atomic.Int64 // answers replaced unseen in hosts that ended
}

func (m *FMU) startChild() error {
	argv, err := FMUHost()
	if err != nil {
		return err
	}
	c := &childFMU{argv: argv, outs: make([]float64, len(m.outVals))}
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
	lim := models.NewLimiter(100 * time.Millisecond)
	logLine := func(line string) {
		if n, ok := lim.Allow(time.Now()); ok {
			m.log.Warn("FMU host", "fmu", filepath.Base(m.file), "says", line, "lines_since_last_shown", n)
		}
	}
	cl, err := host.StartWith(c.argv, m.dir, m.currentSetup(), models.StartGrace, logLine, m.handoff)
	if err != nil {
		return nil, err
	}
	c.first.Store(true)
	c.slow.Store(false)
	c.hung.Store(false)
	c.failed.Store(false)
	c.failedWhy.Store(nil)
	c.client.Store(cl)
	return cl, nil
}

// send hands the host request seq, for the step at point, with the
// parameter changes and the reset waiting; false when the host is being
// started again or still busy with an older request.
func (c *childFMU) send(m *FMU, point float64, seq uint64) bool {
	cl := c.client.Load()
	if cl == nil {
		return false // being started again: the fault says so
	}
	if !cl.Send(seq, point, m.reset, m.tune, m.tuneVal, m.inVals) {
		m.skipped.Add(1) // still busy with an older message's step
		c.checkHung(m, cl)
		return false
	}
	m.sentTune()
	m.reset = false
	return true
}

// await waits for the answer to the request sent (until m.until), and
// takes it; only that request's answer counts.
func (c *childFMU) await(m *FMU) bool {
	cl := c.client.Load()
	if cl == nil {
		return false
	}
	got := false
	if asked := cl.Outstanding(); asked == 0 {
		got = c.take(m, cl) && m.doneSeq == m.seq // answered already
	} else {
		got = cl.Wait(m.until(asked)) && c.take(m, cl) && m.doneSeq == m.seq
	}
	c.checkHung(m, cl)
	return got
}

// collect takes an answer that came since, if any.
func (c *childFMU) collect(m *FMU) {
	if cl := c.client.Load(); cl != nil {
		c.take(m, cl)
	}
}

// take handles the newest answer, if there is one: its health, its
// counters, and its outputs (those of the step at the point last sent).
func (c *childFMU) take(m *FMU, cl *host.Client) bool {
	if !cl.Take(c.outs, &c.answer) {
		return false
	}
	c.first.Store(false)
	c.slow.Store(false)
	a := &c.answer
	for i, n := range [...]uint32{a.CatchUps, a.Resets, a.Steps, a.Rejected, a.Events} {
		c.last[i].Store(int64(n))
	}
	c.publish(m)
	mine := m.answered(a.Seq, a.Result == host.Stepped)
	switch a.Result {
	case host.Stepped:
		if mine {
			copy(m.outVals, c.outs)
		}
		m.healthy()
	case host.BadOutput:
		m.failures.Add(1)
		m.setFault(errors.New(a.Err))
	case host.Failed:
		m.failures.Add(1)
		m.setFault(errors.New("the FMU failed: " + a.Err))
		said := a.Err // a copy: the answer is reused
		c.failedWhy.CompareAndSwap(nil, &said)
		if !c.failed.Swap(true) {
			cl.Kill() // its instance is unusable: a new host makes a new one
		}
	case host.Unfit:
		m.failures.Add(1)
		c.final.Store(true)
		m.unfit("the FMU failed: " + a.Err)
		cl.Kill()
	case host.Terminated:
		m.end(a.Err)
	case host.TuneFailed:
		m.tuneRefused(errors.New(a.Err))
		said := a.Err // a copy: the answer is reused
		c.failedWhy.CompareAndSwap(nil, &said)
		if !c.failed.Swap(true) {
			cl.Kill() // an instance that refused a call may be unusable: a new host makes a new one
		}
	}
	return true
}

// publish sums the counters of the hosts that ended and the current one's.
func (c *childFMU) publish(m *FMU) {
	for i, to := range [...]*atomic.Int64{&m.catchUps, &m.resets, &m.steps, &m.rejected, &m.events} {
		to.Store(c.base[i].Load() + c.last[i].Load())
	}
}

// killAfter is how long a step may run before its host is stopped as
// hung: long past the model timeout, so that a host the machine merely
// held up for a while (a loaded machine) keeps its FMU's state. The fault,
// and neutral controls, begin at the model timeout.
const killAfter = time.Second

// checkHung faults a step that has run past the model timeout (the first
// step of a host may take models.StartGrace: it initializes the FMU), and stops
// its host once it has run past killAfter too.
func (c *childFMU) checkHung(m *FMU, cl *host.Client) {
	asked := cl.Outstanding()
	if asked == 0 || c.hung.Load() {
		return
	}
	limit := m.timeout
	if c.first.Load() {
		limit = max(limit, models.StartGrace)
	}
	ran := time.Duration(time.Now().UnixNano() - asked)
	if ran < limit {
		return
	}
	if !c.slow.Swap(true) {
		m.setFault(hungStep(ran, limit))
	}
	if ran > max(killAfter, 4*limit) {
		c.hung.Store(true)
		m.log.Error("the FMU's step has not returned: stopping its host process", "fmu", filepath.Base(m.file), "running_for", ran.Round(time.Millisecond))
		cl.Kill()
	}
}

// hungStep is the fault of a step that has run for ran, past the model
// timeout: it has no answer in time.
func hungStep(ran, limit time.Duration) error {
	return models.Late(fmt.Sprintf("the FMU's step has not returned after %v, longer than the model timeout %v", ran.Round(time.Millisecond), limit))
}

// supervise reports a host that ended at once and starts another with
// backoff, unless restarts are off or the model is closing.
func (c *childFMU) supervise(m *FMU, cl *host.Client) {
	defer m.wg.Done()
	b := models.NewBackoff()
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
		b.Ran(time.Since(started), !c.first.Load())
		why := "the FMU's host process ended: " + cl.Why()
		switch {
		case c.final.Load():
			return // it cannot run as configured: the fault stays
		case c.hung.Load():
			why = "the FMU's host process was stopped: its step hung"
		case c.failed.Load():
			why = "the FMU's host process was stopped: its FMU failed"
			if said := c.failedWhy.Load(); said != nil {
				why += ": " + *said // the cause, which the fault said until now
			}
		}
		if m.restart {
			m.log.Error(why+"; starting it again", "fmu", m.file, "in", b.Next())
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
		c.unseen.Add(cl.Unseen())
		if !m.restart {
			return
		}
		for {
			if !b.Wait(m.closing) {
				return
			}
			ncl, err := c.start(m)
			if err == nil {
				cl = ncl
				m.restarts.Add(1)
				break
			}
			m.log.Error("cannot start the FMU's host again", "err", strings.TrimPrefix(err.Error(), "model fmu: "), "next_try_in", b.Next())
		}
	}
}

// dropped counts the answers its hosts replaced unseen.
func (c *childFMU) dropped() int64 {
	n := c.unseen.Load()
	if cl := c.client.Load(); cl != nil {
		n += cl.Unseen()
	}
	return n
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

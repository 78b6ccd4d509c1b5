package program

import (
	"beamconnect/internal/proctree"
	"beamconnect/models"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The exec model's program: started, supervised, restarted after it
// ends.

// start runs the program once, with its writer and reader.
func (m *Exec) start() (*process, error) {
	cmd := exec.Command(m.argv[0], m.argv[1:]...)
	cmd.Dir = m.dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("model exec: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("model exec: %w", err)
	}
	cmd.Stderr = os.Stderr
	tree, err := proctree.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("model exec: starting %q: %w", strings.Join(m.argv, " "), err)
	}
	p := &process{tree: tree, stdin: stdin, stdout: stdout, done: make(chan struct{}), answeredReq: make(chan struct{}, 1)}
	p.gen.Store(m.resetGen.Load()) // a new run starts from the start
	m.procMu.Lock()
	m.proc = p
	m.procMu.Unlock()
	m.answered.Store(false)
	m.spoke.Store(false)
	m.hung.Store(nil)
	m.unanswered.Store(0) // a new run: its requests are timed from its first
	go m.write(p)
	go m.read(p)
	go func() {
		// What it started (a shell's background job) ends with it: a new
		// run must not find the old one's children still at work.
		p.exit = tree.Wait()
		close(p.done)
	}()
	return p, nil
}

// supervise waits for the program to exit, reports it at once, and starts
// it again with backoff unless restarts are off or the model is closing.
// It also starts it again at once when a reset asks for that (reset.go),
// and ends it when the model closes.
func (m *Exec) supervise(p *process) {
	defer close(m.done)
	b := models.NewBackoff()
	started := time.Now()
	for {
		var why error // the program ended: why, when not its exit
		select {
		case <-p.done:
		case <-m.closing:
			p.end(2 * time.Second)
			m.lastExit = p.exit
			return
		case <-m.resetNow:
			if p.gen.Load() >= m.resetGen.Load() {
				continue // it has had every reset: by its line, or as a new run
			}
			np, err := m.startAgain(p)
			if err == nil {
				p, started = np, time.Now()
				continue
			}
			why = fmt.Errorf("the model program %q could not be started again to start over: %w", strings.Join(m.argv, " "), err)
		}
		m.lastExit = p.exit
		select {
		case <-m.closing:
			return // closing stopped it
		default:
		}
		b.Ran(time.Since(started), m.answered.Load())
		status := "exited"
		if p.exit != nil {
			status = p.exit.Error()
		}
		if why == nil {
			why = fmt.Errorf("the model program %q ended (%s)", strings.Join(m.argv, " "), status)
		}
		m.dead.Store(&why)
		m.wake()
		if !m.restart {
			m.log.Error("model program ended; not restarting it (modelParams.restart is false)", "command", strings.Join(m.argv, " "), "status", status, "why", why)
			return
		}
		m.log.Error("model program ended; starting it again", "command", strings.Join(m.argv, " "), "status", status, "why", why, "in", b.Next())
		for {
			if !b.Wait(m.closing) {
				return
			}
			np, err := m.start()
			if err == nil {
				p, started = np, time.Now()
				m.restarts.Add(1)
				break
			}
			m.log.Error("cannot start the model program again", "err", err, "next_try_in", b.Next())
		}
	}
}

// end closes the program's stdin, gives it grace to exit, then kills it
// with everything it started.
func (p *process) end(grace time.Duration) {
	p.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.tree.Kill()
		<-p.done
	}
}

// wake ends a Step's wait early (the program ended).
func (m *Exec) wake() {
	select {
	case m.ansReady <- struct{}{}:
	default:
	}
}

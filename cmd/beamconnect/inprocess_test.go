package main

import (
	"sync"
	"testing"
	"time"

	"beamconnect/internal/logtest"
)

// inProcess is a command run in this process in the background, as exec
// runs one: its output read while it writes, and a run stopped as Ctrl-C
// stops it (env.interrupt), which a signal to the test binary could not
// do to one run of several.
type inProcess struct {
	stdout, stderr logtest.Buffer
	interrupt      chan struct{}
	stopOnce       sync.Once
	done           chan struct{}
	code           int
}

// startInProcess runs the CLI with args in process; the test's end stops
// it and waits for it.
func startInProcess(t *testing.T, args ...string) *inProcess {
	t.Helper()
	p := &inProcess{interrupt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.code = run(args, env{stdout: &p.stdout, stderr: &p.stderr, interrupt: p.interrupt,
			lookupEnv: func(string) (string, bool) { return "", false }})
	}()
	t.Cleanup(func() { p.stop(); <-p.done })
	return p
}

// stop ends the run as Ctrl-C would.
func (p *inProcess) stop() { p.stopOnce.Do(func() { close(p.interrupt) }) }

// wait waits for the command's end, up to a minute (a bound only a hang
// reaches), and returns its exit status.
func (p *inProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute later:\n%s", &p.stderr)
	}
	return -1
}

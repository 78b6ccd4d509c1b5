package main

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a command's output, read while it writes: every write
// wakes whoever waits for a line.
type syncBuffer struct {
	mu      sync.Mutex
	buf     strings.Builder
	written chan struct{} // closed at the next write, for waitFor
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nextWrite is closed at the next write.
func (b *syncBuffer) nextWrite() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written == nil {
		b.written = make(chan struct{})
	}
	return b.written
}

// waitFor waits until the output says want ("": until it says anything).
// It looks again at each write, and gives up after a minute: a bound only
// a hang reaches.
func (b *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	b.waitForN(t, want, 1)
}

// waitForN waits until the output says want n times.
func (b *syncBuffer) waitForN(t *testing.T, want string, n int) {
	t.Helper()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	for {
		next := b.nextWrite() // before looking, so a write meanwhile is not missed
		if out := b.String(); strings.Count(out, want) >= n && out != "" {
			return
		}
		select {
		case <-next:
		case <-guard.C:
			t.Fatalf("never said %q %d times in a minute:\n%s", want, n, b)
		}
	}
}

// inProcess is a command run in this process in the background, as exec
// runs one: its output read while it writes, and a run stopped as Ctrl-C
// stops it (env.interrupt), which a signal to the test binary could not
// do to one run of several.
type inProcess struct {
	stdout, stderr syncBuffer
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

// Package logtest is a log a test reads while the code under test writes
// it, from any goroutine.
package logtest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer collects log output; safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed at the next write, for WaitFor
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.buf.Write(p)
}

// nextWrite is closed at the next write.
func (b *Buffer) nextWrite() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written == nil {
		b.written = make(chan struct{})
	}
	return b.written
}

// Logger is a text logger, debug level and up, writing into b.
func (b *Buffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Has reports whether s was logged.
func (b *Buffer) Has(s string) bool { return strings.Contains(b.String(), s) }

// Count is how many times s was logged.
func (b *Buffer) Count(s string) int { return strings.Count(b.String(), s) }

// Bound is how long WaitFor and WaitForN wait: only a hang reaches it (a
// wait on a write returns at the write, so a long bound costs nothing
// while all goes well, and a loaded machine, the race detector or Wine
// may take seconds to start what writes).
const Bound = time.Minute

// WaitFor waits for s to be logged ("": for anything to be), up to Bound,
// and fails the test if it is not. It looks again at each write, not on a
// timer.
func (b *Buffer) WaitFor(t testing.TB, s string) {
	t.Helper()
	b.WaitForN(t, s, 1)
}

// WaitForN is WaitFor of the n-th time s is logged.
func (b *Buffer) WaitForN(t testing.TB, s string, n int) {
	t.Helper()
	if !b.Await(s, n, Bound) {
		t.Fatalf("%q not logged %d times in %v:\n%s", s, n, Bound, b)
	}
}

// Await waits up to timeout for s to have been logged n times ("": for
// anything to have been), and reports whether it was. It looks again at
// each write, not on a timer. It is for a goroutine other than the
// test's, which must not end the test (t.Fatal there would not).
func (b *Buffer) Await(s string, n int, timeout time.Duration) bool {
	return b.Until(timeout, func(string) bool { return b.seen(s, n) })
}

// Until waits up to timeout for ok to say yes of what was logged so far,
// looking again at each write, and reports whether it did.
func (b *Buffer) Until(timeout time.Duration, ok func(logged string) bool) bool {
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for {
		next := b.nextWrite() // before looking, so a write meanwhile is not missed
		if ok(b.String()) {
			return true
		}
		select {
		case <-next:
		case <-limit.C:
			return ok(b.String())
		}
	}
}

// seen says whether s was logged n times, or for "", anything at all.
func (b *Buffer) seen(s string, n int) bool {
	if s == "" {
		return b.String() != ""
	}
	return b.Count(s) >= n
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

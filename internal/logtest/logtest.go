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

// WaitFor waits up to 2 s for s to be logged, and fails the test if it is
// not. It looks again at each write, not on a timer.
func (b *Buffer) WaitFor(t testing.TB, s string) {
	t.Helper()
	if !b.Await(s, 1, 2*time.Second) {
		t.Fatalf("no %q logged in 2 s:\n%s", s, b)
	}
}

// Await waits up to timeout for s to have been logged n times, and
// reports whether it was. It looks again at each write, not on a timer.
// It is for a goroutine other than the test's, which must not end the
// test (t.Fatal there would not).
func (b *Buffer) Await(s string, n int, timeout time.Duration) bool {
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for {
		next := b.nextWrite() // before looking, so a write meanwhile is not missed
		if b.Count(s) >= n {
			return true
		}
		select {
		case <-next:
		case <-limit.C:
			return b.Count(s) >= n
		}
	}
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

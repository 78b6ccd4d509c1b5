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
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Logger is a text logger, debug level and up, writing into b.
func (b *Buffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Has reports whether s was logged.
func (b *Buffer) Has(s string) bool { return strings.Contains(b.String(), s) }

// Count is how many times s was logged.
func (b *Buffer) Count(s string) int { return strings.Count(b.String(), s) }

// WaitFor waits up to 2 s for s to be logged, and fails the test if it is not.
func (b *Buffer) WaitFor(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !b.Has(s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q logged in 2 s:\n%s", s, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Package eventually waits, in tests, for what no event announces: a file
// that grows, a process that ends, the state a web page shows. It looks
// again and again, less often as time goes on, until what it waits for
// holds or a bound only a hang reaches has passed: a wait, never a fixed
// sleep and then a judgement. Where an event does say it (a log line, a
// channel, a counter's wake-up), wait for that instead (internal/logtest).
package eventually

import (
	"testing"
	"time"
)

// True looks at cond until it holds, up to within, and reports whether
// it did. It looks at once, then after 1 ms, and each time up to twice as
// long after, at most 50 ms.
func True(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for gap := time.Millisecond; ; gap = min(2*gap, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		// The one real-clock sleep of the waits it serves: what it looks
		// at (a file, a process, a page) says nothing when it changes.
		time.Sleep(gap)
	}
}

// Must is True, failing the test, saying what did not happen, when cond
// never held within the bound.
func Must(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !True(within, cond) {
		t.Fatalf("%s: not within %v", what, within)
	}
}

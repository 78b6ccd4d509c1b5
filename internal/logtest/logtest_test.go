package logtest

import (
	"sync"
	"testing"
)

// Writes from several goroutines all land, and WaitFor sees them.
func TestBuffer(t *testing.T) {
	var b Buffer
	log := b.Logger()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { log.Warn("from a goroutine") })
	}
	wg.Wait()
	b.WaitFor(t, "level=WARN msg=\"from a goroutine\"")
	if n := b.Count("from a goroutine"); n != 8 {
		t.Errorf("%d lines, want 8:\n%s", n, &b)
	}
	if b.Has("absent") {
		t.Error("Has found what was not logged")
	}
}

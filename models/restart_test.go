package models

import (
	"testing"
	"testing/synctest"
	"time"
)

// Restarts come after 1 s, then twice as long each time up to 30 s, and
// after 1 s again once a run went well for 10 s.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closing := make(chan struct{})
		b := NewBackoff()
		var waits []time.Duration
		for range 7 {
			start := time.Now()
			if !b.Wait(closing) {
				t.Fatal("the wait was cut short")
			}
			waits = append(waits, time.Since(start))
		}
		want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
		for i, w := range want {
			if waits[i] != w*time.Second {
				t.Errorf("wait %d: %v, want %v", i, waits[i], w*time.Second)
			}
		}
		b.Ran(5*time.Second, true)
		if b.next != maxRestart {
			t.Errorf("a short run reset the backoff to %v", b.next)
		}
		b.Ran(20*time.Second, false)
		if b.next != maxRestart {
			t.Errorf("an unhealthy run reset the backoff to %v", b.next)
		}
		b.Ran(20*time.Second, true)
		if b.next != firstRestart {
			t.Errorf("a good long run left the backoff at %v", b.next)
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			close(closing)
		}()
		start := time.Now()
		if b.Wait(closing) || time.Since(start) != 300*time.Millisecond {
			t.Errorf("closing did not end the wait at once (%v)", time.Since(start))
		}
	})
}

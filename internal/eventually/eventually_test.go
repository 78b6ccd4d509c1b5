package eventually

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// True returns as soon as it looks after cond came to hold, and its looks
// grow apart: one at 1 ms, then 2, 4 … up to every 50 ms.
func TestTrue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var looks []time.Duration
		ok := True(time.Minute, func() bool {
			looks = append(looks, time.Since(start))
			return time.Since(start) >= 200*time.Millisecond
		})
		want := "[0s 1ms 3ms 7ms 15ms 31ms 63ms 113ms 163ms 213ms]"
		if got := fmt.Sprint(looks); !ok || got != want {
			t.Errorf("true %v, looked at %s, want %s", ok, got, want)
		}
	})
}

// What never holds is given up on at the bound.
func TestGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if True(time.Second, func() bool { return false }) || time.Since(start) < time.Second || time.Since(start) > time.Second+50*time.Millisecond {
			t.Errorf("True of what never holds: true, or after %v", time.Since(start))
		}
	})
}

package eventually

import (
	"fmt"
	"runtime"
	"strings"
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

// fatalTB records a Fatalf and ends its goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// What never holds is given up on at the bound: True says so, Must fails
// the test saying what did not happen.
func TestGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if True(time.Second, func() bool { return false }) || time.Since(start) < time.Second || time.Since(start) > time.Second+50*time.Millisecond {
			t.Errorf("True of what never holds: true, or after %v", time.Since(start))
		}
		tb := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Must(tb, 2*time.Second, "the file's 200th row", func() bool { return false })
		}()
		<-done
		if !strings.HasPrefix(tb.msg, "the file's 200th row: not within 2s") {
			t.Errorf("Must said %q", tb.msg)
		}
	})
}

package logtest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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

// WaitFor returns at the write of the line it waits for, past other lines
// written meanwhile, not at a later look.
func TestWaitForWakesAtTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Buffer
		log := b.Logger()
		go func() {
			time.Sleep(time.Second)
			log.Info("other")
			time.Sleep(time.Second / 3) // a poll on a tick would see it later
			log.Info("late")
		}()
		start := time.Now()
		b.WaitFor(t, "msg=late")
		if d, want := time.Since(start), time.Second+time.Second/3; d != want {
			t.Errorf("WaitFor returned %v after the start, want %v: at the write", d, want)
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

// A line never written fails the test after Bound, showing what was
// logged.
func TestWaitForGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Buffer
		b.Logger().Info("something else")
		tb := &fatalTB{TB: t}
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.WaitFor(tb, "msg=never")
		}()
		<-done
		if d := time.Since(start); d != Bound || !strings.HasPrefix(tb.msg, `"msg=never" not logged 1 times in 1m0s:`) || !strings.Contains(tb.msg, "something else") {
			t.Errorf("after %v: %q", d, tb.msg)
		}
	})
}

// Await returns true at the write that makes the n-th line it waits for,
// and false at its timeout when fewer came, without failing the test.
func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Buffer
		log := b.Logger()
		go func() {
			for range 3 {
				time.Sleep(time.Second)
				log.Info("tick")
			}
		}()
		start := time.Now()
		if !b.Await("msg=tick", 2, time.Hour) || time.Since(start) != 2*time.Second {
			t.Errorf("Await of the 2nd tick returned after %v", time.Since(start))
		}
		start = time.Now()
		if b.Await("msg=tick", 4, 3*time.Second) || time.Since(start) != 3*time.Second || b.Count("msg=tick") != 3 {
			t.Errorf("Await of a 4th tick of 3: true, or after %v", time.Since(start))
		}
	})
}

// WaitForN waits for the n-th line; "" waits for anything written.
func TestWaitForN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Buffer
		go func() {
			for range 3 {
				time.Sleep(time.Second)
				b.Logger().Info("tick")
			}
		}()
		start := time.Now()
		b.WaitFor(t, "")
		if d := time.Since(start); d != time.Second {
			t.Errorf("WaitFor of anything returned after %v, want at the first write", d)
		}
		b.WaitForN(t, "msg=tick", 3)
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("WaitForN of the 3rd tick returned after %v", d)
		}
	})
}

// Until returns at the write after which what was logged pleases it.
func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Buffer
		go func() {
			time.Sleep(time.Second)
			b.Logger().Info("starting")
			time.Sleep(time.Second)
			b.Logger().Info("waiting for BeamNG")
		}()
		start := time.Now()
		ready := func(s string) bool { return strings.Contains(s, "waiting for") || strings.Contains(s, "bound=") }
		if !b.Until(time.Hour, ready) || time.Since(start) != 2*time.Second {
			t.Errorf("Until returned after %v", time.Since(start))
		}
	})
}

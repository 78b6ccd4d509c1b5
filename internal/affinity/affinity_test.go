//go:build windows || (linux && (amd64 || arm64))

package affinity

import (
	"runtime"
	"testing"
)

// onThread runs f on a goroutine locked to a thread of its own, which
// ends with it: nothing f does to its thread outlives the test.
func onThread(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		f()
	}()
	<-done
}

func TestFollowHoldsTheThreadThenLetsItGo(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one processor: nothing to move between")
	}
	onThread(t, func() {
		own := threadMask(t)
		var f Follower
		for _, n := range []uint32{1, 0} {
			p := Processor(n + 1)
			if !f.Follow(p) {
				t.Fatalf("Follow(processor %d) = false, want the thread held there", n)
			}
			if got, want := threadMask(t), uint64(1)<<n; got != want {
				t.Fatalf("after Follow(processor %d) the thread may run on %b, want %b", n, got, want)
			}
			if got := Current(); got != p {
				t.Fatalf("after Follow(processor %d) the thread runs on processor %d", n, got-1)
			}
			if !f.Follow(p) {
				t.Fatalf("Follow(processor %d) again = false", n)
			}
		}
		if f.Follow(0) {
			t.Fatal("Follow(0) = true, want the thread let go")
		}
		if got := threadMask(t); got != own {
			t.Fatalf("after Follow(0) the thread may run on %b, want %b as before", got, own)
		}
	})
}

func TestFollowLeavesAProcessorTheThreadMayNotUse(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one processor: nothing to forbid")
	}
	onThread(t, func() {
		setThreadMask(t, 1) // as `taskset -c 0` would
		var f Follower
		if f.Follow(Processor(2)) {
			t.Fatal("Follow(processor 1) = true for a thread that may only run on processor 0")
		}
		if got := threadMask(t); got != 1 {
			t.Fatalf("the thread may run on %b, want 1 as it was", got)
		}
		if !f.Follow(Processor(1)) {
			t.Fatal("Follow(processor 0) = false, want it held on the processor it may use")
		}
		f.Follow(0)
		if got := threadMask(t); got != 1 {
			t.Fatalf("after Follow(0) the thread may run on %b, want 1 as it was", got)
		}
	})
}

func TestCurrentNamesAProcessor(t *testing.T) {
	onThread(t, func() {
		var own mask
		if !own.get() {
			t.Fatal("cannot read the thread's processors")
		}
		for range 100 {
			// Not NumCPU: that counts the processors this process may
			// use (a taskset to processor 3 of 4 makes it 1), not their
			// numbers.
			if p := Current(); p == 0 || !own.allows(p) {
				t.Fatalf("Current() = %d, not a processor this thread may run on", p)
			}
		}
	})
}

func TestFollowOfTheSameProcessorAllocatesNothing(t *testing.T) {
	onThread(t, func() {
		var f Follower
		p := Current()
		f.Follow(p)
		if n := testing.AllocsPerRun(100, func() { f.Follow(p); Current() }); n != 0 {
			t.Fatalf("Follow and Current allocate %v times a call", n)
		}
		f.Follow(0)
	})
}

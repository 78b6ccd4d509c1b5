package fmi_test

import (
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"beamconnect/fmu/testfmu"
)

// The test FMU's timed faults sleep their whole time. A signal to the
// thread ends nanosleep early whatever SA_RESTART says, and in a Go
// program every thread takes the process's signals, a child's SIGCHLD
// among them: a "hang-2s" step of an in-process FMU once slept 0.6 s
// beside tests that ended child processes, and the fault matrix's row of
// an FMU that hangs again and again saw it return instead of hang.
func TestFaultSleepsThroughSignals(t *testing.T) {
	runtime.LockOSThread() // the step runs on this thread: the signals go to it
	defer runtime.UnlockOSThread()
	s := stepper(t, testfmu.Options{Fault: "stall", After: 1}, 0.005, nil)
	tid := syscall.Gettid()
	done := make(chan struct{})
	var sent atomic.Int64
	go func() {
		// A ticker, not a wait for an event: the signals must come while
		// the FMU's step sleeps in C, which says nothing as it starts.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if syscall.Tgkill(os.Getpid(), tid, syscall.SIGCHLD) == nil {
					sent.Add(1)
				}
			}
		}
	}()
	start := time.Now()
	s.Step(1, []float64{5}, make([]float64, 3))
	took := time.Since(start)
	close(done)
	if sent.Load() == 0 {
		t.Fatal("no signal reached the step's thread: the test tests nothing")
	}
	if took < 300*time.Millisecond {
		t.Errorf("a step that stalls 300 ms returned after %v, %d signals sent to its thread", took, sent.Load())
	}
}

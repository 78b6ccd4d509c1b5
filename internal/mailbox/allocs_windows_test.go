package mailbox

import (
	"runtime"
	"syscall"
	"testing"
)

var procSetLastError = syscall.NewLazyDLL("kernel32.dll").NewProc("SetLastError")

// The calls a handoff makes into Windows allocate nothing whatever the
// thread last failed at: a last error above 255 is not among the values Go
// boxes for free, so a call that hands it back as an error allocates. In
// CI under Wine a round trip allocated now and then before the waker
// stopped doing so. The clock a spin reads is a call into Windows too.
func TestAllocsWhateverTheLastError(t *testing.T) {
	b := newBox(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const errorTimeout = 1460 // ERROR_TIMEOUT
	n := testing.AllocsPerRun(200, func() {
		syscall.SyscallN(procSetLastError.Addr(), errorTimeout)
		b.spin.clock.now()
		syscall.SyscallN(procSetLastError.Addr(), errorTimeout)
		b.wake.wake(b, offReqSeq)
		b.wake.wait(b, offReqSeq, 0, 0)
	})
	if n != 0 {
		t.Errorf("%v allocations per wake-up and look at the clock", n)
	}
}

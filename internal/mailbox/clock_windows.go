package mailbox

import (
	"syscall"
	"unsafe"
)

var (
	procQPC   = kernel32.NewProc("QueryPerformanceCounter")
	procQPF   = kernel32.NewProc("QueryPerformanceFrequency")
	qpcPerSec = qpf()
)

// clock reads the performance counter, the same in every process (a side
// compares it with the time the other side stamped its word with; the
// shim stamps its requests from it too): Go's own clock on Windows moves
// at the system timer's interrupts (every 0.5 to 15.6 ms), far too coarse
// to time a spin of microseconds. c is where the counter is written: a
// field, so that the call makes nothing escape (it allocates nothing).
type clock struct{ c int64 }

func qpf() int64 {
	var f int64
	syscall.SyscallN(procQPF.Addr(), uintptr(unsafe.Pointer(&f)))
	if f <= 0 {
		f = 1e7 // Windows 10 and later: 10 MHz
	}
	return f
}

// now is the counter in nanoseconds.
func (k *clock) now() int64 {
	syscall.SyscallN(procQPC.Addr(), uintptr(unsafe.Pointer(&k.c)))
	return k.c/qpcPerSec*1e9 + k.c%qpcPerSec*1e9/qpcPerSec
}

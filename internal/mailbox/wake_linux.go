package mailbox

import (
	"syscall"
	"time"
	"unsafe"
)

// waker sleeps and wakes on a futex: the kernel's wait queue for a word of
// memory. A box between two processes, which both map, uses shared
// futexes; a box in one process private ones (the kernel finds their
// queue without looking the memory up).
type waker struct{ private uintptr }

const (
	futexWait    = 0
	futexWake    = 1
	futexPrivate = 128
)

func newLocalWaker() (waker, func(), error) { return waker{private: futexPrivate}, func() {}, nil }

// wait sleeps while the word at off still holds cur, for at most left (for
// ever when negative); a wake, a signal or a change of the word ends it.
func (w waker) wait(b *Box, off int, cur uint32, left time.Duration) {
	var ts *syscall.Timespec
	if left >= 0 {
		t := syscall.NsecToTimespec(left.Nanoseconds())
		ts = &t
	}
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&b.mem[off])), futexWait|w.private, uintptr(cur), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// wake wakes whoever sleeps on the word at off.
func (w waker) wake(b *Box, off int) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&b.mem[off])), futexWake|w.private, 1<<30, 0, 0, 0)
}

package mailbox

import (
	"syscall"
	"time"
	"unsafe"
)

// waker sleeps and wakes on a futex: the kernel's wait queue for a word of
// shared memory, which both processes map.
type waker struct{}

const (
	futexWait = 0 // not FUTEX_PRIVATE: the word is shared between processes
	futexWake = 1
)

// wait sleeps while the word at off still holds cur, for at most left (for
// ever when negative); a wake, a signal or a change of the word ends it.
func (waker) wait(b *Box, off int, cur uint32, left time.Duration) {
	var ts *syscall.Timespec
	if left >= 0 {
		t := syscall.NsecToTimespec(left.Nanoseconds())
		ts = &t
	}
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&b.mem[off])), futexWait, uintptr(cur), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// wake wakes whoever sleeps on the word at off.
func (waker) wake(b *Box, off int) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&b.mem[off])), futexWake, 1<<30, 0, 0, 0)
}

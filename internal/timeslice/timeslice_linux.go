//go:build linux && (amd64 || arm64)

package timeslice

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// attr is the kernel's struct sched_attr, as far as its first version
// (SCHED_ATTR_SIZE_VER0, 48 bytes) goes.
type attr struct {
	size     uint32
	policy   uint32
	flags    uint64
	nice     int32
	priority uint32
	runtime  uint64 // for a fair-scheduled thread: the slice asked for (ns)
	deadline uint64
	period   uint64
}

const (
	schedOther      = 0 // SCHED_NORMAL
	flagResetOnFork = 1 // SCHED_FLAG_RESET_ON_FORK
)

// done holds, by thread id modulo its length, the threads already asked
// for: a thread that waits again (every message) costs one gettid, not
// two system calls. A slot taken by another thread is taken over. Thread
// ids are reused only after the kernel has gone through its whole range.
var done [256]atomic.Int32

// Shorten asks for the calling thread's slice to be Slice, once per
// thread. It leaves alone a thread scheduled otherwise than by the fair
// scheduler's default policy (a real-time or batch policy a user chose,
// `chrt`) and keeps its nice value (a child it starts from then on gets
// the default scheduling, and a nice value below 0 not at all: the kernel's
// SCHED_FLAG_RESET_ON_FORK); a kernel that does not know the request
// (before 6.12) ignores it.
func Shorten() {
	tid := int32(syscall.Gettid())
	slot := &done[uint32(tid)%uint32(len(done))]
	if slot.Load() == tid {
		return
	}
	slot.Store(tid)
	var a attr
	if _, _, e := syscall.Syscall6(sysSchedGetattr, 0, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0, 0, 0); e != 0 {
		return
	}
	if a.policy != schedOther || a.runtime == Slice {
		return
	}
	// The kernel reads every field: the ones not read back above stay
	// zero (another flag would be a clamp, a priority a real-time policy).
	// A thread or process this one starts (an exec model, the FMU's host)
	// gets the default slice, not this one: the request is for the waits
	// of this thread, and a program of the user's is left as it would be
	// otherwise.
	b := attr{size: uint32(unsafe.Sizeof(a)), policy: schedOther, flags: flagResetOnFork, nice: a.nice, runtime: Slice}
	syscall.Syscall(sysSchedSetattr, 0, uintptr(unsafe.Pointer(&b)), 0)
}

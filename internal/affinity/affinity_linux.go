//go:build linux && (amd64 || arm64)

package affinity

import (
	"runtime"
	"syscall"
	"unsafe"
)

// mask is a set of processors as sched_setaffinity takes it: 1024, the
// most a kernel built with the common configurations has.
type mask [16]uint64

func (m *mask) has(n uint32) bool { return n < 64*uint32(len(m)) && m[n/64]&(1<<(n%64)) != 0 }

// Current is the processor the calling thread runs on (it may move at
// any time after: the answer is a place to follow, not a promise).
func Current() Processor {
	var cpu uint32
	if _, _, e := syscall.RawSyscall(sysGetcpu, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return 0
	}
	return Processor(cpu + 1)
}

// Follower moves the thread that calls Follow: its zero value is a thread
// where it may run as it was started.
type Follower struct {
	at   Processor // what the last Follow asked for
	held bool      // the thread is locked to its goroutine and held on one processor
	own  mask      // where the thread may run otherwise (taken when first held)
}

// Follow holds the calling goroutine's thread on p, the processor the
// other thread runs on, or, for 0, lets it run where it could before. The
// goroutine stays locked to its thread while held (runtime.LockOSThread):
// an affinity belongs to a thread, not to a goroutine. A processor the
// thread may not use (taskset, a cgroup's cpuset) is not followed: the
// thread then runs where it may. Follow reports whether the thread is held
// on p; it costs nothing while p does not change.
func (f *Follower) Follow(p Processor) bool {
	if p == f.at {
		return f.held
	}
	f.at = p
	if p == 0 {
		f.release()
		return false
	}
	if !f.held {
		runtime.LockOSThread()
		if sched(syscall.SYS_SCHED_GETAFFINITY, &f.own) != nil {
			runtime.UnlockOSThread()
			return false
		}
	}
	n := uint32(p - 1)
	var one mask
	if f.own.has(n) {
		one[n/64] = 1 << (n % 64)
	}
	if !f.own.has(n) || sched(syscall.SYS_SCHED_SETAFFINITY, &one) != nil {
		f.held = true // so that release puts it back
		f.release()
		return false
	}
	f.held = true
	return true
}

// release lets a held thread run where it could before, and unlocks it.
func (f *Follower) release() {
	if !f.held {
		return
	}
	sched(syscall.SYS_SCHED_SETAFFINITY, &f.own)
	f.held = false
	runtime.UnlockOSThread()
}

func sched(call uintptr, m *mask) error {
	if _, _, e := syscall.RawSyscall(call, 0, unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m))); e != 0 {
		return e
	}
	return nil
}

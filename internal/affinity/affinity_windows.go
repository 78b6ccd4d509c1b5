package affinity

import (
	"runtime"
	"syscall"
	"unsafe"
)

var (
	kernel32                        = syscall.NewLazyDLL("kernel32.dll")
	procGetCurrentProcessorNumberEx = kernel32.NewProc("GetCurrentProcessorNumberEx")
	procGetThreadGroupAffinity      = kernel32.NewProc("GetThreadGroupAffinity")
	procSetThreadGroupAffinity      = kernel32.NewProc("SetThreadGroupAffinity")
)

// currentThread is GetCurrentThread's pseudo handle, (HANDLE)-2.
const currentThread = ^uintptr(1)

// processorNumber is PROCESSOR_NUMBER.
type processorNumber struct {
	group    uint16
	number   uint8
	reserved uint8
}

// groupAffinity is GROUP_AFFINITY.
type groupAffinity struct {
	mask     uintptr
	group    uint16
	reserved [3]uint16
}

// Current is the processor the calling thread runs on (it may move at
// any time after: the answer is a place to follow, not a promise).
func Current() Processor {
	var pn processorNumber
	syscall.SyscallN(procGetCurrentProcessorNumberEx.Addr(), uintptr(unsafe.Pointer(&pn)))
	return Processor(64*uint32(pn.group) + uint32(pn.number) + 1)
}

// Follower moves the thread that calls Follow: its zero value is a thread
// where it may run as it was started.
type Follower struct {
	at   Processor     // what the last Follow asked for
	held bool          // the thread is locked to its goroutine and held on one processor
	own  groupAffinity // where the thread may run otherwise (taken when first held)
}

// Follow holds the calling goroutine's thread on p, the processor the
// other thread runs on, or, for 0, lets it run where it could before. The
// goroutine stays locked to its thread while held (runtime.LockOSThread):
// an affinity belongs to a thread, not to a goroutine. A processor the
// thread may not use (another processor group, a job's limits) is not
// followed: the thread then runs where it may. Follow reports whether the
// thread is held on p; it costs nothing while p does not change.
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
		if r, _, _ := syscall.SyscallN(procGetThreadGroupAffinity.Addr(), currentThread, uintptr(unsafe.Pointer(&f.own))); r == 0 {
			runtime.UnlockOSThread()
			return false
		}
	}
	group, bit := uint16((p-1)/64), uintptr(1)<<((p-1)%64)
	one := groupAffinity{mask: bit, group: group}
	allowed := group == f.own.group && f.own.mask&bit != 0
	if !allowed || !set(&one) {
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
	set(&f.own)
	f.held = false
	runtime.UnlockOSThread()
}

func set(a *groupAffinity) bool {
	r, _, _ := syscall.SyscallN(procSetThreadGroupAffinity.Addr(), currentThread, uintptr(unsafe.Pointer(a)), 0)
	return r != 0
}

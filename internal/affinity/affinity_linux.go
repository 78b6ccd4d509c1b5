//go:build linux && (amd64 || arm64)

package affinity

import (
	"syscall"
	"unsafe"
)

// Current is the processor the calling thread runs on (it may move at
// any time after: the answer is a place to follow, not a promise).
func Current() Processor {
	var cpu uint32
	if _, _, e := syscall.RawSyscall(sysGetcpu, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return 0
	}
	return Processor(cpu + 1)
}

// mask is a set of processors as sched_setaffinity takes it: 1024, the
// most a kernel built with the common configurations has.
type mask [16]uint64

func (m *mask) allows(p Processor) bool {
	n := uint32(p - 1)
	return n < 64*uint32(len(m)) && m[n/64]&(1<<(n%64)) != 0
}

// get reads the calling thread's processors into m; set makes m its
// processors.
func (m *mask) get() bool { return sched(syscall.SYS_SCHED_GETAFFINITY, m) == nil }
func (m *mask) set() bool { return sched(syscall.SYS_SCHED_SETAFFINITY, m) == nil }

// holdOn makes p the calling thread's only processor.
func holdOn(p Processor) bool {
	var one mask
	n := uint32(p - 1)
	one[n/64] = 1 << (n % 64)
	return one.set()
}

func sched(call uintptr, m *mask) error {
	if _, _, e := syscall.RawSyscall(call, 0, unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m))); e != 0 {
		return e
	}
	return nil
}

package affinity

import (
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

// Current is the processor the calling thread runs on (it may move at
// any time after: the answer is a place to follow, not a promise).
func Current() Processor {
	var pn processorNumber
	syscall.SyscallN(procGetCurrentProcessorNumberEx.Addr(), uintptr(unsafe.Pointer(&pn)))
	return Processor(64*uint32(pn.group) + uint32(pn.number) + 1)
}

// mask is GROUP_AFFINITY: processors of one group.
type mask struct {
	bits     uintptr
	group    uint16
	reserved [3]uint16
}

func (m *mask) allows(p Processor) bool {
	return uint16((p-1)/64) == m.group && m.bits&(1<<((p-1)%64)) != 0
}

// get reads the calling thread's processors into m; set makes m its
// processors.
func (m *mask) get() bool {
	r, _, _ := syscall.SyscallN(procGetThreadGroupAffinity.Addr(), currentThread, uintptr(unsafe.Pointer(m)))
	return r != 0
}

func (m *mask) set() bool {
	r, _, _ := syscall.SyscallN(procSetThreadGroupAffinity.Addr(), currentThread, uintptr(unsafe.Pointer(m)), 0)
	return r != 0
}

// holdOn makes p the calling thread's only processor.
func holdOn(p Processor) bool {
	one := mask{bits: 1 << ((p - 1) % 64), group: uint16((p - 1) / 64)}
	return one.set()
}

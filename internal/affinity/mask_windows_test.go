package affinity

import (
	"syscall"
	"testing"
	"unsafe"
)

// threadMask is the calling thread's processors it may run on, in its
// group.
func threadMask(t *testing.T) uint64 {
	t.Helper()
	var a groupAffinity
	if r, _, err := syscall.SyscallN(procGetThreadGroupAffinity.Addr(), currentThread, uintptr(unsafe.Pointer(&a))); r == 0 {
		t.Fatalf("GetThreadGroupAffinity: %v", err)
	}
	return uint64(a.mask)
}

func setThreadMask(t *testing.T, bits uint64) {
	t.Helper()
	if !set(&groupAffinity{mask: uintptr(bits)}) {
		t.Fatal("SetThreadGroupAffinity failed")
	}
}

package affinity

import "testing"

// threadMask is the calling thread's processors it may run on, in its
// group.
func threadMask(t *testing.T) uint64 {
	t.Helper()
	var m mask
	if !m.get() {
		t.Fatal("GetThreadGroupAffinity failed")
	}
	return uint64(m.bits)
}

func setThreadMask(t *testing.T, bits uint64) {
	t.Helper()
	if m := (mask{bits: uintptr(bits)}); !m.set() {
		t.Fatal("SetThreadGroupAffinity failed")
	}
}

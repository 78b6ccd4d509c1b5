//go:build linux && (amd64 || arm64)

package affinity

import "testing"

// threadMask is the calling thread's first 64 processors it may run on.
func threadMask(t *testing.T) uint64 {
	t.Helper()
	var m mask
	if !m.get() {
		t.Fatal("sched_getaffinity failed")
	}
	return m[0]
}

func setThreadMask(t *testing.T, bits uint64) {
	t.Helper()
	if m := (mask{bits}); !m.set() {
		t.Fatal("sched_setaffinity failed")
	}
}

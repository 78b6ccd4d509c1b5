//go:build linux && (amd64 || arm64)

package affinity

import (
	"syscall"
	"testing"
)

// threadMask is the calling thread's first 64 processors it may run on.
func threadMask(t *testing.T) uint64 {
	t.Helper()
	var m mask
	if err := sched(syscall.SYS_SCHED_GETAFFINITY, &m); err != nil {
		t.Fatalf("sched_getaffinity: %v", err)
	}
	return m[0]
}

func setThreadMask(t *testing.T, bits uint64) {
	t.Helper()
	if err := sched(syscall.SYS_SCHED_SETAFFINITY, &mask{bits}); err != nil {
		t.Fatalf("sched_setaffinity: %v", err)
	}
}

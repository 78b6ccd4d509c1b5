//go:build linux && (amd64 || arm64)

package timeslice

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func get(t *testing.T) attr {
	t.Helper()
	var a attr
	if _, _, e := syscall.Syscall6(sysSchedGetattr, 0, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0, 0, 0); e != 0 {
		t.Fatalf("sched_getattr: %v", e)
	}
	return a
}

// onThread runs f on a thread of its own, which ends with it: what f does
// to its thread's scheduling stays there.
func onThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(done)
		f()
	}()
	<-done
}

// needSlices skips where the kernel takes no slice request for a fair
// thread (before Linux 6.12).
func needSlices(t *testing.T) {
	var u syscall.Utsname
	syscall.Uname(&u)
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	f := strings.FieldsFunc(string(rel), func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		t.Skipf("kernel release %q", rel)
	}
	major, _ := strconv.Atoi(f[0])
	minor, _ := strconv.Atoi(f[1])
	if major < 6 || major == 6 && minor < 12 {
		t.Skipf("Linux %s takes no slice request for a fair thread (6.12 does)", rel)
	}
}

// sliceOf reads a process's slice (ns) from /proc.
func sliceOf(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/sched", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "se.slice" {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("se.slice %q", v)
			}
			return n
		}
	}
	t.Skip("/proc/PID/sched shows no se.slice here")
	return 0
}

func TestShorten(t *testing.T) {
	needSlices(t)
	tests := []struct {
		name string
		nice int // set on the thread first
	}{
		{name: "a thread as started"},
		{name: "a niced thread keeps its nice value", nice: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after, again attr
			onThread(func() {
				if tt.nice != 0 {
					if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), tt.nice); err != nil {
						t.Errorf("setpriority: %v", err)
						return
					}
				}
				before = get(t)
				Shorten()
				after = get(t)
				Shorten() // a second time: nothing changes
				again = get(t)
			})
			if before.runtime == Slice {
				t.Fatalf("the thread had the short slice before Shorten: %+v", before)
			}
			if after.runtime != Slice || after.nice != int32(tt.nice) || after.policy != schedOther {
				t.Errorf("after Shorten: slice %d ns, nice %d, policy %d; want %d ns, nice %d, policy 0", after.runtime, after.nice, after.policy, Slice, tt.nice)
			}
			if again != after {
				t.Errorf("a second Shorten changed %+v to %+v", after, again)
			}
		})
	}
}

// A program started by a shortened thread (an exec model) runs with the
// kernel's default slice, as it would without beamconnect's request.
func TestShortenStopsAtChildren(t *testing.T) {
	needSlices(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program to start")
	}
	var own, child uint64
	onThread(func() {
		Shorten()
		own = get(t).runtime
		cmd := exec.Command(sleep, "10")
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		defer cmd.Wait()
		defer cmd.Process.Kill()
		child = sliceOf(t, cmd.Process.Pid)
	})
	if own != Slice {
		t.Fatalf("own slice %d", own)
	}
	if child == Slice {
		t.Errorf("the child runs with the short slice %d ns too", child)
	}
}

// A thread a user put under another policy (chrt) is left as it is.
func TestShortenLeavesARealTimeThreadAlone(t *testing.T) {
	needSlices(t)
	var after attr
	var setErr syscall.Errno
	onThread(func() {
		fifo := attr{size: uint32(unsafe.Sizeof(attr{})), policy: 1 /* SCHED_FIFO */, priority: 1}
		if _, _, setErr = syscall.Syscall(sysSchedSetattr, 0, uintptr(unsafe.Pointer(&fifo)), 0); setErr != 0 {
			return
		}
		Shorten()
		after = get(t)
	})
	if setErr != 0 {
		t.Skipf("no real-time policy here: %v", setErr)
	}
	if after.policy != 1 || after.priority != 1 {
		t.Errorf("Shorten changed a SCHED_FIFO thread: policy %d, priority %d", after.policy, after.priority)
	}
}

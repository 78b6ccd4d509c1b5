package models

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether the process pid runs.
func alive(pid int) bool {
	const synchronize = 0x00100000
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION|synchronize, false, uint32(pid))
	if err != nil {
		return false // no such process (any more)
	}
	defer syscall.CloseHandle(h)
	ev, _ := syscall.WaitForSingleObject(h, 0)
	return ev == syscall.WAIT_TIMEOUT
}

// waitGone waits up to 5 s for pid to end.
func waitGone(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return false
}

// childPids reads the pids exectest's spawn wrote, one a line, waiting for
// n of them.
func childPids(t *testing.T, file string, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		var ps []int
		for _, f := range strings.Fields(string(b)) {
			p, _ := strconv.Atoi(f)
			ps = append(ps, p)
		}
		if len(ps) >= n {
			return ps
		}
	}
	t.Fatalf("%s: fewer than %d pids", file, n)
	return nil
}

// What a running exec program started ends with the run: Close ends the
// program's whole tree, on Windows too. (The program does not end when its
// input closes, so Close has a running tree to end.)
func TestExecTreeEndsAtClose(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	m, p, log := execRig(t, []string{"spawn=" + file, "header", "answer=1 0 0 0", "sleep=1h"}, 1, nil)
	child := childPids(t, file, 1)[0]
	th, thE, _ := p.Find(1, "throttle")
	if _, ok := stepFor(m, p, 5*time.Millisecond, 10*time.Second, func(_, ins [][]float64) bool { return ins[th][thE] == 0 && m.Fault() == nil }); !ok {
		t.Fatalf("no answer\n%s", log)
	}
	if !alive(child) {
		t.Fatalf("the program's child (pid %d) is not running", child)
	}
	m.Close()
	if !waitGone(child) {
		if h, err := syscall.OpenProcess(syscall.PROCESS_TERMINATE, false, uint32(child)); err == nil {
			syscall.TerminateProcess(h, 1)
			syscall.CloseHandle(h)
		}
		t.Errorf("the child of the program (pid %d) still runs after Close", child)
	}
}

// A child the program left running when it ended ends too: before the
// program is started again, and at Close when the program ended as its
// input closed. Windows finds no tree of a program that has ended; only a
// Job object the program was started in does.
func TestExecLeftoversEnd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	m, p, log := execRig(t, []string{"spawn=" + file, "header", "answer=1 0 0 0", "read", "exit=3"}, 0.05, nil)
	first := childPids(t, file, 1)[0]
	stepFor(m, p, 5*time.Millisecond, 10*time.Second, func(_, _ [][]float64) bool { return m.Restarts() == 1 })
	if m.Restarts() != 1 {
		t.Fatalf("restarts %d\n%s", m.Restarts(), log)
	}
	if !waitGone(first) {
		t.Errorf("the child of the program that ended (pid %d) still runs after the restart", first)
	}
	// The program started again: it ends as its input closes at Close,
	// leaving its child behind.
	second := childPids(t, file, 2)[1]
	m.Close()
	if !waitGone(second) {
		t.Errorf("the child of the program (pid %d) still runs after Close", second)
	}
}

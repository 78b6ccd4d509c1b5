package program

import (
	"beamconnect/internal/proctree"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// What a running exec program started ends with the run: Close ends the
// program's whole tree, on Windows too. (The program does not end when its
// input closes, so Close has a running tree to end.)
func TestExecTreeEndsAtClose(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	m, p, log := execRig(t, []string{"spawn=" + file, "header", "answer=1 0 0 0", "sleep=1h"}, 1, nil)
	child := pids(t, file, 1)[0]
	th, thE, _ := p.Find(1, "throttle")
	if _, ok := stepFor(m, p, 5*time.Millisecond, 10*time.Second, func(_, ins [][]float64) bool { return ins[th][thE] == 0 && m.Fault() == nil }); !ok {
		t.Fatalf("no answer\n%s", log)
	}
	if !proctree.Alive(child) {
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
	first := pids(t, file, 1)[0]
	stepFor(m, p, 5*time.Millisecond, 10*time.Second, func(_, _ [][]float64) bool { return m.Restarts() == 1 })
	if m.Restarts() != 1 {
		t.Fatalf("restarts %d\n%s", m.Restarts(), log)
	}
	if !waitGone(first) {
		t.Errorf("the child of the program that ended (pid %d) still runs after the restart", first)
	}
	// The program started again: it ends as its input closes at Close,
	// leaving its child behind.
	second := pids(t, file, 2)[1]
	m.Close()
	if !waitGone(second) {
		t.Errorf("the child of the program (pid %d) still runs after Close", second)
	}
}

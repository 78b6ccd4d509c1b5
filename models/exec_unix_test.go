//go:build unix

package models

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/proctree"
)

// waitGone waits up to 2 s for pid to end.
func waitGone(pid int) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !proctree.Alive(pid) {
			return true
		}
	}
	return false
}

// pids reads the pids a script wrote, one a line, waiting for n of them.
func pids(t *testing.T, file string, n int) []int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
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

// What an exec program starts ends with it. At close the
// program ends on its own when its stdin closes; a child it left running
// (as a shell's background job) is killed with it. At a restart, the children
// of the program that ended go too. Before, both outlived beamconnect.
func TestExecChildrenEndWithTheProgram(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "pids")
	script := []string{"spawn=" + file, "header", "answer=1 0 0 0", "read", "exit=3"}
	m, p, log := execRig(t, script, 0.05, nil)
	first := pids(t, file, 1)[0]
	stepFor(m, p, 5*time.Millisecond, 3*time.Second, func(_, _ [][]float64) bool { return m.Restarts() == 1 })
	if m.Restarts() != 1 {
		t.Fatalf("restarts %d\n%s", m.Restarts(), log)
	}
	if !waitGone(first) {
		t.Errorf("the child of the program that ended (pid %d) still runs after the restart", first)
	}
	second := pids(t, file, 2)[1]
	m.Close()
	if !waitGone(second) {
		syscall.Kill(second, syscall.SIGKILL)
		t.Errorf("the child of the program (pid %d) still runs after Close", second)
	}
}

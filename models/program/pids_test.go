package program

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/internal/proctree"
)

// waitGone waits up to 5 s for pid to end.
func waitGone(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !proctree.Alive(pid) {
			return true
		}
	}
	return false
}

// pids reads the pids a program of exectest's wrote, one a line, waiting
// up to 10 s for n of them.
func pids(t *testing.T, file string, n int) []int {
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

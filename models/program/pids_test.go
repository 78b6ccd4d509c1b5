package program

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/internal/eventually"
	"beamconnect/internal/proctree"
)

// waitGone waits up to 5 s for pid to end. (Not this process's child:
// nothing tells of its end.)
func waitGone(pid int) bool {
	return eventually.True(5*time.Second, func() bool { return !proctree.Alive(pid) })
}

// pids reads the pids a program of exectest's wrote, one a line, waiting
// up to 10 s for n of them.
func pids(t *testing.T, file string, n int) []int {
	t.Helper()
	var ps []int
	if !eventually.True(10*time.Second, func() bool {
		b, _ := os.ReadFile(file)
		ps = ps[:0]
		for _, f := range strings.Fields(string(b)) {
			p, _ := strconv.Atoi(f)
			ps = append(ps, p)
		}
		return len(ps) >= n
	}) {
		t.Fatalf("%s: fewer than %d pids", file, n)
	}
	return ps
}

//go:build unix

package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// suspend stops process pid (SIGSTOP) as a debugger or a terminal's stop
// would; the function it returns lets it go on.
func suspend(t *testing.T, pid int) func() {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return func() { syscall.Kill(pid, syscall.SIGCONT) }
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		end := bytes.LastIndexByte(stat, ')')
		return end < 0 || end+2 >= len(stat) || stat[end+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

// killedSays is what the master's log says of the coupling's process
// killed.
const killedSays = "fmi2DoStep: beamconnect's coupling process was killed by signal 9 (Killed)"

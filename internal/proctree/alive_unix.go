//go:build unix

package proctree

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// Alive reports whether a process with this pid exists and has not ended
// (a zombie, ended but not yet reaped by its parent, is not alive).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	if runtime.GOOS == "linux" {
		// /proc/PID/stat: "pid (comm) S ...", the state after the last ')'.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] != 'Z' && b[i+2] != 'X'
		}
	}
	return true
}

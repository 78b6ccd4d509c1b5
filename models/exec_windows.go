//go:build windows

package models

import (
	"os/exec"
	"strconv"
)

func ownGroup(*exec.Cmd) {}

// killTree kills the running program and its descendants with taskkill's
// tree kill (part of every Windows), or the program alone if that fails.
// Windows finds descendants through their parent, so this works only
// while the program runs.
func killTree(cmd *exec.Cmd) {
	if exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid)).Run() != nil {
		cmd.Process.Kill()
	}
}

// killLeftovers does nothing on Windows: once the program has ended, what
// it started can no longer be told from other processes (that would take
// a job object, beyond the standard library).
func killLeftovers(*exec.Cmd) {}

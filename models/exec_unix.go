//go:build unix

package models

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the program in a process group of its own, so that
// killing the group also ends whatever it started (a shell's children),
// also after the program itself has ended.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killTree kills the running program and everything it started.
func killTree(cmd *exec.Cmd) {
	if syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) != nil {
		cmd.Process.Kill()
	}
}

// killLeftovers kills what the program started and left running when it
// ended: its process group outlives it while any member runs.
func killLeftovers(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

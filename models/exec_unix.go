//go:build unix

package models

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the program in a process group of its own, so that
// killing it also ends whatever it started (a shell's children).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) error {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return cmd.Process.Kill()
	}
	return nil
}

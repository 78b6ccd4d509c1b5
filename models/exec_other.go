//go:build !unix && !windows

package models

import "os/exec"

func ownGroup(*exec.Cmd) {}

func killTree(cmd *exec.Cmd) { cmd.Process.Kill() }

func killLeftovers(*exec.Cmd) {}

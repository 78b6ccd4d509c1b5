//go:build unix && !linux

package proctree

import "os/exec"

// startTied starts cmd. Without a parent-death signal, a program of ours
// watches its parent itself (EndWithParent); another program outlives a
// beamconnect that is killed (SIGKILL) rather than stopped.
func startTied(cmd *exec.Cmd, ours bool) error { return cmd.Start() }

func onParentDeath(int, func()) {}

func prepare() {}

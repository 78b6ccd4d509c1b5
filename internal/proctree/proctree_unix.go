//go:build unix

package proctree

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

type sysTree struct{}

func (t *Tree) start(ours bool) error {
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A group of its own: the terminal's Ctrl-C (SIGINT to the foreground
	// group) passes it by, and killing the group reaches what it started,
	// also after the program itself has ended.
	t.cmd.SysProcAttr.Setpgid = true
	return startTied(t.cmd, ours)
}

// kill kills the program's process group. The group's id is the
// program's pid, which the system does not give to another process while
// the group has members.
func (t *Tree) kill() {
	if syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL) != nil && !t.waited && t.cmd.ProcessState == nil {
		t.cmd.Process.Kill()
	}
}

func (t *Tree) release() {}

// EndWithParent is for a program started by StartOurs that runs foreign
// code (the FMU host): the terminal's signals (SIGINT, SIGQUIT, SIGTSTP,
// SIGHUP) are ignored (on Linux, SIGTERM too while its parent lives:
// stopping it is the parent's to order), and when its parent ends, the
// program ends with everything it started, even while its main goroutine
// is stuck in a spinning C call. The parent is watched twice: the
// parent-death signal StartOurs arranges (Linux) and a look at the
// parent's pid every 250 ms (every system, and the only way where there is
// no such signal).
func EndWithParent() {
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGHUP)
	parent := os.Getppid()
	end := func() {
		// Everything it started is in its group, if it leads one (started
		// by Start); kill(0) is the caller's own group.
		if syscall.Getpgrp() == os.Getpid() {
			syscall.Kill(0, syscall.SIGKILL)
		}
		os.Exit(1)
	}
	if parent == 1 {
		end() // orphaned before it could watch
	}
	onParentDeath(parent, end)
	go func() {
		for range time.Tick(250 * time.Millisecond) {
			if os.Getppid() != parent {
				end()
			}
		}
	}()
	if os.Getppid() != parent { // the parent died while the watches were set up
		end()
	}
}

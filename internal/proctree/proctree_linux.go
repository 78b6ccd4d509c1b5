package proctree

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
)

// startTied starts cmd with a parent-death signal: the kernel sends the
// child SIGKILL when beamconnect dies, however it dies (Go's fork checks
// that the parent is still alive after setting it, so a parent that died
// during the fork is caught too). A program of ours gets SIGTERM instead,
// which EndWithParent handles by killing its whole group; until it does,
// SIGTERM's default action ends it as surely. (The signal is set for the
// thread that runs the program's main, at the fork: a program cannot
// change it later from another thread, which is why it is chosen here.)
//
// The signal follows the thread that forked the child, not the process:
// a child forked by a thread that later exits (a goroutine locked to its
// thread that ends without unlocking) would be killed then. So every
// child is forked by one goroutine locked to its thread for the life of
// the process.
func startTied(cmd *exec.Cmd, ours bool) error {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if ours {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
	prepare()
	done := make(chan error)
	forks <- func() { done <- cmd.Start() }
	return <-done
}

// forks runs on the thread every child is forked from.
var forks = make(chan func())

var forker sync.Once

// prepare starts the thread every child is forked from, locked to its
// goroutine for the life of the process, if it is not started yet.
func prepare() {
	forker.Do(func() {
		go func() {
			runtime.LockOSThread() // for ever: this thread must not exit
			for f := range forks {
				f()
			}
		}()
	})
}

// onParentDeath handles the parent-death signal of a program started by
// StartOurs, SIGTERM: end is called once the parent is gone (the kernel
// has given the program its new parent by the time the signal comes). A
// SIGTERM while the parent lives (a service manager stopping both, a
// kill) is left to the parent, which stops the program as it stops
// itself: a stop must not read as a crashed program.
func onParentDeath(parent int, end func()) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		for range term {
			if os.Getppid() != parent {
				end()
			}
		}
	}()
}

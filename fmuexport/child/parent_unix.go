//go:build unix

package child

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// ignoreTerminal leaves the terminal's signals to the master: the shim
// started the child in a process group of its own, and a master that a
// Ctrl-C ends ends the child through its pipe.
func ignoreTerminal() {
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGHUP)
}

// watchParent calls gone when the master's process is gone: its pid is
// no longer the child's parent (a process that forked without exec may
// keep the pipe open), or the child is told to stop (SIGTERM: a service
// manager ending the master's group). The pipe's end is the main watch.
func watchParent(gone func()) {
	parent := os.Getppid()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-term:
				gone()
				return
			case <-tick.C:
				if os.Getppid() != parent {
					gone()
					return
				}
			}
		}
	}()
}

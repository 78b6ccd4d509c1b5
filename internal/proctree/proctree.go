// Package proctree starts child processes whose lifetime is bound to
// beamconnect's: a program it runs (an exec model's, the FMU host) and
// everything that program starts in turn end with the run, whether it
// ends normally, after a crash of the program, or when beamconnect itself
// is killed.
//
// A Tree is one started program and its descendants:
//
//   - the terminal's signals pass it by: Ctrl-C in a terminal goes to the
//     whole foreground process group, and stopping a child is beamconnect's
//     to order, not the terminal's (unix: a process group of its own;
//     Windows: a new process group, which has Ctrl-C disabled);
//   - Kill ends the program and everything it started, and Wait, once the
//     program has exited, ends what it left running (a helper still
//     holding its pipes open would otherwise keep its reader waiting);
//   - when beamconnect dies, the program dies too (Linux: a parent-death
//     signal; Windows: a job object that kills every process in it when
//     beamconnect's handle to it closes, which the system does when
//     beamconnect ends, however it ends). On other systems a program of
//     ours (the FMU host) watches its parent itself: EndWithParent.
package proctree

import (
	"os/exec"
	"sync"
)

// Prepare readies the package to start children: on Linux it starts the
// thread every child is forked from (see startTied), which the first child
// started starts otherwise; elsewhere it does nothing. Nothing happens on
// import. A program whose first child may be started inside a
// testing/synctest bubble calls it before, outside: that thread's
// goroutine, started in a bubble, would belong to it, and so would every
// goroutine a child's start makes.
func Prepare() { prepare() }

// Tree is a started program and everything it starts.
type Tree struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	waited bool // Wait has returned: the program is reaped, its leftovers killed
	sys    sysTree
}

// Start starts cmd (configured, not yet started) as the root of a Tree.
// It sets cmd.SysProcAttr's fields for the purpose, keeping the others.
func Start(cmd *exec.Cmd) (*Tree, error) { return start(cmd, false) }

// StartOurs is Start for a program of ours that calls EndWithParent (the
// FMU host): when beamconnect dies, the program is asked to end rather
// than killed outright (Linux: SIGTERM, not SIGKILL, as its parent-death
// signal), so that it can end what it started before it goes.
func StartOurs(cmd *exec.Cmd) (*Tree, error) { return start(cmd, true) }

func start(cmd *exec.Cmd, ours bool) (*Tree, error) {
	t := &Tree{cmd: cmd}
	if err := t.start(ours); err != nil {
		return nil, err
	}
	return t, nil
}

// Pid is the program's process id.
func (t *Tree) Pid() int { return t.cmd.Process.Pid }

// Kill kills the program and everything it started, at once. It may be
// called any number of times, from any goroutine; after Wait has returned
// it does nothing (Wait has already ended everything).
func (t *Tree) Kill() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.waited {
		t.kill()
	}
}

// Wait waits for the program to exit (as exec.Cmd.Wait does), then kills
// whatever it left running, and returns how the program ended.
func (t *Tree) Wait() error {
	err := t.cmd.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kill()
	t.release()
	t.waited = true
	return err
}

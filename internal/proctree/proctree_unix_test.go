//go:build unix

package proctree

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// interruptSelf does nothing on unix: the test sends the interrupt to
// the parent's process group, as a terminal does.
func interruptSelf() {}

// Ctrl-C in a terminal sends SIGINT to the whole foreground process
// group. The parent (in a group of its own here, as a terminal's job is)
// gets it; the program it started through Start does not.
func TestTerminalInterruptPassesBy(t *testing.T) {
	parent := role("parent")
	parent.Env = append(parent.Env, "PROCTREE_TEST_THEN=wait")
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := parent.StdoutPipe()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	r := bufio.NewReader(out)
	said(t, r, "spawner")
	said(t, r, "helper")
	syscall.Kill(-parent.Process.Pid, syscall.SIGINT)
	if !aliveAfterInterrupt(t, r) {
		t.Error("the terminal's interrupt reached the program")
	}
	parent.Wait()
}

// A program run through Start leads its own process group.
func TestOwnGroup(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCTREE_TEST_ROLE=sleeper")
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Wait()
	defer tree.Kill()
	if pg, err := syscall.Getpgid(tree.Pid()); err != nil || pg != tree.Pid() {
		t.Errorf("process group %d (%v), want its own, %d", pg, err, tree.Pid())
	}
}

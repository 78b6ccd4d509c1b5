package proctree

import (
	"bufio"
	"syscall"
	"testing"

	"golang.org/x/sys/windows"
)

// interruptSelf presses Ctrl-C on the parent's console, as a user at it
// would: every process attached to it gets CTRL_C_EVENT.
func interruptSelf() { windows.GenerateConsoleCtrlEvent(windows.CTRL_C_EVENT, 0) }

// Ctrl-C on the console reaches every process attached to it. The parent
// (on a console of its own here) gets it; the program it started through
// Start, in a new process group with Ctrl-C disabled, does not.
func TestConsoleInterruptPassesBy(t *testing.T) {
	parent := role("parent")
	parent.Env = append(parent.Env, "PROCTREE_TEST_THEN=wait")
	parent.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_CONSOLE}
	out, _ := parent.StdoutPipe()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	r := bufio.NewReader(out)
	said(t, r, "spawner")
	if !aliveAfterInterrupt(t, r) {
		t.Error("the console's Ctrl-C reached the program")
	}
	parent.Wait()
}

// Package wine tells a test whether it runs under Wine, the Windows
// compatibility layer CI runs the Windows build's tests with, and skips a
// test for something Wine does not do as Windows does. A test skipped here
// runs on Windows itself; anything that fails because Windows differs from
// Linux is a defect, not a skip.
package wine

import (
	"os"
	"testing"
)

// A Limit is a way Wine differs from Windows that a test cannot work
// around: its text says what Wine does and why the test cannot run.
type Limit string

// The limits tests skip for. docs/development.md lists them with the tests
// they skip.
const (
	// Symlinks: CreateSymbolicLinkW returns success and makes nothing, so
	// a test of symlinked configs has no symlink to follow.
	Symlinks Limit = "Wine's CreateSymbolicLink reports success but makes no link"
	// Loopback: Wine carries every overlapped socket operation through
	// wineserver, so a loopback UDP round trip takes 1–3 ms (some 20 µs on
	// Windows) and a free-running coupling makes a few hundred messages a
	// second, not thousands.
	Loopback Limit = "a loopback UDP round trip takes 1–3 ms under Wine (wineserver carries each socket operation), so a free-running coupling makes hundreds of messages a second, not thousands"
	// Pipes: a line through a pipe between two processes takes tens of
	// milliseconds, at times hundreds, under Wine on a loaded machine.
	Pipes Limit = "a line through a pipe between two processes takes tens to hundreds of milliseconds now and then under Wine on a loaded machine"
	// Wakeups: waking another process (an FMU's host, through its event)
	// goes through wineserver: tens of milliseconds a step, and on a
	// loaded machine now and then a step held past BeamNG's 2 s wait for a
	// reply, a stall, which is a fault.
	Wakeups Limit = "waking another process (an FMU's host) goes through wineserver: on a loaded machine a step now and then takes longer than BeamNG's 2 s wait for a reply, a stall, which is a fault"
	// CtrlBreak: GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, group) returns
	// success, and the process group never sees the event.
	CtrlBreak Limit = "Wine does not deliver CTRL_BREAK_EVENT to a process group"
)

// Running says whether this process runs under Wine.
func Running() bool { return Version() != "" }

// Skip skips the test under Wine, naming the limit; elsewhere it does
// nothing.
func Skip(t testing.TB, l Limit) {
	t.Helper()
	if v := Version(); v != "" {
		t.Skipf("Wine %s limitation: %s", v, l)
	}
}

// Symlink makes newname a symbolic link to oldname for a test, or skips
// the test where none can be made: on Windows that takes Developer Mode or
// an administrator, and Wine makes none at all.
func Symlink(t testing.TB, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if _, err := os.Lstat(newname); err != nil {
		Skip(t, Symlinks)
		t.Fatalf("the symbolic link %s is not there: %v", newname, err)
	}
}

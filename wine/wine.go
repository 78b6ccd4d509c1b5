// Package wine tells a test whether it runs under Wine, the Windows
// compatibility layer CI runs the Windows build's tests with, and skips a
// test for something Wine does not do as Windows does. A test skipped here
// runs on Windows itself; anything that fails because Windows differs from
// Linux is a defect, not a skip.
package wine

import "testing"

// A Limit is a way Wine differs from Windows that a test cannot work
// around: its text says what Wine does and why the test cannot run.
type Limit string

// The limits tests skip for. docs/development.md lists them with the tests
// they skip.
const (
	// Symlinks: CreateSymbolicLinkW returns success and makes nothing, so
	// a test of symlinked configs has no symlink to follow.
	Symlinks Limit = "Wine's CreateSymbolicLink reports success but makes no link"
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

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Colour goes only to a console: not to a file, nor to NUL, which Windows
// counts as a character device as it does a console.
func TestColourOnlyOnAConsole(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if fi, err := null.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Logf("NUL: %v, %v (not a character device here)", fi, err)
	}
	for _, f := range []*os.File{file, null} {
		if isTerminal(f) {
			t.Errorf("%s: taken for a console", f.Name())
		}
	}
	// The console this test runs in, if it has one (CI's Wine run gives it
	// a terminal): colours on, and on for good.
	con, err := os.OpenFile("CONOUT$", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no console here: %v", err)
	}
	defer con.Close()
	if !isTerminal(con) || !isTerminal(con) {
		t.Error("the console (CONOUT$) does not take colours")
	}
}

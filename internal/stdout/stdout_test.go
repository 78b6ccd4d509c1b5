package stdout

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// The test binary, with STDOUT_TEST_ROLE=divert, is a program that loads
// foreign code: it diverts, then writes through every way foreign code
// has to the standard output, and through os.Stdout as Go code does, as
// it is now and as a part of the program took it before (a server handed
// os.Stdout at its start, as the FMU host is).
func TestMain(m *testing.M) {
	if os.Getenv("STDOUT_TEST_ROLE") != "divert" {
		os.Exit(m.Run())
	}
	before := loadForeign(os.Getenv("STDOUT_TEST_BEFORE")) // C runtimes already running when Divert comes
	taken := os.Stdout
	if err := Divert(); err != nil {
		fmt.Fprintln(os.Stderr, "divert:", err)
		os.Exit(1)
	}
	Divert() // again: no harm
	// Collect garbage: the original os.Stdout must not be, nor closed
	// with it (it is fd 1, what foreign code writes to).
	runtime.GC()
	runtime.GC()
	writeForeign(before)
	fmt.Fprintln(taken, "taken before")
	fmt.Fprintln(os.Stdout, "own")
	os.Exit(0)
}

// What foreign code writes to the standard output goes to stderr; the
// program's own output (os.Stdout) stays the standard output, with nothing
// else in it: whichever C runtimes were running when Divert came, in
// whatever order they were loaded (loadOrders).
func TestDivert(t *testing.T) {
	for _, before := range loadOrders {
		t.Run("before: "+before, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "STDOUT_TEST_ROLE=divert", "STDOUT_TEST_BEFORE="+before)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			if out.String() != "taken before\nown\n" {
				t.Errorf("stdout %q, want only the program's own output", out.String())
			}
			for _, w := range foreignWrites {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q, written by foreign code to the standard output:\n%s", w, errOut.String())
				}
			}
		})
	}
}

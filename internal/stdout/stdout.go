// Package stdout keeps the program's standard output to itself when it
// loads foreign code that may print (an FMU's binary: a debugging printf,
// a vendor's banner). Such text would land in whatever the program writes
// to stdout: the FMU host's binary frames, run --json's summary.
//
// Keep makes the split: os.Stdout becomes a private copy of the standard
// output (on unix a duplicate of fd 1, on Windows of the standard output
// handle), which Go code goes on writing to as before. Divert then points
// what foreign code writes to, fd 1 (and on Windows the process's
// standard output handle and the C runtimes' fd 1), at stderr: what the
// FMU prints reaches the log, and the program's own output stays clean.
// Nothing happens on import: a program calls Keep at its start, and
// Divert before it loads foreign code (Divert keeps first if Keep was not
// called).
package stdout

import (
	"os"
	"sync"
)

var kept struct {
	once sync.Once
	// original is os.Stdout as the program started, fd 1. It must stay
	// referenced: a File that is garbage collected closes its
	// descriptor, and a closed fd 1 would swallow what foreign code
	// prints, or, reused by the next file opened, send it there.
	original *os.File
}

// Keep makes os.Stdout a private copy of the standard output. It changes
// the *os.File os.Stdout points to in place, so every part of the program
// that took os.Stdout before, such as a writer handed to a server, writes
// to the copy too. If no copy can be made (no standard output at all) it
// leaves os.Stdout as it is. Calling it again does nothing more.
func Keep() {
	kept.once.Do(func() {
		f := keep()
		if f == nil {
			return
		}
		kept.original = new(os.File)
		*kept.original = *os.Stdout
		*os.Stdout = *f
	})
}

// Divert points the process's standard output (fd 1; on Windows also the
// standard output handle and the C runtimes' fd 1) at its standard error,
// for the rest of the process: call it before loading code that may
// print. The program's own output, os.Stdout, is kept first (Keep) and is
// not affected. Calling it again does nothing more.
func Divert() error {
	Keep()
	return divert()
}

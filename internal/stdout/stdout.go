// Package stdout keeps the program's standard output to itself when it
// loads foreign code that may print (an FMU's binary: a debugging printf,
// a vendor's banner). Such text would land in whatever the program writes
// to stdout: the FMU host's binary frames, run --json's summary.
//
// Importing the package is enough to make the split: its initialisation
// makes os.Stdout a private copy of the standard output (on unix a
// duplicate of fd 1, on Windows of the standard output handle), which Go
// code goes on writing to as before. Divert then points what foreign code
// writes to, fd 1 (and on Windows the process's standard output handle and
// the C runtimes' fd 1), at stderr: what the FMU prints reaches the log,
// and the program's own output stays clean.
package stdout

import "os"

// Own is the program's own standard output, the copy made at start (the
// same file as os.Stdout, which is set to it). If no copy could be made
// (no standard output at all) it is the original.
var Own = os.Stdout

// original is os.Stdout as the program started, fd 1. It must stay
// referenced: a File that is garbage collected closes its descriptor,
// and a closed fd 1 would swallow what foreign code prints, or, reused
// by the next file opened, send it there.
var original = os.Stdout

func init() {
	if f := keep(); f != nil {
		Own = f
		os.Stdout = f
	}
}

// Divert points the process's standard output (fd 1; on Windows also the
// standard output handle and the C runtimes' fd 1) at its standard error,
// for the rest of the process: call it before loading code that may
// print. The program's own output, Own, is not affected. Calling it again
// does nothing more.
func Divert() error { return divert() }

// Package sighup catches SIGHUP from the moment the program's own code
// starts: importing it is enough. SIGHUP's default action ends a process,
// and a terminal that closes, an ssh session that drops or a service
// manager's reload sends it; a run that dies of it leaves BeamNG with the
// last controls and no summary.
//
// It does its work in its package initialisation, not in main's: Go
// initialises a program's packages before main's variables, and some take
// tens of milliseconds (a JSON Schema library compiles its meta-schemas),
// all of it time in which SIGHUP would kill the program. This package
// needs only os/signal, so it is initialised among the first: what
// remains is the time before any Go code runs (the kernel's exec, the
// dynamic loader, the runtime's own start), which no Go code can close.
// docs/reliability.md gives the measured size of both windows.
package sighup

import (
	"os"
	"os/signal"
	"syscall"
)

// Caught receives SIGHUP from the program's first moment to its last. Its
// buffer keeps one, so a burst reads as one.
var Caught = make(chan os.Signal, 1)

func init() { signal.Notify(Caught, syscall.SIGHUP) }

// Command beamconnect couples a controller or model to BeamNG.tech's
// tight-coupling UDP interface, configured with VS Connect S-function JSON.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

// hangups is SIGHUP, caught from the program's first moment (package
// initialisation, before main): its default action would end a run before
// its summary, leaving BeamNG with the last controls. run reloads the
// config on it; other commands ignore it.
var hangups = func() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}()

func main() {
	os.Exit(run(os.Args[1:], env{
		stdout:      os.Stdout,
		stderr:      os.Stderr,
		lookupEnv:   os.LookupEnv,
		stderrIsTTY: isTerminal(os.Stderr),
	}))
}

// Command beamconnect couples a controller or model to BeamNG.tech's
// tight-coupling UDP interface, configured with VS Connect S-function JSON.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], env{
		stdout:      os.Stdout,
		stderr:      os.Stderr,
		lookupEnv:   os.LookupEnv,
		stderrIsTTY: isTerminal(os.Stderr),
	}))
}

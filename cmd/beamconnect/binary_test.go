package main

import (
	"os"
	"testing"

	"beamconnect/internal/testprog"
	"beamconnect/models/exectest"
)

// self is this program, built once per test run, for tests that need a
// real process (signals, a responder of its own).
var self = testprog.Program{Package: "."}

func binary(t *testing.T) string { return self.Path(t) }

func TestMain(m *testing.M) {
	// The exec tests' program is this binary too (exectest's scripts).
	exectest.Main()
	// The fmu model runs its FMU with os.Executable fmu-host: in the tests
	// that is this binary, which then is the host, as beamconnect is.
	if len(os.Args) > 1 && os.Args[1] == "fmu-host" {
		os.Exit(run(os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv}))
	}
	code := m.Run()
	self.Remove()
	os.Exit(code)
}

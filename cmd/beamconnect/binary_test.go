package main

import (
	"flag"
	"os"
	"testing"

	"beamconnect/internal/testprog"
	"beamconnect/internal/wine"
	"beamconnect/models/exectest"
)

// self is this program, built once per test run, for tests that need a
// real process (signals, a responder of its own).
var self = testprog.Program{Package: "."}

func binary(t *testing.T) string { return self.Path(t) }

// TestMain runs eight tests at a time unless -test.parallel says
// otherwise: most of them start a run, a BeamNG of their own or a browser
// and wait on it (BeamNG's 2 s timeouts, a paced second, a page's next
// frame), so one test per CPU left the cores idle most of the time. Under
// Wine the default stays: wineserver carries every socket operation of
// every process, and FMU hosts started at once there have failed to start.
func TestMain(m *testing.M) {
	registerFormats() // as main does
	// The exec tests' program is this binary too (exectest's scripts).
	exectest.Main()
	// The fmu model runs its FMU with os.Executable fmu-host, bench --load
	// its busy loops with bench-busy: in the tests that is this binary,
	// which then is the host or the loop, as beamconnect is.
	if len(os.Args) > 1 && (os.Args[1] == "fmu-host" || os.Args[1] == cmdBenchBusy.name) {
		os.Exit(run(os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv}))
	}
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && !wine.Running() {
		flag.Set("test.parallel", "8")
	}
	code := m.Run()
	self.Remove()
	os.Exit(code)
}

// parallelOffWine runs the test beside others, except under Wine: there a
// run paced at BeamNG's real time, beside other runs, has stalled for over
// a second (all their sockets go through one wineserver), which is
// BeamNG's silence to the coupling.
func parallelOffWine(t *testing.T) {
	if !wine.Running() {
		t.Parallel()
	}
}

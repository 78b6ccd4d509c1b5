package coupling

import (
	"flag"
	"os"
	"testing"

	"beamconnect/fmu/host"
	"beamconnect/internal/proctree"
	"beamconnect/models/exectest"
	"beamconnect/recording"
	"beamconnect/recording/mdf"
)

// TestMain lets the fault matrix's rows run six at a time: most of a row's
// time is spent waiting out BeamNG's 2 s timeouts, not on a CPU, and the
// default of one row per CPU makes the matrix take half a minute.
func TestMain(m *testing.M) {
	// The test binary is an FMU host too, as beamconnect is: an FMU model
	// runs os.Executable with the argument fmu-host.
	if len(os.Args) > 1 && os.Args[1] == "fmu-host" {
		os.Exit(host.Main(os.Stdin, os.Stdout, os.Stderr))
	}
	exectest.Main() // the exec models' program
	recording.Register(mdf.Format)
	// Exec models start their programs inside synctest bubbles too: the
	// thread they are forked from is started outside.
	proctree.Prepare()
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	switch {
	case testBusyPoll:
		// Each busy-polling coupling keeps a core busy: one at a time.
		flag.Set("test.parallel", "1")
	case !set:
		flag.Set("test.parallel", "6")
	}
	os.Exit(m.Run())
}

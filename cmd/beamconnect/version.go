package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"beamconnect/beamng"
	"beamconnect/runsetup"
)

var cmdVersion = &command{
	name:    "version",
	summary: "print beamconnect's version, the revision it was built from, and the BeamNG protocols it speaks",
	help: `Prints the module version (a release tag, or the pseudo-version Go derives
from the repository), the version-control revision the binary was built from
(with "modified" when the working tree had changes), the Go toolchain, and the
two BeamNG coupling protocols this build speaks. Quote it in a bug report.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		fs.Bool("json", false, "print the version as one JSON object")
		return versionCmd
	},
}

// buildInfo is what the binary knows of its own build, and the protocols
// it speaks.
type buildInfo struct {
	runsetup.Build
	Protocols []protocol `json:"protocols"`
}

type protocol struct {
	Name       string `json:"name"`
	Controller string `json:"beamng_controller"`
	Layout     string `json:"layout"`
}

// protocols are the two generations of BeamNG's coupling controller.
var protocols = []protocol{
	{"Gen 1", "vehicleSystemsCoupling", fmt.Sprintf("fixed: %d doubles from BeamNG, %d to it", beamng.StateLen, beamng.ControlLen)},
	{"Gen 2", "cosimulationCoupling", "from the Co-Simulation Signal Editor's CSV: 1 + its rows each way"},
}

// readBuildInfo is what bi says of the build (nil: nothing known).
func readBuildInfo(bi *debug.BuildInfo) buildInfo {
	return buildInfo{Build: runsetup.BuildOf(bi), Protocols: protocols}
}

func versionCmd(c *call) int {
	bi, _ := debug.ReadBuildInfo()
	b := readBuildInfo(bi)
	if c.json {
		writeJSON(c.stdout, b)
		return exitOK
	}
	printVersion(c.stdout, b)
	return exitOK
}

func printVersion(w io.Writer, b buildInfo) {
	fmt.Fprintf(w, "%s %s\n", programName, b.Version)
	switch {
	case b.Revision != "":
		var notes []string
		if b.RevisionTime != "" {
			notes = append(notes, b.RevisionTime)
		}
		if b.Modified {
			notes = append(notes, "modified")
		}
		rev := "  revision " + b.Revision
		if len(notes) > 0 {
			rev += " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintln(w, rev)
	default:
		fmt.Fprintln(w, "  revision unknown (not built from a repository)")
	}
	fmt.Fprintf(w, "  built with %s for %s\n", b.Go, b.Platform)
	fmt.Fprintln(w, "  BeamNG protocols:")
	for _, p := range b.Protocols {
		fmt.Fprintf(w, "    %s %s (%s)\n", p.Name, p.Controller, p.Layout)
	}
}

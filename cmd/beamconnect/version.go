package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3".
var version = ""

func init() {
	register(&command{
		name:    "version",
		summary: "print beamconnect's version",
		flags: func(fs *pflag.FlagSet) func(*call) int {
			fs.Bool("json", false, "print the version as one JSON object")
			return versionCmd
		},
	})
}

func versionCmd(c *call) int {
	v, rev := version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if c.json {
		writeJSON(c.stdout, map[string]string{"version": v, "revision": rev, "go": runtime.Version(), "protocol": "BeamNG Gen 1 (vehicleSystemsCoupling)"})
		return exitOK
	}
	fmt.Fprintf(c.stdout, "%s %s", programName, v)
	if rev != "" {
		fmt.Fprintf(c.stdout, " (%s)", rev)
	}
	fmt.Fprintf(c.stdout, " %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

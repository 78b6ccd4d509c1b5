package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"beamconnect/beamng/timing"
)

var cmdTiming = &command{
	name:    "timing",
	args:    "DIR | STEPS.csv SENDS.csv RECEIVES.csv",
	summary: "analyse BeamNG's debug logs: a verdict, where replies land, skips, stalls, lockstep, real-time factor; draw the figures",
	help: `Reads BeamNG's debug logs (start its coupling with debugFile=true, or run
'beamconnect emulate --debug-logs DIR'): simulinkPhysicsStepsLog.csv,
simulinkSendLog.csv and simulinkReceiveLog.csv in DIR, or the three files named
in that order (docs/beamng.md says where BeamNG writes them).

The first line is the verdict: healthy (BeamNG and the client in lockstep, no
2 s stalls), healthy with a note (slower than real time; replies that come
only just in time), or NOT healthy, with why (stalls; BeamNG sending ahead of
the replies, out of lockstep). Then the numbers: skip steps between sends,
where each reply lands (the next step, a later skip step, or BeamNG's blocking
receive), stalls, sends made out of lockstep and the real-time factor.
docs/timing.md explains them. Exit status 1 when not healthy.

--svg writes the figures: an overview of the whole run (every event for a
short run; for a long one, how long BeamNG waited for each reply and the
real-time factor over time), a zoom on the start-up and one on the running
connection, physics steps as ticks, sends and receives with their ids.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		svg := fs.String("svg", "", "write the figures to this SVG file")
		dt := fs.Float64("physics-dt", 0.0005, "BeamNG's physics step, s")
		fs.Bool("json", false, "print the numbers as one JSON object")
		return func(c *call) int { return timingCmd(c, *svg, *dt) }
	},
}

func timingCmd(c *call, svg string, dt float64) int {
	var logs *timing.Logs
	var err error
	switch len(c.args) {
	case 1:
		logs, err = timing.ReadDir(c.args[0])
	case 3:
		logs, err = timing.ReadFiles(c.args[0], c.args[1], c.args[2])
	default:
		fmt.Fprintf(c.stderr, "%s timing: expected a directory or three files, got %d arguments\nRun '%s timing --help' for usage.\n", programName, len(c.args), programName)
		return exitUsage
	}
	if err != nil {
		return c.fail("timing", err)
	}
	r := timing.Analyze(logs, dt)
	if svg != "" {
		f, err := os.Create(svg)
		if err != nil {
			return c.fail("timing", err)
		}
		title := "Coupling timing: " + filepath.Clean(c.args[0])
		if err := timing.SVG(f, logs, r, dt, title); err != nil {
			f.Close()
			return c.fail("timing", err)
		}
		if err := f.Close(); err != nil {
			return c.fail("timing", err)
		}
	}
	code := exitOK
	if !r.Healthy {
		code = exitFailed
	}
	if c.json {
		writeJSON(c.stdout, r)
		return code
	}
	fmt.Fprintln(c.stdout, r)
	if svg != "" {
		fmt.Fprintf(c.stdout, "figures written to %s\n", svg)
	}
	return code
}

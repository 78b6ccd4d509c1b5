package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"beamconnect/timing"
)

func init() {
	register(&command{
		name:    "timing",
		args:    "DIR | STEPS.csv SENDS.csv RECEIVES.csv",
		summary: "analyse BeamNG's debug logs: where replies land, skips, stalls, real-time factor; draw seed 001's figures",
		help: `Reads BeamNG's debug logs (debugFile=true; or 'beamconnect emulate --debug-logs DIR'):
simulinkPhysicsStepsLog.csv, simulinkSendLog.csv and simulinkReceiveLog.csv in DIR,
or the three files named in that order. Prints the numbers seed 001 reads off its
plots: skip steps between sends, where each reply lands (the next step, a later
skip step, or a blocking receive), 2 s stalls and the real-time factor. --svg
writes the figures: the whole run, a zoom on the start-up and a zoom on the
running connection, physics steps as ticks, sends and receives with their ids.`,
		flags: func(fs *pflag.FlagSet) func(*call) int {
			svg := fs.String("svg", "", "write the figures to this SVG file")
			dt := fs.Float64("physics-dt", 0.0005, "BeamNG's physics step, s")
			fs.Bool("json", false, "print the numbers as one JSON object")
			return func(c *call) int { return timingCmd(c, *svg, *dt) }
		},
	})
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
	if c.json {
		writeJSON(c.stdout, r)
		return exitOK
	}
	fmt.Fprintln(c.stdout, r)
	if svg != "" {
		fmt.Fprintf(c.stdout, "figures written to %s\n", svg)
	}
	return exitOK
}

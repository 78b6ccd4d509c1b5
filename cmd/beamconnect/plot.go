package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"beamconnect/recording"
)

var cmdPlot = &command{
	name:    "plot",
	args:    "RECORD",
	summary: "draw a recording (run --record, CSV or MDF 4) as SVG: a panel per port and unit, robust scales, one time axis",
	help: `Reads a recording written by 'beamconnect run --record' (CSV, or ASAM MDF 4 in
an .mf4 file) and draws it as SVG.
Each port is a group of panels, one per unit (m/s, 1/min, N·m, s: BeamNG's
signal catalogues', and a model's variables' as the recording gives them)
and, within a unit, one per range of
values: rpm and gear, a time and a serial number, a time to collision that
reaches 1e5 s and a 1.8 s time gap each get an axis of their own. All panels
share one time axis. Port 0 (status and directive) comes last.

Scaling is robust: only what is rare and far is clipped. From a field's
central 90 % of values outwards, values that follow each other closely are
kept (a pedal's press, however high, passes through the values between);
beyond the first wide gap, values are clipped at the panel's edge when they
are at most 1 % of all and clipping makes the rest ten times taller (a time
to collision's jumps to 1e5 s, an invalid start). Clipped values are marked
with a triangle and counted in the legend and on stderr; --no-clip draws
everything. A panel never spans less than its unit and magnitude make
meaningful (a settled 20 m/s spans 2 m/s, not its noise). A reload is a
dashed line (in an MDF 4 recording, a reload event), and the subtitle says
what it changed (fields added or removed, or only parameters and settings). Each trace keeps its minimum and
maximum per pixel, so spikes show and long recordings make small files.

A loop of the config's beamng.quality is recorded with its setpoint
(setpoint:out1.groundspeed): the setpoint is drawn dashed beside its
measured value, and the loop judged as the run judged it (with the default
band), its verdict over the panels and on stderr. A run with faults (the
MDF file's events of faults, diagnoses and lost rows; a status of error in
the rows) is said on stderr, and its loops are never called good: one that
held reads "held, in a run with faults", in amber.

The time axis is BeamNG's simulation time (the recording's first column).
The model's own variables (model.NAME columns) are a group of panels of
their own, each with the unit the recording gives it; a system's
connectors (COMPONENT.CONNECTOR columns) a group per component.

  beamconnect plot run.csv                       # writes run.svg
  beamconnect plot run.mf4
  beamconnect plot run.csv --fields groundspeed,throttle --from 5 --to 10 -o zoom.svg

--fields takes the recording's column names or parts of them: out1.groundspeed;
groundspeed (on every port and vehicle that has it); in a several-vehicle
recording ego.groundspeed, out1.groundspeed (whatever the vehicle), gap (for
gap:lead), a vehicle alone (ego: all its fields) or a port alone (out1); a
system's component alone (controller: all its connectors) or one connector
(controller.demand).
Without --fields at most 240 fields are drawn.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		out := fs.StringP("output", "o", "", "the SVG file to write (default: the recording's name with .svg; - for standard output)")
		fields := fs.StringSlice("fields", nil, "draw only these fields (comma-separated)")
		from := fs.Float64("from", 0, "draw from this time, s")
		to := fs.Float64("to", 0, "draw up to this time, s (default: the end)")
		noClip := fs.Bool("no-clip", false, "clip no outliers: every value inside its panel")
		return func(c *call) int {
			if len(c.args) != 1 {
				fmt.Fprintf(c.stderr, "%s plot: expected one recording, got %d arguments\nRun '%s plot --help' for usage.\n", programName, len(c.args), programName)
				return exitUsage
			}
			if fs.Changed("to") && *to <= *from {
				fmt.Fprintf(c.stderr, "%s plot: --to %g must be after --from %g\n", programName, *to, *from)
				return exitUsage
			}
			end := *to
			if !fs.Changed("to") && fs.Changed("from") {
				end = math.Inf(1) // to the end of the recording
			}
			return plotCmd(c, c.args[0], *out, recording.PlotOptions{Fields: *fields, From: *from, To: end, NoClip: *noClip})
		}
	},
}

func plotCmd(c *call, in, out string, o recording.PlotOptions) int {
	if out == "" {
		out = strings.TrimSuffix(in, filepath.Ext(in)) + ".svg"
	}
	if out != "-" && filepath.Clean(out) == filepath.Clean(in) {
		return c.fail("plot", fmt.Errorf("-o %s is the recording itself", out))
	}
	if _, err := os.Stat(in); err != nil {
		return c.fail("plot", err)
	}
	o.Title = "beamconnect recording: " + filepath.Base(in)
	src, err := recording.Open(in)
	if err != nil {
		return c.fail("plot", err)
	}
	if o.Events, err = recording.Events(in); err != nil {
		return c.fail("plot", err)
	}
	var w io.Writer = c.stdout
	var f *os.File
	if out != "-" {
		// Draw into a temporary file next to the target and rename, so a
		// failed plot leaves no half-written SVG behind.
		var err error
		if f, err = os.CreateTemp(filepath.Dir(out), ".plot-*.svg"); err != nil {
			return c.fail("plot", err)
		}
		defer os.Remove(f.Name())
		w = f
	}
	res, err := recording.Plot(w, in, src, o)
	if err != nil {
		if f != nil {
			f.Close()
		}
		return c.fail("plot", err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return c.fail("plot", err)
		}
		if err := os.Chmod(f.Name(), 0o644); err != nil {
			return c.fail("plot", err)
		}
		if err := os.Rename(f.Name(), out); err != nil {
			return c.fail("plot", err)
		}
		strips := ""
		if res.Strips > 0 {
			strips = fmt.Sprintf(" and %s of constant fields", plural(res.Strips, "strip"))
		}
		fmt.Fprintf(c.stderr, "wrote %s: %d fields in %s%s\n", out, res.Fields, plural(res.Panels, "panel"), strips)
	}
	for _, f := range res.Faults {
		fmt.Fprint(c.stderr, wrapText("the run had faults: "+f, summaryWidth(c), "  ", "    "))
	}
	for _, r := range res.Control {
		fmt.Fprint(c.stderr, wrapText("control "+r.Line(), summaryWidth(c), "  ", "    "))
	}
	for _, r := range res.Reloads {
		fmt.Fprintf(c.stderr, "  reload at %s\n", r)
	}
	for _, clip := range res.Clipped {
		fmt.Fprintf(c.stderr, "  outliers clipped: %s (--no-clip draws them)\n", clip)
	}
	if res.Omitted > 0 {
		fmt.Fprintf(c.stderr, "  %d more fields not drawn (at most %d without --fields): choose them with --fields\n", res.Omitted, res.Fields)
	}
	return exitOK
}

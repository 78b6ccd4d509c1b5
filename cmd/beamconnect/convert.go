package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"beamconnect/coupling"
	"beamconnect/recording"
)

var cmdConvert = &command{
	name:    "convert",
	args:    "IN OUT",
	summary: "turn a recording (run --record) from CSV into ASAM MDF 4 and back, by the files' extensions",
	help: `Reads the recording IN (CSV, or ASAM MDF 4 as run --record writes it) and
writes it to OUT in the format OUT's extension says: .mf4 for MDF 4, .csv for
CSV (--format where the name does not say). The columns, their units and a
row per message carry over; in MDF 4 each vehicle's values are a channel
group from BeamNG and one to BeamNG, and every header row after the first
(a reload) is a reload event.

From MDF 4 to CSV, a several-vehicle recording's rows hold each vehicle's
values at its own messages, the others' latest values beside them (nothing
before their first message). The events and the attached config have no
place in a CSV file; the MDF file keeps them. From CSV to MDF 4 the start
time is the CSV file's modification time less the recording's length.

  beamconnect convert run.csv run.mf4
  beamconnect convert run.mf4 run.csv

IN is read whole once before OUT is written, so a broken IN leaves no OUT;
an existing OUT is replaced only if it is a recording, or with --force.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		format := fs.String("format", "", "OUT's format where its name does not say: csv or mdf (ASAM MDF 4)")
		force := fs.Bool("force", false, "replace OUT even if it is not a recording")
		return func(c *call) int {
			if len(c.args) != 2 {
				fmt.Fprintf(c.stderr, "%s convert: expected a recording and the file to write, got %d arguments\nRun '%s convert --help' for usage.\n", programName, len(c.args), programName)
				return exitUsage
			}
			return convertCmd(c, c.args[0], c.args[1], *format, *force)
		}
	},
}

func convertCmd(c *call, in, out, format string, force bool) int {
	same := false
	if a, err := filepath.Abs(in); err == nil {
		if b, err := filepath.Abs(out); err == nil && a == b {
			same = true
		}
	}
	if fi, err := os.Stat(in); err == nil {
		if fo, err := os.Stat(out); err == nil && os.SameFile(fi, fo) {
			same = true // a link to it, or the same file by another path
		}
	}
	if same {
		return c.fail("convert", fmt.Errorf("%s is the recording %s itself: expected another file to write", out, in))
	}
	src, err := recording.Open(in)
	if err != nil {
		return c.fail("convert", err)
	}
	span, err := recording.Measure(src)
	if err != nil {
		return c.fail("convert", err)
	}
	opts := recording.Options{Version: "convert"}
	if st, err := os.Stat(in); err == nil && span.Rows > 0 {
		opts.Start = st.ModTime().Add(-time.Duration(span.Last * float64(time.Second)))
	}
	f, fm, err := coupling.OpenRecording(out, in, format, force)
	if err != nil {
		return c.fail("convert", err)
	}
	defer f.Close()
	w, err := fm.Create(f, opts)
	if err != nil {
		return c.fail("convert", fmt.Errorf("%s: %w", out, err))
	}
	events, err := recording.Events(in)
	if err != nil {
		return c.fail("convert", err)
	}
	rows, err := recording.Copy(w, src, span, 1<<20, events)
	if err != nil {
		return c.fail("convert", fmt.Errorf("%s: %w", out, err))
	}
	if err := f.Close(); err != nil {
		return c.fail("convert", err)
	}
	fmt.Fprintf(c.stderr, "wrote %s (%s): %d rows, %d headers\n", out, fm.Name, rows, span.Headers)
	for _, e := range events {
		if e.Kind == recording.Lost || e.Kind == recording.Faults {
			// What the run said of itself stays said, whatever OUT keeps.
			fmt.Fprint(c.stderr, wrapText(fmt.Sprintf("%s says: %s at %.3f s: %s", in, e.Name, e.Time, e.Text), summaryWidth(c), "  note: ", "    "))
		}
	}
	return exitOK
}

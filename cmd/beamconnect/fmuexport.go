package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"beamconnect/config"
	"beamconnect/fmuexport"
	"beamconnect/fmuexport/child"
)

const exportHelp = `'fmu export rig.json -o rig.fmu' makes BeamNG.tech, coupled as the config says,
an FMU for a master of yours (Simulink's FMU block, Dymola, OpenModelica,
fmusim): an FMI 2.0 (or --fmi 3) co-simulation FMU whose outputs are the
config's outputs (BeamNG's signals), whose inputs are its inputs (the
controls), each with its unit, description and initialValue as its start;
with several vehicles each name carries its vehicle (ego.groundspeed). Its
parameters are each vehicle's addresses and ports (localIP, localPort,
remoteIP, remotePort), recordFile (a recording of every message, CSV or
.mf4), connectTimeout, silenceTimeout and processTimeout. Gen 1 and Gen 2
configs export.

Each doStep(t, h) couples BeamNG's messages of [t, t+h) with the master's
inputs held over the step, in lockstep: the outputs at t+h are BeamNG's
message of t+h, and BeamNG waits for the master's next step before it goes
on. h must be a whole number of BeamNG's periods (the description's default
step is one), except the last step's, which a master may shorten to end at
its stop time. BeamNG lost (no message for silenceTimeout) fails the step
with the reason, and BeamNG gets neutral controls from then on, never the
master's last inputs. The coupling's log goes to the master's FMI logger.

The FMU runs the coupling in a beamconnect child process, so the master's
process never dies with it, and a call of the master fails (Error, naming
the process) when that process shows no sign of life for processTimeout:
stopped, hung or killed. It carries binaries for x86-64 Linux and
Windows, each a small C library beside beamconnect's own executable for
that platform. The executables are this beamconnect and the one beside it
(beamconnect.exe beside beamconnect, or the other way round: build both
into one folder), or those --beamconnect-linux and --beamconnect-windows
name; with only one, the FMU runs on that platform only, and export says
so. The config and its Gen 2 CSVs are in the FMU's resources/.`

type exportOpts struct {
	out, linux, windows string
	fmi                 int
	given               map[string]string
	changed             []string
}

func exportCmd(c *call, o *exportOpts) int {
	usage := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "%s fmu export: %s\nRun '%s fmu --help' for usage.\n", programName, fmt.Sprintf(format, args...), programName)
		return exitUsage
	}
	switch {
	case o.out == "":
		return usage("expected -o FILE.fmu: where to write the FMU")
	case o.fmi != 2 && o.fmi != 3:
		return usage("--fmi %d: expected 2 or 3", o.fmi)
	case c.json:
		return usage("--json applies to inspect only")
	}
	if !strings.EqualFold(filepath.Ext(o.out), ".fmu") {
		return usage("-o %s: an FMU's name ends in .fmu", o.out)
	}
	path := c.args[1]
	plan, res := check(path)
	if !res.Valid {
		printResult(c.stderr, res)
		return exitFailed
	}
	for _, d := range res.Diagnostics {
		printDiag(c.stderr, d)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return c.fail("fmu export", err)
	}
	if o.linux != "" {
		o.given["linux"] = o.linux
	}
	if o.windows != "" {
		o.given["windows"] = o.windows
	}
	self, err := os.Executable()
	if err != nil {
		return c.fail("fmu export", fmt.Errorf("finding this beamconnect's executable: %w", err))
	}
	exes, notes, missing, err := fmuexport.Executables(self, runtime.GOOS, o.given)
	if err != nil {
		return c.fail("fmu export", err)
	}
	if len(exes) == 0 {
		return c.fail("fmu export", fmt.Errorf("no beamconnect for linux or windows to carry (this one is for %s/%s): name one with --beamconnect-linux or --beamconnect-windows", runtime.GOOS, runtime.GOARCH))
	}
	name := fmuexport.Identifier(o.out)
	files, in, err := fmuexport.Files(cfg, plan, fmuexport.Options{FMI: o.fmi, Name: name, Beamconnect: exes})
	if err != nil {
		return c.fail("fmu export", err)
	}
	if err := fmuexport.Write(o.out, files); err != nil {
		return c.fail("fmu export", err)
	}
	var platforms []string
	for _, goos := range fmuexport.OSes {
		if _, ok := exes[goos]; ok {
			folder, _ := fmuexport.Platform(o.fmi, goos)
			platforms = append(platforms, folder)
		}
	}
	fmt.Fprintf(c.stdout, "wrote %s: FMI %d.0 co-simulation FMU %q of %s (%s, %s)\n", o.out, o.fmi, name, path,
		plan.Protocol.Controller(), plural(len(plan.Vehicles), "vehicle"))
	fmt.Fprintf(c.stdout, "  %-12s%d outputs (BeamNG's signals), %d inputs (the controls), %d parameters (addresses, ports, recordFile, timeouts), time\n",
		"variables:", in.Count(fmuexport.Output), in.Count(fmuexport.Input), in.Count(fmuexport.Parameter))
	fmt.Fprintf(c.stdout, "  %-12sa whole number of BeamNG's %s ms periods\n", "step:", strconv.FormatFloat(plan.Period*1000, 'g', -1, 64))
	fmt.Fprintf(c.stdout, "  %-12sbinaries/%s\n", "platforms:", strings.Join(platforms, ", binaries/"))
	if plan.Model != "hold" {
		fmt.Fprintf(c.stdout, "  %-12sthe config's beamng.model (%s) does not run in the FMU: the master computes the inputs\n", "note:", plan.Model)
	}
	for _, n := range notes {
		fmt.Fprintf(c.stderr, "%s fmu export: note: %s\n", programName, n)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		fmt.Fprintf(c.stderr, "%s fmu export: warning: the FMU runs on %s only: no beamconnect for %s beside %s; build it there (GOOS=%s go build -o %s ./cmd/beamconnect) or name one with --beamconnect-%s\n",
			programName, strings.Join(platforms, " and "), strings.Join(missing, " or "), self, missing[0], filepath.Dir(self), missing[0])
	}
	return exitOK
}

var cmdFmuExportChild = &command{
	name:     "fmu-export-child",
	summary:  "internal: the coupling of an FMU 'fmu export' made, started by the FMU's library in the master's process",
	internal: true,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		return func(c *call) int { return child.Main(os.Stdin, c.stderr) }
	},
}

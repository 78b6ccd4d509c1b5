package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"beamconnect/config/draft"
	"beamconnect/fmu"
)

const initFMUHelp = `--from-fmu writes a config that couples an FMU (Gen 1 messages, "model":
"fmu") and runs as written: every FMU input named like a BeamNG signal
(groundspeed, rpm, yaw…) becomes a field of one outputs port, every FMU
output named like something BeamNG reads (throttle, brake, steering…) a
field of one inputs port, starting at 0. A name that differs only in letter
case, or is one typo away from a signal's, is bound to it through
modelParams.inputs or .outputs and reported, so you can check it. An output
that matches nothing goes to a free custom field (custom1, custom2…, mapped
in modelParams.outputs), so BeamNG gets it and the recording and the live
page show it under the FMU's name and unit; an input that matches nothing
keeps its start value, written to modelParams.parameters; both are listed.
The FMU's parameters are written to modelParams.parameters with their start
values, to edit. A parameter named as a setpoint (setSpeed, targetSpeed,
speedRef…) beside an input bound to the signal it is the setpoint of
(groundspeed) becomes a loop of beamng.quality, so the run has a control
verdict. The period is the FMU's own step (its fixed internal step, or its
DefaultExperiment step size, rounded up to BeamNG's 0.5 ms physics step),
or 5 ms. The addresses are the defaults (all on this machine), or with
--addresses-from CONFIG those of a config of yours (remoteIP, remotePort,
remoteObject, beamng.localIP and localPort): examples/two-machines.json
gives a rig with BeamNG on another machine.`

func initFMUCmd(c *call, from, out, addrsFrom string, force bool) int {
	if len(c.args) > 0 {
		fmt.Fprintf(c.stderr, "%s init: expected --from-fmu FILE and no other argument\nRun '%s init --help' for usage.\n", programName, programName)
		return exitUsage
	}
	f, err := fmu.Open(from)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s init: %v\n", programName, err)
		return exitFailed
	}
	defer f.Close()
	if _, err := f.Desc.Interface(""); err != nil {
		return c.fail("init", fmt.Errorf("%s: %w", from, err)) // no interface beamconnect runs
	}
	path := from
	if out != "" {
		if rel, err := filepath.Rel(filepath.Dir(out), from); err == nil {
			path = rel
		}
	} else if abs, err := filepath.Abs(from); err == nil {
		path = abs
	}
	var addrs *draft.Addresses
	if addrsFrom != "" {
		var err error
		if addrs, err = draft.AddressesFrom(addrsFrom); err != nil {
			return c.fail("init", err)
		}
	}
	dr := draft.FromFMU(f.Desc, filepath.ToSlash(path), addrs)
	data, err := json.MarshalIndent(dr.Config, "", "  ")
	if err != nil {
		return c.fail("init", err)
	}
	data = append(data, '\n')
	if out == "" {
		c.stdout.Write(data)
	} else {
		if code := refuseOverwrite(c, out, from, force); code != exitOK {
			return code
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return c.fail("init", err)
		}
		fmt.Fprintf(c.stderr, "wrote %s: %d FMU inputs and %d outputs bound to BeamNG's fields; check it with 'beamconnect validate %s'\n", out, len(dr.Inputs), len(dr.Outputs), out)
	}
	say := func(format string, args ...any) {
		fmt.Fprint(c.stderr, wrapText(fmt.Sprintf(format, args...), summaryWidth(c), "  ", "    "))
	}
	var custom []string
	for _, side := range []struct {
		what  string
		bound []draft.Bound
	}{{"input", dr.Inputs}, {"output", dr.Outputs}} {
		for _, b := range side.bound {
			switch {
			case b.Guessed:
				say("the FMU's %s %q is bound to %s, the closest BeamNG signal: check it", side.what, b.Variable, b.Signal)
			case b.Custom:
				custom = append(custom, b.Variable+" → "+b.Signal)
			}
		}
	}
	if len(custom) > 0 {
		say("outputs that match no signal BeamNG reads go to free custom fields, recorded and shown under the FMU's names (in1.NAME): %s", strings.Join(custom, ", "))
	}
	if len(dr.Constants) > 0 {
		say("inputs that match no signal BeamNG sends keep their start values (modelParams.parameters; map them in modelParams.inputs to drive them): %s", strings.Join(dr.Constants, ", "))
	}
	if dr.Quality.Measured != "" {
		say("beamng.quality judges how well %s follows %s (the control verdict)", dr.Quality.Measured, dr.Quality.Setpoint)
	}
	for _, n := range dr.Notes {
		say("note: %s", n)
	}
	if f.Supported() != nil {
		fmt.Fprintf(c.stderr, "  note: %v\n", f.Supported())
	}
	return exitOK
}

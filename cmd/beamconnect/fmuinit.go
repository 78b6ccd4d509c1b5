package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"beamconnect/config/draft"
	"beamconnect/fmu"
)

const initFMUHelp = `--from-fmu writes a config that couples an FMU (Gen 1 messages, "model":
"fmu"): every FMU input named like a BeamNG signal (groundspeed, rpm,
yaw…) becomes a field of one outputs port, every FMU output named like
something BeamNG reads (throttle, brake, steering…) a field of one inputs
port, starting at 0. A name that differs only in letter case, or is one typo
away from a signal's, is bound to it through modelParams.inputs or .outputs
and reported, so you can check it. Names that match nothing are listed, and
validate keeps warning about them (TODO) until they are mapped. The FMU's
parameters are written to modelParams.parameters with their start values,
to edit. The period is the FMU's DefaultExperiment step size (rounded up to
BeamNG's 0.5 ms physics step), or 5 ms. The addresses are the defaults
(all on this machine), or with --addresses-from CONFIG those of a config of
yours (remoteIP, remotePort, remoteObject, beamng.localIP and localPort):
examples/two-machines.json gives a rig with BeamNG on another machine.`

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
	cfg, ins, outs, todo := draft.FromFMU(f.Desc, filepath.ToSlash(path), addrs)
	data, err := json.MarshalIndent(cfg, "", "  ")
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
		fmt.Fprintf(c.stderr, "wrote %s: %d FMU inputs and %d outputs bound to BeamNG signals; check it with 'beamconnect validate %s'\n", out, len(ins), len(outs), out)
	}
	for _, side := range []struct {
		what  string
		bound []draft.Bound
	}{{"input", ins}, {"output", outs}} {
		for _, b := range side.bound {
			if b.Guessed {
				fmt.Fprintf(c.stderr, "  the FMU's %s %q is bound to %s, the closest BeamNG signal: check it\n", side.what, b.Variable, b.Signal)
			}
		}
	}
	for _, t := range todo {
		fmt.Fprintf(c.stderr, "  TODO: %s\n", t)
	}
	if f.Supported() != nil {
		fmt.Fprintf(c.stderr, "  note: %v\n", f.Supported())
	}
	return exitOK
}

package main

import (
	"errors"
	"fmt"

	"beamconnect/ports"
	"beamconnect/ssp"
	"beamconnect/system"
)

// Systems of components (an .ssp, or an .ssd with its files): where a
// command takes a config, it takes a system too. validate checks it whole
// (check), run couples it with the system as its model (newSystem, and
// watchSystem for live edits of its parameters), compile shows it.

const systemHelp = `A system of components (an SSP System Structure: an .ssp archive, or an
.ssd with its files beside it) runs where a config does: BeamNG is one
component, whose source is a beamconnect config (type
application/x-beamconnect-config; #NAME picks one vehicle of several), and
FMUs are the others. See docs/systems.md.`

// checkSystem checks a system as check checks a config: its files against
// SSP's schemas, its components, connections, parameters and loops. The
// plan is BeamNG's config's, the system its model.
func checkSystem(path string) (*ports.Plan, fileResult) {
	r := fileResult{File: path}
	sys, ds, err := system.Load(path)
	if err != nil {
		r.ReadError, r.Errors = err.Error(), 1
		return nil, r
	}
	r.Diagnostics = toJSONDiags(ds)
	r.Errors += ds.Errors()
	r.Warnings = len(ds) - ds.Errors()
	r.Valid = sys != nil && r.Errors == 0
	if sys == nil {
		return nil, r
	}
	defer sys.Close()
	return sys.Plan, r
}

// newSystem builds the system the run's argument names as its model: its
// FMUs started, each in its child process. ok is false when the argument
// is a config.
func (r *runner) newSystem() (ok bool, err error) {
	if !ssp.IsSystem(r.c.args[0]) {
		return false, nil
	}
	if r.o.model != "" {
		return true, errors.New("--model: a system's components are its model; run a config to run another model")
	}
	sys, _, err := system.Load(r.c.args[0])
	if err != nil || sys == nil {
		if err == nil {
			err = errors.New("the system changed since it was checked: run again")
		}
		return true, err
	}
	r.closers = append(r.closers, func() { sys.Close() })
	m, err := system.New(sys, r.plan, system.Options{Log: r.c.log})
	if err != nil {
		return true, err
	}
	r.name, r.model, r.system = system.Kind, m, sys
	r.closers = append(r.closers, func() {
		if err := m.Close(); err != nil {
			r.c.log.Warn("model", "err", err)
		}
	})
	return true, nil
}

// compileSystem shows a system: its components and how each runs, the
// connections, the order of steps, the parameters; then BeamNG's plan as
// compile shows a config's.
func compileSystem(c *call, plan *ports.Plan, r fileResult) int {
	sys, _, err := system.Load(c.args[0])
	if err != nil || sys == nil {
		return c.fail("compile", fmt.Errorf("%s: the system changed since it was checked: run again", c.args[0]))
	}
	defer sys.Close()
	d := sys.Describe()
	if c.json {
		writeJSON(c.stdout, struct {
			System system.Description `json:"system"`
			Plan   any                `json:"plan"`
		}{d, planJSON(plan, r.Diagnostics)})
		return exitOK
	}
	for _, l := range d.Lines() {
		fmt.Fprintln(c.stdout, l)
	}
	fmt.Fprintln(c.stdout)
	printPlan(c.stdout, plan, c.args[0])
	return exitOK
}

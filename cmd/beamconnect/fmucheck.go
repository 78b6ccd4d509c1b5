package main

import (
	"fmt"

	"beamconnect/fmu"
)

const checkHelp = `'fmu check controller.fmu' checks an FMU, whoever made it, against the rules
of the FMI 2.0 and 3.0 standards that masters check when they load it, not
only its XML Schema: exactly one independent variable (FMI 3.0), legal
causality, variability and initial, start values where required and only
there, units defined, ModelStructure complete and right (Outputs, state
derivatives, InitialUnknowns), value references and names, and every
function of the standard exported by each of its binaries (an ELF's
dynamic symbols, a Windows DLL's exports). It prints each problem with
its file and line and exits 1 if there is any, 0 if none. Several FMUs
may be given.`

// fmuChecks is fmu check's answer (--json): whether every FMU passes,
// the first that could not be checked at all, and each FMU's problems.
type fmuChecks struct {
	Passes bool       `json:"passes"`
	Error  string     `json:"error,omitempty"`
	FMUs   []fmuCheck `json:"fmus"`
}

// fmuCheck is fmu check's answer for one FMU.
type fmuCheck struct {
	File     string   `json:"file"`
	Passes   bool     `json:"passes"`
	Error    string   `json:"error,omitempty"`
	Problems []string `json:"problems"`
}

func checkCmd(c *call, files []string) int {
	status := exitOK
	all := fmuChecks{Passes: true}
	for _, file := range files {
		r := fmuCheck{File: file, Problems: []string{}}
		problems, err := fmu.Check(file)
		switch {
		case err != nil:
			r.Error = err.Error()
			status = exitFailed
		case len(problems) > 0:
			status = exitFailed
		default:
			r.Passes = true
		}
		for _, p := range problems {
			r.Problems = append(r.Problems, p.String())
		}
		all.FMUs = append(all.FMUs, r)
		all.Passes = all.Passes && r.Passes
		if all.Error == "" {
			all.Error = r.Error
		}
		if c.json {
			continue
		}
		switch {
		case err != nil:
			fmt.Fprintf(c.stderr, "%s fmu check: %v\n", programName, err)
		case len(problems) == 0:
			fmt.Fprintf(c.stdout, "%s: passes the FMI standard's checks (its description and every binary)\n", file)
		default:
			for _, p := range r.Problems {
				fmt.Fprintf(c.stdout, "%s: %s\n", file, p)
			}
			fmt.Fprintf(c.stdout, "%s: %s: masters may refuse to load it\n", file, plural(len(problems), "problem"))
		}
	}
	if c.json {
		writeJSON(c.stdout, all)
	}
	return status
}

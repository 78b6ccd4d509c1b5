package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"beamconnect/config"
	"beamconnect/models/kinds"
	"beamconnect/ports"
	"beamconnect/ssp"
)

var cmdValidate = &command{
	name:    "validate",
	args:    "FILE...",
	summary: "check rig configs and report every problem with file:line:col",
	help: `Checks each file's JSON, its schema and its meaning against BeamNG's message
layout, and prints every error and warning at once, in file order. Exits 0 when
every file is valid (warnings do not fail), 1 when any is not, 2 on bad usage.

A system (an .ssp, or an .ssd with its files) is checked whole: the archive,
the .ssd and its parameter files against the SSP 2.0 XML Schemas, BeamNG's
config, each FMU, every connector against what its component is (names, kind,
type, unit), every connection (its ends, which way, types and units that fit,
one source per input), parameter values, and algebraic loops (a cycle of
connections through outputs that depend directly on inputs), each at its
file:line:col, with "did you mean" for a misspelt name.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		fs.Bool("json", false, "print the result as one JSON object")
		return validateCmd
	},
}

// jsonDiag is a diagnostic in machine-readable output.
type jsonDiag struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Path     string `json:"path"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

func toJSONDiags(ds config.Diagnostics) []jsonDiag {
	out := make([]jsonDiag, 0, len(ds))
	for _, d := range ds {
		out = append(out, jsonDiag{d.File, d.Pos.Line, d.Pos.Col, d.Path, d.Severity.String(), d.Msg})
	}
	return out
}

type fileResult struct {
	File        string     `json:"file"`
	Valid       bool       `json:"valid"`
	Errors      int        `json:"errors"`
	Warnings    int        `json:"warnings"`
	ReadError   string     `json:"read_error,omitempty"`
	Diagnostics []jsonDiag `json:"diagnostics"`
}

// check loads one file and checks it whole: the config, its compiled plan
// and its model, so that what validate accepts, compile, run and emulate
// accept too. A config that cannot be read or parsed comes back as
// diagnostics or a read error, never as a failure of the command itself.
func check(path string) (*ports.Plan, fileResult) {
	if ssp.IsSystem(path) {
		return checkSystem(path) // system.go
	}
	r := fileResult{File: path}
	cfg, err := config.Load(path)
	var ds config.Diagnostics
	var plan *ports.Plan
	switch {
	case err == nil:
		ds = cfg.Warnings
		plan, ds = checkPlan(cfg, ds)
	case errors.As(err, &ds):
	default:
		r.ReadError = err.Error()
		r.Errors = 1
	}
	r.Diagnostics = toJSONDiags(ds)
	r.Errors += ds.Errors()
	r.Warnings = len(ds) - ds.Errors()
	r.Valid = plan != nil && r.Errors == 0
	if !r.Valid {
		plan = nil
	}
	return plan, r
}

// checkPlan compiles a checked config and checks its model, adding the
// findings, placed in the file, to ds.
func checkPlan(cfg *config.Config, ds config.Diagnostics) (*ports.Plan, config.Diagnostics) {
	plan, err := config.Compile(cfg)
	var placed config.Diagnostics
	switch {
	case errors.As(err, &placed):
		ds = append(ds, placed...) // beamng.quality names what is not a field
		ds.Sort()
		return nil, ds
	case err != nil:
		// The config checks passed but the compiler refuses: a defect.
		return nil, append(ds, config.Diagnostic{File: cfg.File, Pos: config.Pos{Line: 1, Col: 1}, Severity: config.Error,
			Msg: "internal error: the checks accepted what the compiler refuses: " + err.Error()})
	}
	for _, l := range plan.Quality {
		if l.Set != ports.SetParam {
			continue
		}
		if _, err := kinds.ParamValue(plan, l.SetName); err != nil {
			pos, path := cfg.Locate(l.Ptr + "/setpoint")
			ds = append(ds, config.Diagnostic{File: cfg.File, Pos: pos, Path: path, Severity: config.Error, Msg: err.Error()})
		}
	}
	for _, f := range kinds.Validate(plan.Model, plan.ModelParams, plan) {
		ptr := "/beamng/model"
		if f.Param != "" {
			ptr = "/beamng/modelParams/" + f.Param
		}
		pos, path := cfg.Locate(ptr)
		sev := config.Error
		if f.Warning {
			sev = config.Warning
		}
		ds = append(ds, config.Diagnostic{File: cfg.File, Pos: pos, Path: path, Severity: sev, Msg: f.Msg})
	}
	ds.Sort()
	return plan, ds
}

func validateCmd(c *call) int {
	if len(c.args) == 0 {
		fmt.Fprintf(c.stderr, "%s validate: expected at least one config file\nRun '%s validate --help' for usage.\n", programName, programName)
		return exitUsage
	}
	var results []fileResult
	allValid := true
	for _, path := range c.args {
		_, r := check(path)
		allValid = allValid && r.Valid
		results = append(results, r)
	}
	if c.json {
		writeJSON(c.stdout, struct {
			Valid bool         `json:"valid"`
			Files []fileResult `json:"files"`
		}{allValid, results})
	} else {
		for _, r := range results {
			printResult(c.stdout, r)
		}
	}
	if !allValid {
		return exitFailed
	}
	return exitOK
}

func printResult(w io.Writer, r fileResult) {
	if r.ReadError != "" {
		fmt.Fprintf(w, "%s: cannot read: %s\n", r.File, r.ReadError)
		return
	}
	for _, d := range r.Diagnostics {
		printDiag(w, d)
	}
	switch {
	case r.Valid && r.Warnings == 0:
		fmt.Fprintf(w, "%s: valid\n", r.File)
	case r.Valid:
		fmt.Fprintf(w, "%s: valid, %s\n", r.File, plural(r.Warnings, "warning"))
	default:
		fmt.Fprintf(w, "%s: invalid: %s, %s\n", r.File, plural(r.Errors, "error"), plural(r.Warnings, "warning"))
	}
}

func printDiag(w io.Writer, d jsonDiag) {
	sev := ""
	if d.Severity == "warning" {
		sev = "warning: "
	}
	path := ""
	if d.Path != "" {
		path = d.Path + ": "
	}
	fmt.Fprintf(w, "%s:%d:%d: %s%s%s\n", d.File, d.Line, d.Column, sev, path, d.Message)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a value that cannot be encoded gets here: a defect, not a user error.
		panic(err)
	}
}

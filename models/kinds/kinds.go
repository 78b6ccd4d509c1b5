// Package kinds makes a model of any kind by the name a config gives it
// (beamng.model): "hold", the built-in controllers, "exec" and "fmu". It
// checks a model's parameters the same way for validate and for run, so
// the two never disagree.
package kinds

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"beamconnect/internal/suggest"
	"beamconnect/models"
	"beamconnect/models/builtin"
	"beamconnect/models/fmumodel"
	"beamconnect/models/program"
	"beamconnect/ports"
)

// Names of the models there are.
func Names() []string {
	return slices.Sorted(slices.Values(append(builtin.Names(), "exec", "fmu", "hold")))
}

// params are the parameters of the model called name, and whether there
// is such a model.
func params(name string) ([]models.Param, bool) {
	switch name {
	case "hold":
		return nil, true
	case "exec":
		return program.Params, true
	case "fmu":
		return fmumodel.Params, true
	}
	p := builtin.Params(name)
	return p, p != nil
}

// Validate checks a model's name, its parameters and, for the built-in
// controllers, that plan maps the signals they need, without starting
// anything. validate reports these findings and run refuses what has an
// error.
func Validate(name string, p models.Params, plan *ports.Plan) []models.Finding {
	specs, ok := params(name)
	if !ok {
		msg := fmt.Sprintf("model %q: expected one of %s", name, strings.Join(Names(), ", "))
		if s := suggest.Closest(name, Names()); s != "" {
			msg = fmt.Sprintf("model %q: no such model (did you mean %q?)", name, s)
		}
		return []models.Finding{{Msg: msg}}
	}
	switch name {
	case "exec":
		return append(models.CheckParams(name, specs, p), program.Validate(p, plan)...)
	case "fmu":
		return append(models.CheckParams(name, specs, p), fmumodel.Validate(p, plan)...)
	case "hold":
		return models.CheckParams(name, specs, p)
	}
	return builtin.Validate(name, p, plan)
}

// Check reports whether the model called name could bind to plan, without
// starting anything: a reload is refused before it is applied when the new
// config lacks a port the model needs.
func Check(name string, plan *ports.Plan) error {
	if builtin.Params(name) == nil {
		return nil
	}
	return builtin.Check(name, nil, plan)
}

// New builds the model called name for plan, binding it to the ports that
// carry the signals it needs, once Validate finds no error.
//
// log (nil: discard) hears of what a model that runs on its own reports:
// an exec program that ends, or answers badly.
func New(name string, p models.Params, plan *ports.Plan, log *slog.Logger) (models.Model, error) {
	if _, ok := params(name); !ok {
		return nil, Validate(name, p, plan)[0] // names the models there are
	}
	if err := models.Refusal(name, Validate(name, p, plan)); err != nil {
		return nil, err
	}
	switch name {
	case "hold":
		return models.Hold{}, nil
	case "exec":
		// Return only a working *Exec: a nil one in the interface would
		// not compare equal to nil.
		m, err := program.NewExec(p, plan, log)
		if err != nil {
			return nil, err
		}
		return m, nil
	case "fmu":
		m, err := fmumodel.New(p, plan, log)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	return builtin.New(name, p, plan)
}

// Describe says how the model called name would run with params on plan,
// without starting it: a line or two for compile (an FMU's interface and
// step), nil for models with nothing to say.
func Describe(name string, p models.Params, plan *ports.Plan) []string {
	if name != "fmu" {
		return nil
	}
	return fmumodel.Describe(p, plan)
}

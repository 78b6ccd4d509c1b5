package models

import (
	"log/slog"
	"testing"

	"beamconnect/ports"
	"beamconnect/ports/portstest"
)

// The catalog (models/catalog) makes models by name, but it imports this
// package, so these tests make their FMU models as it does.

// New builds an FMU model once Validate finds no error, as the catalog's
// New does.
func New(name string, p Params, plan *ports.Plan, log *slog.Logger) (Model, error) {
	if err := Refusal(name, Validate(name, p, plan)); err != nil {
		return nil, err
	}
	m, err := NewFMU(p, plan, log)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks an FMU model's parameters as the catalog's Validate does.
func Validate(name string, p Params, plan *ports.Plan) []Finding {
	if name != "fmu" {
		return []Finding{{Msg: "these tests make FMU models only, not " + name}}
	}
	return append(CheckParams(name, fmuParams, p), validateFMU(p, plan)...)
}

func plan(t *testing.T, file string) *ports.Plan { return portstest.Load(t, file) }

func vectors(p *ports.Plan) (outs, ins [][]float64) { return portstest.Vectors(p) }

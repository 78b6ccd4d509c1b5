package fmumodel

import (
	"log/slog"
	"testing"

	"beamconnect/config/configtest"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/ports/portstest"
)

// Package kinds (models/kinds) makes models by name, but it imports this
// package, so these tests make their FMU models as it does.

// newModel builds an FMU model once validateModel finds no error, as the
// kinds.New does.
func newModel(p models.Params, plan *ports.Plan, log *slog.Logger) (models.Model, error) {
	if err := models.Refusal("fmu", validateModel(p, plan)); err != nil {
		return nil, err
	}
	m, err := New(p, plan, log)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// validateModel checks an FMU model's parameters as kinds.Validate
// does.
func validateModel(p models.Params, plan *ports.Plan) []models.Finding {
	return append(models.CheckParams("fmu", Params, p), Validate(p, plan)...)
}

func plan(t *testing.T, file string) *ports.Plan { return configtest.Plan(t, file) }

func vectors(p *ports.Plan) (outs, ins [][]float64) { return portstest.Vectors(p) }

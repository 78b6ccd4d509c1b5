package kinds

import (
	"beamconnect/models"
	"beamconnect/models/builtin"
	"beamconnect/models/fmumodel"
	"beamconnect/ports"
)

// ParamValue is the value of the plan's model's parameter name, as a
// setpoint of beamng.quality reads it, before any model runs (validate):
// an FMU's from modelParams.parameters, or else its start value in the
// FMU; a built-in controller's from modelParams or its default; another
// model's from a number in modelParams.
func ParamValue(plan *ports.Plan, name string) (float64, error) {
	return models.ParamValue(plan.Model, Parameters(plan.Model), models.Params(plan.ModelParams), plan, name)
}

// Parameters reads the parameters of the model called kind for a
// setpoint of beamng.quality (coupling.Options.Params); nil for a model
// whose parameters are only numbers in modelParams.
func Parameters(kind string) models.ParamReader {
	if kind == "fmu" {
		return fmumodel.Parameters{}
	}
	if names, _ := builtin.Numbers(kind); names != nil {
		return builtin.Parameters(kind)
	}
	return nil
}

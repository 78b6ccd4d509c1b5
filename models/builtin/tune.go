package builtin

import (
	"fmt"
	"reflect"
	"strings"

	"beamconnect/models"
	"beamconnect/ports"
)

// A reload reaches a running model through Rebind (see Rebinder). The
// built-in controllers take new parameters while they run: set points and
// gains at once, bumplessly (a PI controller's integral is rescaled so a
// new ki does not step its output). What a model is bound by (follow's ego
// and lead) cannot change while it runs.

// restartOnly are the parameters of each model that a running model
// cannot take.
var restartOnly = map[string][]string{"follow": {"ego", "lead"}}

// prepare is what a built-in controller's Rebind does that can fail:
// parameters a running model cannot take, the parameters' values, and the
// binding to plan, which bind makes into a fresh value so the running
// binding is untouched.
func prepare[R any](model string, plan *ports.Plan, running, params models.Params, nums numbers, bind func(*binder) R) (R, []float64, error) {
	var zero R
	if err := checkTune(model, running, params); err != nil {
		return zero, nil, err
	}
	if err := models.Refusal(model, Validate(model, params, plan)); err != nil {
		return zero, nil, err
	}
	v, err := nums.read(params)
	if err != nil {
		return zero, nil, err
	}
	b := &binder{plan: plan, model: model}
	r := bind(b)
	if err := b.err(); err != nil {
		return zero, nil, err
	}
	return r, v, nil
}

// checkTune refuses params that change a restart-only parameter of model,
// naming each with both values as the config writes them.
func checkTune(model string, running, params models.Params) error {
	var changed []string
	for _, k := range restartOnly[model] {
		if !reflect.DeepEqual(running[k], params[k]) {
			changed = append(changed, fmt.Sprintf("modelParams.%s (%s → %s)", k, models.ParamText(running[k]), models.ParamText(params[k])))
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("model %s is bound by these, which cannot change while it runs (restart beamconnect for them): %s",
			model, strings.Join(changed, "; "))
	}
	return nil
}

// retune sets a PI controller's gains, keeping its output continuous.
func (c *pi) retune(kp, ki float64) {
	if ki != 0 && c.ki != 0 {
		c.integral *= c.ki / ki
	}
	c.kp, c.ki = kp, ki
}

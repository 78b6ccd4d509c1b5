package models

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Tuner is a Model whose parameters (beamng.modelParams) can change while
// it runs, as a Simulink user tunes a running model's parameters. A config
// reload that changes only parameters is checked with CheckTune before
// anything of it is applied, and applied with Tune between two messages.
type Tuner interface {
	// CheckTune reports whether params can replace the running parameters.
	// The error names every parameter that cannot change while the model
	// runs (restart-only) or has a bad value; nothing is applied then.
	CheckTune(params Params) error
	// Tune applies params, which CheckTune accepted. It runs on the
	// coupling's loop between two messages and must be quick.
	Tune(params Params)
}

// The built-in controllers take new parameters while they run: set points
// and gains at once, bumplessly (a PI controller's integral is rescaled so
// a new ki does not step its output). What a model is bound by (follow's
// ego and lead) cannot change while it runs.

// restartOnly are the parameters of each model that a running model
// cannot take.
var restartOnly = map[string][]string{"follow": {"ego", "lead"}}

// checkTune refuses params that change a restart-only parameter of model,
// naming each with both values as the config writes them.
func checkTune(model string, running, params Params) error {
	var changed []string
	for _, k := range restartOnly[model] {
		if !reflect.DeepEqual(running[k], params[k]) {
			changed = append(changed, fmt.Sprintf("modelParams.%s (%s → %s)", k, jsonText(running[k]), jsonText(params[k])))
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("model %s is bound by these, which cannot change while it runs (restart beamconnect for them): %s",
			model, strings.Join(changed, "; "))
	}
	return nil
}

// jsonText writes a parameter's value as the config writes it.
func jsonText(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// retune sets a PI controller's gains, keeping its output continuous.
func (c *pi) retune(kp, ki float64) {
	if ki != 0 && c.ki != 0 {
		c.integral *= c.ki / ki
	}
	c.kp, c.ki = kp, ki
}

func (m *CruisePedals) CheckTune(p Params) error { return checkTune("cruise-pedals", m.params, p) }

func (m *CruisePedals) Tune(p Params) {
	v, err := floats(p, []string{"setSpeed", "kp", "ki"}, []float64{20, 0.3, 0.05})
	if err != nil {
		return // Validate refused such a reload before it got here
	}
	if v[0] != m.SetSpeed {
		m.quality.reset(speedBand(v[0])) // a new set point: it settles anew
	}
	m.SetSpeed = v[0]
	m.ctl.retune(v[1], v[2])
	m.params = p
}

func (m *CruiseTorque) CheckTune(p Params) error { return checkTune("cruise-torque", m.params, p) }

func (m *CruiseTorque) Tune(p Params) {
	v, err := floats(p, []string{"setSpeed", "kp", "ki", "maxTorque"}, []float64{20, 300, 60, 1200})
	if err != nil {
		return
	}
	if v[0] != m.SetSpeed {
		m.quality.reset(speedBand(v[0]))
	}
	m.SetSpeed = v[0]
	m.ctl.retune(v[1], v[2])
	m.ctl.lo, m.ctl.hi = -v[3], v[3]
	m.params = p
}

func (m *HeadingHold) CheckTune(p Params) error { return checkTune("heading-hold", m.params, p) }

func (m *HeadingHold) Tune(p Params) {
	v, err := floats(p, []string{"headingDeg", "setSpeed", "kp"}, []float64{30, 10, 2})
	if err != nil {
		return
	}
	if h := v[0] * math.Pi / 180; h != m.Heading {
		m.quality.reset(headingBand)
	}
	m.Heading, m.SetSpeed, m.kp = v[0]*math.Pi/180, v[1], v[2]
	m.params = p
}

func (m *Follow) CheckTune(p Params) error { return checkTune("follow", m.params, p) }

func (m *Follow) Tune(p Params) {
	v, err := floats(p, []string{"timeGap", "standstill", "kGap", "maxSpeed", "kp", "ki"}, []float64{1.8, 5, 0.3, 35, 0.3, 0.05})
	if err != nil {
		return
	}
	profile, err := parseProfile(p["leadProfile"])
	if err != nil {
		return
	}
	if v[0] != m.timeGap {
		m.quality.reset(timeGapBand)
	}
	m.timeGap, m.standstill, m.kGap, m.maxSpeed, m.profile = v[0], v[1], v[2], v[3], profile
	m.ego.retune(v[4], v[5])
	m.lead.retune(v[4], v[5])
	m.params = p
}

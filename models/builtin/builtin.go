// Package builtin holds the controllers built into beamconnect: PI cruise
// control by pedals or by wheel torques, heading hold, and follow (a
// vehicle keeping its time gap behind another). Each binds by name to the
// fields the config maps, takes new set points and gains while it runs,
// and says how well it controls.
package builtin

import (
	"fmt"
	"slices"
	"strings"

	"beamconnect/models"
	"beamconnect/ports"
)

// Names of the built-in controllers.
func Names() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range specs {
			if !yield(k) {
				return
			}
		}
	})
}

// specs are each controller's parameters.
var specs = map[string][]models.Param{
	"cruise-pedals": {{Name: "setSpeed", Kind: models.Number}, {Name: "kp", Kind: models.Number}, {Name: "ki", Kind: models.Number}},
	"cruise-torque": {{Name: "setSpeed", Kind: models.Number}, {Name: "kp", Kind: models.Number}, {Name: "ki", Kind: models.Number}, {Name: "maxTorque", Kind: models.Positive}},
	"heading-hold":  {{Name: "headingDeg", Kind: models.Number}, {Name: "setSpeed", Kind: models.Number}, {Name: "kp", Kind: models.Number}},
	"follow": {{Name: "ego", Kind: models.Text}, {Name: "lead", Kind: models.Text}, {Name: "leadProfile", Check: checkProfile},
		{Name: "timeGap", Kind: models.Positive}, {Name: "standstill", Kind: models.Number}, {Name: "kGap", Kind: models.Positive},
		{Name: "maxSpeed", Kind: models.Positive}, {Name: "kp", Kind: models.Number}, {Name: "ki", Kind: models.Number}},
}

// Params are the parameters of the controller called name; nil for a name
// that is none.
func Params(name string) []models.Param { return specs[name] }

// numbersOf are the numeric parameters of each controller, with their
// defaults.
var numbersOf = map[string]numbers{
	"cruise-pedals": cruisePedalsParams,
	"cruise-torque": cruiseTorqueParams,
	"heading-hold":  headingHoldParams,
	"follow":        followParams,
}

// Numbers are the numeric parameters of the controller called name, and
// their defaults (nil for a name that is none).
func Numbers(name string) (names []string, defaults []float64) {
	n := numbersOf[name]
	return n.names, n.defs
}

// checkProfile checks follow's leadProfile.
func checkProfile(v any) string {
	if _, err := parseProfile(v); err != nil {
		return strings.TrimPrefix(err.Error(), "modelParams.leadProfile: ")
	}
	return ""
}

// Check reports whether the controller called name could bind to plan
// with params (which name what follow binds: its ego and lead), without
// starting anything.
func Check(name string, params models.Params, plan *ports.Plan) error {
	b := &binder{plan: plan, model: name}
	switch name {
	case "cruise-pedals":
		bindPedals(b)
	case "cruise-torque":
		bindTorque(b)
	case "heading-hold":
		bindHeading(b)
	case "follow":
		m := &Follow{}
		m.egoName, _ = params["ego"].(string)
		m.leadName, _ = params["lead"].(string)
		m.bind(b)
	}
	return b.err()
}

// Validate checks a controller's parameters and that plan maps the
// signals it needs.
func Validate(name string, params models.Params, plan *ports.Plan) []models.Finding {
	out := models.CheckParams(name, specs[name], params)
	if err := Check(name, params, plan); err != nil {
		out = append(out, models.Finding{Msg: err.Error()})
	}
	return out
}

// New builds the controller called name for plan, bound to the ports that
// carry the signals it needs. The parameters must have passed Validate.
func New(name string, params models.Params, plan *ports.Plan) (models.Model, error) {
	b := &binder{plan: plan, model: name}
	var m models.Model
	var err error
	switch name {
	case "cruise-pedals":
		m, err = newCruisePedals(b, params)
	case "cruise-torque":
		m, err = newCruiseTorque(b, params)
	case "heading-hold":
		m, err = newHeadingHold(b, params)
	case "follow":
		m, err = newFollow(b, params)
	default:
		return nil, fmt.Errorf("no built-in controller %q", name)
	}
	if err == nil {
		err = b.err()
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Parameters reads the numbers of the controller called name, for a
// setpoint of beamng.quality (models.ParamReader): modelParams' value, or
// the default.
type Parameters string

// ParamValue is the controller's number name under p.
func (c Parameters) ParamValue(p models.Params, _ *ports.Plan, name string) (float64, bool, []string) {
	names, defs := Numbers(string(c))
	i := slices.Index(names, name)
	if i < 0 {
		return 0, false, names
	}
	v, err := p.Float(name, defs[i])
	return v, err == nil, names
}

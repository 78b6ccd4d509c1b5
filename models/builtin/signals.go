package builtin

import (
	"math"

	"beamconnect/models"
)

// What each built-in controller computes on its way to its controls, kept
// after every step for a recording and the live page (models.Sampler):
// its setpoint, its error, what its PI controller asks for and the state
// of its integrator.

// signals are a controller's internal values after its latest step.
type signals struct {
	list   []models.Variable
	values []float64
}

func newSignals(list []models.Variable) signals {
	s := signals{list: list, values: make([]float64, len(list))}
	for i := range s.values {
		s.values[i] = math.NaN() // no step yet
	}
	return s
}

// Variables lists the controller's internal signals.
func (s *signals) Variables() []models.Variable { return s.list }

// Sample writes their values after the latest step.
func (s *signals) Sample(values []float64) { copy(values, s.values) }

func signal(name, unit, desc string) models.Variable {
	return models.Variable{Name: name, Unit: unit, Description: desc, Kind: "signal"}
}

var (
	cruisePedalsSignals = []models.Variable{
		signal("setSpeed", "m/s", "the speed to hold (modelParams.setSpeed)"),
		signal("speedError", "m/s", "setSpeed − groundspeed"),
		signal("pedal", "", "the PI controller's output, −1 to 1: throttle when positive, brake when negative"),
		signal("integral", "m", "the PI controller's integral of the speed error"),
	}
	cruiseTorqueSignals = []models.Variable{
		signal("setSpeed", "m/s", "the speed to hold (modelParams.setSpeed)"),
		signal("speedError", "m/s", "setSpeed − groundspeed"),
		signal("torque", "N·m", "the PI controller's output: each wheel's propulsion torque when positive, braking torque when negative"),
		signal("integral", "m", "the PI controller's integral of the speed error"),
	}
	headingHoldSignals = []models.Variable{
		signal("heading", "rad", "the heading to hold (modelParams.headingDeg)"),
		signal("headingError", "rad", "heading − yaw, the short way round"),
		signal("speedError", "m/s", "setSpeed − groundspeed"),
		signal("pedal", "", "the speed controller's output, −1 to 1: throttle when positive, brake when negative"),
	}
	followSignals = []models.Variable{
		signal("leadTarget", "m/s", "the lead's speed from modelParams.leadProfile"),
		signal("egoTarget", "m/s", "the ego's speed target: the lead's speed plus kGap × the gap's error"),
		signal("gapError", "m", "the gap less the gap to keep (timeGap × the ego's speed, at least standstill)"),
		signal("timeGap", "s", "the gap over the ego's speed"),
	}
)

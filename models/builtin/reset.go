package builtin

import "math"

// Reset empties the controller's integrator: BeamNG started over.
func (m *CruisePedals) Reset() error { m.ctl.integral, m.lastT = 0, math.NaN(); return nil }

// Reset empties the controller's integrator: BeamNG started over.
func (m *CruiseTorque) Reset() error { m.ctl.integral, m.lastT = 0, math.NaN(); return nil }

// Reset empties the speed controller's integrator: BeamNG started over.
func (m *HeadingHold) Reset() error { m.speedCtl.integral, m.lastT = 0, math.NaN(); return nil }

// Reset empties both controllers' integrators and starts the lead's
// profile again: BeamNG started over.
func (m *Follow) Reset() error {
	m.ego.integral, m.lead.integral = 0, 0
	m.lastT, m.t0 = math.NaN(), math.NaN()
	return nil
}

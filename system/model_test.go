package system

import (
	"math"
	"strings"
	"testing"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
)

// The example system against an emulated BeamNG, its FMUs each in a child
// process, in lockstep: the controller's demand reaches the pedals through
// the actuator, and the car holds 20 m/s (72 km/h, set in the parameter
// set in m/s and converted to the controller's km/h); every reply carries
// controls every component computed for its step; BeamNG never stalls.
func TestExampleHoldsItsSpeed(t *testing.T) {
	sys := load(t, example(t))
	m, err := New(sys, sys.Plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := couple(t, sys, m, emulator.Config{Steps: 40000, FreeRunning: true}, nil, nil)
	r.run(t)
	v := r.s.Values()
	if s := r.sums[0]; s.Stalls != 0 || v[coupling.ModelFaults] != 0 || v[coupling.Messages] < 3990 || v[coupling.NeutralReplies] != 0 {
		t.Errorf("BeamNG: %v; faults %d, messages %d, replies without controls %d\n%s", s, v[coupling.ModelFaults], v[coupling.Messages], v[coupling.NeutralReplies], r.log)
	}
	if speed := r.ems[0].Vehicle().V; math.Abs(speed-20) > 1 {
		t.Errorf("the car drives %.2f m/s after 20 s: want the controller's 20 m/s\n%s", speed, r.log)
	}
	var names []string
	for _, v := range m.Variables() {
		names = append(names, v.Component+"."+v.Name+" ["+v.Unit+"]")
	}
	want := "vehicle.groundspeed [m/s], vehicle.throttle [], vehicle.brake [], controller.speed [km/h], controller.demand [], controller.setSpeed [km/h], controller.kp [], controller.ki [], " +
		"actuator.command [], actuator.position [], actuator.throttle [], actuator.brake [], actuator.rateLimit [1/s], actuator.delay [s]"
	if got := strings.Join(names, ", "); got != want {
		t.Errorf("recorded:\n%s\nwant\n%s", got, want)
	}
}

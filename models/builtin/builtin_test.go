package builtin

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/config/configtest"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/ports/portstest"
)

func plan(t *testing.T, file string) *ports.Plan { return configtest.Plan(t, file) }

// newModel builds a controller as models/kinds does: its parameters
// checked, then bound.
func newModel(t *testing.T, name string, p models.Params, plan *ports.Plan, _ any) (models.Model, error) {
	t.Helper()
	for _, f := range Validate(name, p, plan) {
		if !f.Warning {
			return nil, f
		}
	}
	return New(name, p, plan)
}

func TestCruisePedalsStep(t *testing.T) {
	p := plan(t, "../../examples/cruise-pedals.json")
	m, err := newModel(t, "cruise-pedals", models.Params{"setSpeed": 20.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, ins := portstest.Vectors(p)
	speed, _, _ := p.Find(0, "groundspeed")
	th, thE, _ := p.Find(1, "throttle")
	br, brE, _ := p.Find(1, "brake")
	outs[speed][0] = 10
	m.Step(0, outs, ins)
	m.Step(0.005, outs, ins)
	if ins[th][thE] <= 0 || ins[br][brE] != 0 {
		t.Errorf("below the set speed: throttle %v brake %v", ins[th][thE], ins[br][brE])
	}
	outs[speed][0] = 40
	m.Step(0.010, outs, ins)
	if ins[th][thE] != 0 || ins[br][brE] <= 0 {
		t.Errorf("above the set speed: throttle %v brake %v", ins[th][thE], ins[br][brE])
	}
	// No speed (BeamNG sent none that is finite): no controls computed.
	outs[speed][0] = math.NaN()
	if m.Step(0.015, outs, ins) || ins[th][thE] != 0 {
		t.Error("acted on no speed")
	}
	outs[speed][0] = 10
	if a := testing.AllocsPerRun(100, func() { m.Step(0.02, outs, ins) }); a != 0 {
		t.Errorf("%v allocs per step", a)
	}
}

func TestCruiseTorqueSendsNegativeBraking(t *testing.T) {
	p := plan(t, "../../examples/cruise-torque.json")
	m, err := newModel(t, "cruise-torque", models.Params{"setSpeed": 10.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, ins := portstest.Vectors(p)
	speed, _, _ := p.Find(0, "groundspeed")
	bp, be, _ := p.Find(1, "wheelRR_brakingTorque")
	pp, pe, _ := p.Find(1, "wheelRR_propulsionTorque")
	dp, de, _ := p.Find(1, "driveMode")
	outs[speed][0] = 30
	m.Step(0, outs, ins)
	m.Step(0.005, outs, ins)
	if ins[bp][be] >= 0 || ins[pp][pe] != 0 || ins[dp][de] != 1 {
		t.Errorf("too fast: braking %v (want negative: BeamNG negates it), propulsion %v, drive mode %v", ins[bp][be], ins[pp][pe], ins[dp][de])
	}
}

func TestHeadingHoldSteersTheShortWay(t *testing.T) {
	p := plan(t, "../../examples/heading-hold.json")
	m, err := newModel(t, "heading-hold", models.Params{"headingDeg": 170.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, ins := portstest.Vectors(p)
	yaw, _, _ := p.Find(0, "yaw")
	st, se, _ := p.Find(1, "steering")
	outs[yaw][0] = -170 * math.Pi / 180 // 20° away across ±180°
	m.Step(0, outs, ins)
	m.Step(0.005, outs, ins)
	if ins[st][se] >= 0 {
		t.Errorf("steering %v: from -170° to 170° the short way is a right turn (negative)", ins[st][se])
	}
}

// A reload moves a controller to the new ports without resetting it.
func TestRebindKeepsState(t *testing.T) {
	p := plan(t, "../../examples/cruise-pedals.json")
	m, _ := newModel(t, "cruise-pedals", nil, p, nil)
	cp := m.(*CruisePedals)
	outs, ins := portstest.Vectors(p)
	sp, _, _ := p.Find(0, "groundspeed")
	outs[sp][0] = 19.5 // near the set speed: unsaturated, so the integrator moves
	for i := range 10 {
		m.Step(float64(i)*0.005, outs, ins)
	}
	integral := cp.ctl.integral
	// The same signals on other ports: groundspeed moves behind yaw.
	q := plan(t, "../../examples/heading-hold.json")
	commit, err := m.(models.Rebinder).Rebind(q, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _, _ := p.Find(0, "groundspeed"); cp.refs.speed.Port != ps {
		t.Error("preparing the rebind changed the running binding")
	}
	commit()
	if cp.ctl.integral != integral || integral == 0 {
		t.Errorf("integral %v → %v", integral, cp.ctl.integral)
	}
	if qs, _, _ := q.Find(0, "groundspeed"); cp.refs.speed.Port != qs {
		t.Errorf("speed bound to port %d, want %d", cp.refs.speed.Port, qs)
	}
	if _, err := m.(models.Rebinder).Rebind(plan(t, "../../examples/logging.json"), nil, nil); err == nil {
		t.Error("rebinding to a plan without throttle succeeded")
	} else if qs, _, _ := q.Find(0, "groundspeed"); cp.refs.speed.Port != qs {
		t.Error("a failed rebind changed the bindings")
	}
}

// cruise-torque on Gen 2: BeamNG applies the wheel torques its CSV lists
// (there is no drive mode), so the model runs when the CSV has the eight
// wheel-torque rows and the config maps them, and otherwise names what to
// map and, for a CSV without them, the rows to add as the CSV writes them.
func TestCruiseTorqueGen2(t *testing.T) {
	for _, tt := range []struct {
		config string
		want   []string // error text; none: the model binds
		not    string   // text the error must not have
	}{
		{config: "../../examples/gen2-cruise-torque.json"},
		{config: "../../examples/gen2-cruise.json", want: []string{
			"model cruise-torque needs the config to map inputs Wheels/propulsionTorqueFL, inputs Wheels/brakingTorqueFL,",
			"inputs Wheels/brakingTorqueRR: BeamNG sends and applies only what a CSV lists, so first add to gen2-cruise.csv the rows " +
				"signalFrom,Wheels,propulsionTorqueFL,value,number; signalFrom,Wheels,brakingTorqueFL,value,number;",
			"; signalFrom,Wheels,brakingTorqueRR,value,number (in BeamNG's editor)",
		}, not: "driveMode"},
		{config: "testdata/gen2-torque-unmapped.json", want: []string{
			"model cruise-torque needs the config to map inputs Wheels/propulsionTorqueFL, inputs Wheels/propulsionTorqueFR, inputs Wheels/propulsionTorqueRL, inputs Wheels/propulsionTorqueRR",
		}, not: "add to"},
	} {
		t.Run(filepath.Base(tt.config), func(t *testing.T) {
			p := plan(t, tt.config)
			m, err := newModel(t, "cruise-torque", models.Params{"setSpeed": 10.0}, p, nil)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("%s: %v", tt.config, err)
					return
				}
				outs, ins := portstest.Vectors(p)
				speed, _, _ := p.Find(0, "groundspeed")
				bp, be, _ := p.Find(1, "wheelRL_brakingTorque")
				pp, pe, _ := p.Find(1, "wheelRL_propulsionTorque")
				outs[speed][0] = 30
				m.Step(0, outs, ins)
				m.Step(0.005, outs, ins)
				if ins[bp][be] >= 0 || ins[pp][pe] != 0 || ins[0][0] != 1 {
					t.Errorf("%s too fast: braking %v (want negative), propulsion %v, directive %v (want untouched: no drive mode)", tt.config, ins[bp][be], ins[pp][pe], ins[0][0])
				}
				outs[speed][0] = 2
				m.Step(0.010, outs, ins)
				if ins[pp][pe] <= 0 || ins[bp][be] != 0 {
					t.Errorf("%s too slow: propulsion %v, braking %v", tt.config, ins[pp][pe], ins[bp][be])
				}
				return
			}
			if err == nil {
				t.Errorf("%s: accepted", tt.config)
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: missing %q in\n%v", tt.config, w, err)
				}
			}
			if strings.Contains(err.Error(), tt.not) {
				t.Errorf("%s: %q in\n%v", tt.config, tt.not, err)
			}
		})
	}
	// follow binds on a Gen 2 fleet as on Gen 1: each vehicle's own CSV rows.
	if _, err := newModel(t, "follow", nil, plan(t, "../../examples/gen2-follow.json"), nil); err != nil {
		t.Errorf("follow on the Gen 2 fleet: %v", err)
	}
}

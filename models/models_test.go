package models

import (
	"math"
	"strings"
	"testing"
	"time"

	"beamconnect/models/exectest"
	"beamconnect/ports"
	"beamconnect/ports/portstest"
)

func plan(t *testing.T, file string) *ports.Plan { return portstest.Load(t, file) }

// vectors are port vectors at their initial values, status connected.
func vectors(p *ports.Plan) (outs, ins [][]float64) {
	for _, pt := range p.Outputs {
		outs = append(outs, make([]float64, pt.Width))
	}
	for _, pt := range p.Inputs {
		v := make([]float64, pt.Width)
		for _, f := range pt.Fields {
			for k := range f.Width {
				v[f.Offset+k] = f.Initial
			}
		}
		ins = append(ins, v)
	}
	outs[0][0] = 3
	return outs, ins
}

func TestNewErrors(t *testing.T) {
	p := plan(t, "../examples/cruise-pedals.json")
	for _, tt := range []struct {
		name   string
		params Params
		want   string
	}{
		{"autopilot", nil, `model "autopilot": expected one of cruise-pedals, cruise-torque, exec, fmu, follow, heading-hold, hold`},
		{"cruise-pedals", Params{"setspeed": 3.0}, `model cruise-pedals: modelParams.setspeed: model cruise-pedals has no parameter "setspeed" (did you mean "setSpeed"?)`},
		{"cruise-pedals", Params{"speed": 3.0}, `model cruise-pedals has no parameter "speed": expected one of setSpeed, kp, ki`},
		{"cruise-pedals", Params{"setSpeed": "fast"}, `modelParams.setSpeed: expected a number, got the string "fast"`},
		{"cruise-torque", Params{"maxTorque": -5.0}, "modelParams.maxTorque: expected a number above 0, got -5"},
		{"hold", Params{"x": 1.0}, "model hold takes no parameters"},
		{"exec", Params{"command": "true", "restart": "yes"}, `modelParams.restart: expected true or false, got the string "yes"`},
		{"exec", Params{"command": "true", "deadlineMs": 100.0}, "modelParams.deadlineMs: 100 ms is longer than the model timeout (25 ms, beamng.modelTimeoutMs)"},
		{"cruise-torque", nil, "model cruise-torque needs the config to map inputs wheelFL_propulsionTorque, inputs wheelFL_brakingTorque"},
		{"heading-hold", nil, "model heading-hold needs the config to map outputs yaw, inputs steering"},
		{"exec", nil, "modelParams.command: missing: exec needs the program to run"},
		{"exec", Params{"command": []string{}}, "modelParams.command: expected the program to run"},
		{"exec", Params{"command": "/no/such/program"}, "starting \"/no/such/program\""},
	} {
		_, err := New(tt.name, tt.params, p, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%s, %v) = %v, want %q", tt.name, tt.params, err, tt.want)
		}
	}
}

func TestCruisePedalsStep(t *testing.T) {
	p := plan(t, "../examples/cruise-pedals.json")
	m, err := New("cruise-pedals", Params{"setSpeed": 20.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, ins := vectors(p)
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
	p := plan(t, "../examples/cruise-torque.json")
	m, err := New("cruise-torque", Params{"setSpeed": 10.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, ins := vectors(p)
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
	p := plan(t, "../examples/heading-hold.json")
	m, err := New("heading-hold", Params{"headingDeg": 170.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs, ins := vectors(p)
	yaw, _, _ := p.Find(0, "yaw")
	st, se, _ := p.Find(1, "steering")
	outs[yaw][0] = -170 * math.Pi / 180 // 20° away across ±180°
	m.Step(0, outs, ins)
	m.Step(0.005, outs, ins)
	if ins[st][se] >= 0 {
		t.Errorf("steering %v: from -170° to 170° the short way is a right turn (negative)", ins[st][se])
	}
}

// The exec protocol with a program: the header, one answer per step,
// and a program that stops answering costs a counted miss, not a hang.
func TestExec(t *testing.T) {
	p := plan(t, "../examples/cruise-pedals.json")
	p.ModelTimeout = 5
	// Answers directive 1, throttle 0.5, brake 0, driveMode 0 to the first
	// two steps, then sleeps.
	script := exectest.Command("header=# columns: t status groundspeed*| directive throttle brake driveMode",
		"answer=1 0.5 0 0", "answer=1 nan 0.25 0", "read", "sleep=5s")
	m, err := New("exec", Params{"command": script, "deadlineMs": 500.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := m.(*Exec)
	outs, ins := vectors(p)
	th, thE, _ := p.Find(1, "throttle")
	br, brE, _ := p.Find(1, "brake")
	m.Step(0, outs, ins)
	if ins[th][thE] != 0.5 || ins[0][0] != 1 {
		t.Fatalf("first answer not applied: %v", ins)
	}
	m.Step(0.005, outs, ins)
	if !math.IsNaN(ins[th][thE]) || ins[br][brE] != 0.25 {
		t.Fatalf("second answer not applied: %v", ins)
	}
	start := time.Now()
	m.Step(0.010, outs, ins)
	if took := time.Since(start); took > 2*time.Second || ex.Missed() != 1 || ins[br][brE] != 0.25 {
		t.Errorf("a silent program: step took %v, missed %d, brake %v (want the last value kept)", took, ex.Missed(), ins[br][brE])
	}
	done := make(chan error)
	go func() { done <- m.(Closer).Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a program that does not exit")
	}
}

// A reload moves a controller to the new ports without resetting it.
func TestRebindKeepsState(t *testing.T) {
	p := plan(t, "../examples/cruise-pedals.json")
	m, _ := New("cruise-pedals", nil, p, nil)
	cp := m.(*CruisePedals)
	outs, ins := vectors(p)
	sp, _, _ := p.Find(0, "groundspeed")
	outs[sp][0] = 19.5 // near the set speed: unsaturated, so the integrator moves
	for i := range 10 {
		m.Step(float64(i)*0.005, outs, ins)
	}
	integral := cp.ctl.integral
	// The same signals on other ports: groundspeed moves behind yaw.
	q := plan(t, "../examples/heading-hold.json")
	commit, err := m.(Rebinder).Rebind(q, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _, _ := p.Find(0, "groundspeed"); cp.refs.speed.port != ps {
		t.Error("preparing the rebind changed the running binding")
	}
	commit()
	if cp.ctl.integral != integral || integral == 0 {
		t.Errorf("integral %v → %v", integral, cp.ctl.integral)
	}
	if qs, _, _ := q.Find(0, "groundspeed"); cp.refs.speed.port != qs {
		t.Errorf("speed bound to port %d, want %d", cp.refs.speed.port, qs)
	}
	if _, err := m.(Rebinder).Rebind(plan(t, "../examples/logging.json"), nil, nil); err == nil {
		t.Error("rebinding to a plan without throttle succeeded")
	} else if qs, _, _ := q.Find(0, "groundspeed"); cp.refs.speed.port != qs {
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
		{config: "../examples/gen2-cruise-torque.json"},
		{config: "../examples/gen2-cruise.json", want: []string{
			"model cruise-torque needs the config to map inputs Wheels/propulsionTorqueFL, inputs Wheels/brakingTorqueFL,",
			"inputs Wheels/brakingTorqueRR: BeamNG sends and applies only what a CSV lists, so first add to gen2-cruise.csv the rows " +
				"signalFrom,Wheels,propulsionTorqueFL,value,number; signalFrom,Wheels,brakingTorqueFL,value,number;",
			"; signalFrom,Wheels,brakingTorqueRR,value,number (in BeamNG's editor)",
		}, not: "driveMode"},
		{config: "testdata/gen2-torque-unmapped.json", want: []string{
			"model cruise-torque needs the config to map inputs Wheels/propulsionTorqueFL, inputs Wheels/propulsionTorqueFR, inputs Wheels/propulsionTorqueRL, inputs Wheels/propulsionTorqueRR",
		}, not: "add to"},
	} {
		p := plan(t, tt.config)
		m, err := New("cruise-torque", Params{"setSpeed": 10.0}, p, nil)
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tt.config, err)
				continue
			}
			outs, ins := vectors(p)
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
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", tt.config)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: missing %q in\n%v", tt.config, w, err)
			}
		}
		if strings.Contains(err.Error(), tt.not) {
			t.Errorf("%s: %q in\n%v", tt.config, tt.not, err)
		}
	}
	// follow binds on a Gen 2 fleet as on Gen 1: each vehicle's own CSV rows.
	if _, err := New("follow", nil, plan(t, "../examples/gen2-follow.json"), nil); err != nil {
		t.Errorf("follow on the Gen 2 fleet: %v", err)
	}
}

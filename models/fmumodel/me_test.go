package fmumodel

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/logtest"
	"beamconnect/models"
	"beamconnect/ports"
)

// meRig builds a models.Model Exchange test FMU and runs it as the model of the
// cruise-pedals rig (integrated by beamconnect).
func meRig(t *testing.T, o testfmu.MEOptions, extra models.Params) (*FMU, *ports.Plan, *logtest.Buffer) {
	t.Helper()
	return rigOf(t, testfmu.MEForTest(t, o.Model+".fmu", o), with(extra, "interface", "ModelExchange"))
}

// rigOf runs the FMU at path as the model of the cruise-pedals rig, each
// step awaited however long it takes: for tests of values, not timing.
func rigOf(t *testing.T, path string, extra models.Params) (*FMU, *ports.Plan, *logtest.Buffer) {
	t.Helper()
	p := plan(t, "../../examples/cruise-pedals.json")
	p.ModelTimeout = 5
	params := models.Params{"path": path, "deadlineMs": 5000.0}
	for k, v := range extra {
		params[k] = v
	}
	log := &logtest.Buffer{}
	m, err := newModel(params, p, log.Logger())
	if err != nil {
		t.Fatal(err)
	}
	f := m.(*FMU)
	t.Cleanup(func() { f.Close() })
	return f, p, log
}

// sample is the FMU's outputs (bound to throttle and brake) at a time.
type sample struct{ t, a, b float64 }

// trajectory steps the rig n periods with groundspeed speed and records
// what drives throttle and brake after each: the model at the end of the
// step, one period after the message's time.
func trajectory(t *testing.T, m *FMU, p *ports.Plan, log *logtest.Buffer, n int, speed float64) []sample {
	t.Helper()
	outs, ins := vectors(p)
	sp, spE, _ := p.Find(0, "groundspeed")
	var got []sample
	for k := range n {
		outs[0][0] = 3
		outs[sp][spE] = speed
		tm := float64(k) * p.Period
		if !m.Step(tm, outs, ins) {
			if m.Ended() != nil {
				return got
			}
			t.Fatalf("the step at %g s gave no controls: fault %v\n%s", tm, m.Fault(), log)
		}
		a, b := pedals(t, p, ins)
		got = append(got, sample{tm + p.Period, a, b})
	}
	return got
}

// hosts are where an FMU runs: in its child process and in process.
var hosts = []struct {
	name  string
	extra models.Params
}{{"child", nil}, {"in process", models.Params{"inProcess": true}}}

// skipVariant leaves out, with -short (the race detector's run), half
// of the FMI versions × hosts: FMI 2.0 in process and FMI 3.0 in the
// child process still cover both of each.
func skipVariant(major int, host string) bool {
	return testing.Short() && (major == 2) == (host == "child")
}

// variants runs f as a subtest for each FMI version and host ("FMI 3
// child", after name when there is one), but those skipVariant leaves
// out; host holds the host's modelParams.
func variants(t *testing.T, name string, f func(t *testing.T, major int, host models.Params)) {
	for _, major := range []int{2, 3} {
		for _, h := range hosts {
			if skipVariant(major, h.name) {
				continue
			}
			sub := fmt.Sprintf("FMI %d %s", major, h.name)
			if name != "" {
				sub = name + " " + sub
			}
			t.Run(sub, func(t *testing.T) {
				// Side by side: a step is mostly a wait for the FMU's
				// answer, across a process or a thread.
				t.Parallel()
				f(t, major, h.extra)
			})
		}
	}
}

// x' = -k x + u, x(0) = 1, with a jump of 1 at a time event: the closed
// form c/k + (1 - c/k) e^(-kt) + [t ≥ T] e^(-k(t-T)), for every solver,
// both FMI versions, in a child process and in process.
func TestMEDecayMatchesClosedForm(t *testing.T) {
	const k, c, kick = 0.5, 0.2, 1.0025 // the kick falls inside a period
	exact := func(t float64) float64 {
		x := c/k + (1-c/k)*math.Exp(-k*t)
		if t >= kick {
			x += math.Exp(-k * (t - kick))
		}
		return x
	}
	for _, tt := range []struct {
		solver string
		extra  models.Params
		tol    float64
	}{
		{"dopri5", models.Params{"tolerance": 1e-9}, 1e-8},
		{"rk4", nil, 1e-9},
		{"euler", models.Params{"maxStep": 0.001}, 2e-3},
	} {
		t.Run(tt.solver, func(t *testing.T) {
			variants(t, "", func(t *testing.T, major int, host models.Params) {
				extra := models.Params{"solver": tt.solver, "inputs": map[string]any{"u": "groundspeed"},
					"outputs": map[string]any{"x": "throttle"}, "parameters": map[string]any{"k": k, "tKick": kick}}
				for key, v := range tt.extra {
					extra[key] = v
				}
				for key, v := range host {
					extra[key] = v
				}
				m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "decay"}, extra)
				worst, at := 0.0, 0.0
				for _, s := range trajectory(t, m, p, log, 400, c) {
					if d := math.Abs(s.a - exact(s.t)); d > worst {
						worst, at = d, s.t
					}
				}
				if worst > tt.tol {
					t.Errorf("x differs from the closed form by %g at t = %g s (allowed %g)\n%s", worst, at, tt.tol, log)
				}
				if ev, steps := m.events.Load(), m.steps.Load(); ev != 1 || steps < 399 {
					t.Errorf("%d events, %d solver steps: expected one event (the kick) and a step a period at least", ev, steps)
				}
			})
		})
	}
}

// ball is the bouncing ball's height at t, from its analytic bounce
// times: dropped from h0, each bounce leaves it with e times the speed it
// hit the floor with, and one that leaves it slower than vmin rests.
func ball(t, h0, g, e, vmin float64) (h float64, bounces []float64) {
	tb := math.Sqrt(2 * h0 / g)
	if t < tb {
		return h0 - g*t*t/2, nil
	}
	v := e * g * tb
	for {
		bounces = append(bounces, tb)
		if v < vmin {
			return 0, bounces
		}
		dt := 2 * v / g
		if t < tb+dt {
			s := t - tb
			return v*s - g*s*s/2, bounces
		}
		tb += dt
		v *= e
	}
}

// The bouncing ball never falls through the floor, and bounces when the
// analytic solution does: its height matches it throughout (the flight is
// a parabola, which dopri5 and rk4 integrate exactly; what is left is the
// location of each bounce), until it rests.
func TestMEBallBouncesOnTime(t *testing.T) {
	const h0, g, e, vmin = 1.0, 9.81, 0.7, 0.1
	for _, solver := range []string{"dopri5", "rk4"} {
		variants(t, solver, func(t *testing.T, major int, host models.Params) {
			extra := models.Params{"solver": solver, "outputs": map[string]any{"h": "throttle", "v": "brake"}}
			for key, v := range host {
				extra[key] = v
			}
			m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "ball"}, extra)
			worst, at := 0.0, 0.0
			lowest := math.Inf(1)
			for _, s := range trajectory(t, m, p, log, 600, 0) {
				lowest = min(lowest, s.a)
				want, _ := ball(s.t, h0, g, e, vmin)
				if d := math.Abs(s.a - want); d > worst {
					worst, at = d, s.t
				}
			}
			if lowest < 0 {
				t.Errorf("the ball fell through the floor: h = %g", lowest)
			}
			if worst > 1e-6 {
				t.Errorf("h differs from the analytic bounces by %g m at t = %g s\n%s", worst, at, log)
			}
			_, bounces := ball(3, h0, g, e, vmin)
			if ev := m.events.Load(); ev < int64(len(bounces)) {
				t.Errorf("%d events for %d bounces", ev, len(bounces))
			}
		})
	}
}

// vdpRK4 integrates the Van der Pol oscillator from (2, 0) with the
// classical Runge–Kutta method at step h, written here independently of
// beamconnect's solvers, and returns x1 at each multiple of every.
func vdpRK4(mu, h, every float64, n int) []float64 {
	f := func(x [2]float64) [2]float64 {
		return [2]float64{x[1], mu*(1-x[0]*x[0])*x[1] - x[0]}
	}
	add := func(x, d [2]float64, s float64) [2]float64 { return [2]float64{x[0] + s*d[0], x[1] + s*d[1]} }
	x := [2]float64{2, 0}
	per := int(math.Round(every / h))
	var out []float64
	for i := 1; i <= n*per; i++ {
		k1 := f(x)
		k2 := f(add(x, k1, h/2))
		k3 := f(add(x, k2, h/2))
		k4 := f(add(x, k3, h))
		x[0] += h / 6 * (k1[0] + 2*k2[0] + 2*k3[0] + k4[0])
		x[1] += h / 6 * (k1[1] + 2*k2[1] + 2*k3[1] + k4[1])
		if i%per == 0 {
			out = append(out, x[0])
		}
	}
	return out
}

// Van der Pol (mu 3: nonlinear, its relaxation oscillation stiff-ish)
// matches a fine-step RK4 computed here, within the solver's tolerance.
func TestMEVanDerPolMatchesReference(t *testing.T) {
	const mu, n = 3.0, 800 // 4 s
	p := plan(t, "../../examples/cruise-pedals.json")
	ref := vdpRK4(mu, 1e-5, p.Period, n)
	for _, tt := range []struct {
		solver string
		extra  models.Params
		tol    float64
	}{
		{"dopri5", models.Params{"tolerance": 1e-8}, 1e-6},
		{"rk4", models.Params{"maxStep": 0.001}, 1e-7},
	} {
		t.Run(tt.solver, func(t *testing.T) {
			variants(t, "", func(t *testing.T, major int, host models.Params) {
				extra := models.Params{"solver": tt.solver, "outputs": map[string]any{"x1": "throttle", "x2": "brake"},
					"parameters": map[string]any{"mu": mu}}
				for key, v := range tt.extra {
					extra[key] = v
				}
				for key, v := range host {
					extra[key] = v
				}
				m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "vdp"}, extra)
				worst, at := 0.0, 0.0
				for i, s := range trajectory(t, m, p, log, n, 0) {
					if d := math.Abs(s.a - ref[i]); d > worst {
						worst, at = d, s.t
					}
				}
				if worst > tt.tol {
					t.Errorf("x1 differs from the reference by %g at t = %g s (allowed %g)\n%s", worst, at, tt.tol, log)
				}
			})
		})
	}
}

// A ball that never comes to rest bounces ever shorter: a bounce shorter
// than the fixed step begins and ends inside one step. That is a fault
// said at once (the state event was stepped over, the step is too
// coarse, the way out), for good, never a ball below the floor.
func TestMEMissedEventIsAFault(t *testing.T) {
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		extra := models.Params{"solver": "rk4", "outputs": map[string]any{"h": "throttle", "v": "brake"},
			"parameters": map[string]any{"vmin": 0.0}, "restart": true}
		for key, v := range host {
			extra[key] = v
		}
		m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "ball"}, extra)
		outs, ins := vectors(p)
		k := 0
		for ; k < 1000 && m.Fault() == nil; k++ {
			outs[0][0] = 3
			if m.Step(float64(k)*p.Period, outs, ins) {
				if h, _ := pedals(t, p, ins); h < 0 {
					t.Fatalf("the ball is below the floor at %g s: h = %g", float64(k+1)*p.Period, h)
				}
			}
		}
		err := m.Fault()
		if err == nil || !strings.Contains(err.Error(), "a state event was stepped over") || !strings.Contains(err.Error(), "maxStep") {
			t.Fatalf("after %d steps: fault %v\n%s", k, err, log)
		}
		// Zeno: the bounces shrink to below 5 ms by 2.3 s.
		if at := float64(k) * p.Period; at < 2 || at > 2.6 {
			t.Errorf("the fault came at %g s: expected when the bounces became shorter than the 5 ms step", at)
		}
		for range 20 {
			outs[0][0] = 4
			if m.Step(float64(k)*p.Period, outs, ins) {
				t.Fatal("the FMU gave controls after the fault")
			}
			k++
		}
		if m.Restarts() != 0 || !strings.Contains(log.String(), "not started again") {
			t.Errorf("restarts %d: a missed event is for good\n%s", m.Restarts(), log)
		}
	})
}

// A models.Model Exchange FMU that ends the simulation in its event update (the
// ball at its third bounce) ends as a co-simulation one does: at the
// bounce's time, located as any state event, with its reason, no fault.
func TestMEFMUTerminates(t *testing.T) {
	const h0, g, e, vmin = 1.0, 9.81, 0.7, 0.1
	_, bounces := ball(3, h0, g, e, vmin)
	want := fmt.Sprintf("t = %.9g s", bounces[2])
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		extra := models.Params{"outputs": map[string]any{"h": "throttle"}, "parameters": map[string]any{"stopAfter": 3.0}}
		for key, v := range host {
			extra[key] = v
		}
		m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "ball"}, extra)
		got := trajectory(t, m, p, log, 600, 0)
		err := m.Ended()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the ball bounced as often as stopAfter says") {
			t.Fatalf("ended %v, want %s\n%s", err, want, log)
		}
		if last := got[len(got)-1].t; last > bounces[2]+p.Period || m.Fault() != nil || m.Restarts() != 0 {
			t.Errorf("controls until %g s, fault %v, restarts %d", last, m.Fault(), m.Restarts())
		}
	})
}

// Discrete inputs (boost, a Real bound to gear; mode, an enumeration
// bound to rpm) that change between messages are set in event mode, as
// FMI has it (the FMU refuses them otherwise), and take effect from that
// message's time: x follows the closed form of x' = -k x + u + mode ×
// boost piece by piece, FMI 2.0 (an Integer) and 3.0 (an Int64).
func TestMEDiscreteInputInEventMode(t *testing.T) {
	const k, u = 0.5, 0.2
	boost := func(step int) float64 {
		if step >= 100 && step < 300 {
			return 3
		}
		return 0
	}
	mode := func(step int) float64 {
		if step >= 200 {
			return 2 // Sport
		}
		return 1
	}
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		extra := models.Params{"tolerance": 1e-10, "inputs": map[string]any{"u": "groundspeed", "boost": "gear", "mode": "rpm"},
			"outputs": map[string]any{"x": "throttle"}, "parameters": map[string]any{"k": k}}
		for key, v := range host {
			extra[key] = v
		}
		m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "decay"}, extra)
		outs, ins := vectors(p)
		sp, spE, _ := p.Find(0, "groundspeed")
		g, gE, _ := p.Find(0, "gear")
		r, rE, _ := p.Find(0, "rpm")
		x, worst := 1.0, 0.0
		for step := range 400 {
			outs[0][0] = 3
			outs[sp][spE], outs[g][gE], outs[r][rE] = u, boost(step), mode(step)
			if !m.Step(float64(step)*p.Period, outs, ins) {
				t.Fatalf("step %d: no controls: %v\n%s", step, m.Fault(), log)
			}
			c := u + mode(step)*boost(step)
			x = c/k + (x-c/k)*math.Exp(-k*p.Period)
			th, _ := pedals(t, p, ins)
			worst = max(worst, math.Abs(th-x))
		}
		if worst > 1e-8 || m.events.Load() != 3 {
			t.Errorf("x differs from the closed form by %g; %d events (want 3: the inputs' changes)\n%s", worst, m.events.Load(), log)
		}
	})
}

// A ball that never rests, under dopri5: the step after each bounce is no
// longer than the last flight, so every bounce is seen, however short, and
// the trajectory matches the analytic one up to the time the bounces pile
// up (where the ball would come to rest after infinitely many). There the
// events pile up: a fault for good that says so, never a ball below the
// floor.
func TestMEZenoBallIsAFault(t *testing.T) {
	const h0, g, e = 1.0, 9.81, 0.7
	t1 := math.Sqrt(2 * h0 / g)
	zeno := t1 + 2*e*g*t1/g/(1-e) // the sum of every flight
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		extra := models.Params{"outputs": map[string]any{"h": "throttle"}, "parameters": map[string]any{"vmin": 0.0}}
		for key, v := range host {
			extra[key] = v
		}
		m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "ball"}, extra)
		outs, ins := vectors(p)
		worst, k := 0.0, 0
		for ; k < 1000 && m.Fault() == nil; k++ {
			outs[0][0] = 3
			if !m.Step(float64(k)*p.Period, outs, ins) {
				continue
			}
			at := float64(k+1) * p.Period
			hgt, _ := pedals(t, p, ins)
			if hgt < 0 {
				t.Fatalf("the ball is below the floor at %g s: h = %g", at, hgt)
			}
			if want, _ := ball(at, h0, g, e, 0); at < zeno-0.05 {
				worst = max(worst, math.Abs(hgt-want))
			}
		}
		if worst > 1e-6 {
			t.Errorf("h differs from the analytic bounces by %g m", worst)
		}
		err := m.Fault()
		if err == nil || !strings.Contains(err.Error(), "the FMU's state events pile up") || m.Restarts() != 0 {
			t.Fatalf("fault %v, restarts %d\n%s", err, m.Restarts(), log)
		}
		if at := float64(k) * p.Period; math.Abs(at-zeno) > 2*p.Period {
			t.Errorf("the fault came at %g s; the bounces pile up at %g s", at, zeno)
		}
	})
}

// A tunable parameter of a running models.Model Exchange FMU (k) changed live is
// set in event mode, as FMI has it (the FMU refuses it otherwise), and x
// follows the closed form with the new rate from the step it came with.
func TestMETuneLive(t *testing.T) {
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		extra := models.Params{"tolerance": 1e-10, "outputs": map[string]any{"x": "throttle"}, "parameters": map[string]any{"k": 0.5}}
		for key, v := range host {
			extra[key] = v
		}
		m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "decay"}, extra)
		outs, ins := vectors(p)
		x, k, worst := 1.0, 0.5, 0.0
		running := with(extra, "path", m.file)
		running["interface"], running["deadlineMs"] = "ModelExchange", 5000.0
		for step := range 200 {
			if step == 100 {
				tuned := with(running, "parameters", map[string]any{"k": 2.0})
				commit, err := m.Rebind(p, running, tuned)
				if err != nil {
					t.Fatalf("Rebind: %v\n%s", err, log)
				}
				commit()
				k = 2
			}
			outs[0][0] = 3
			if !m.Step(float64(step)*p.Period, outs, ins) {
				t.Fatalf("step %d: no controls: %v\n%s", step, m.Fault(), log)
			}
			x *= math.Exp(-k * p.Period)
			th, _ := pedals(t, p, ins)
			worst = max(worst, math.Abs(th-x))
		}
		if worst > 1e-8 {
			t.Errorf("x differs from the closed form by %g\n%s", worst, log)
		}
	})
}

// A models.Model Exchange FMU's step in its child process allocates nothing on
// beamconnect's side, events and all (the ball bounces in these steps).
func TestMEChildStepAllocs(t *testing.T) {
	m, p, log := meRig(t, testfmu.MEOptions{FMI: 3, Model: "ball"}, models.Params{"outputs": map[string]any{"h": "throttle"}})
	outs, ins := vectors(p)
	outs[0][0] = 3
	k := 0
	step := func() { k++; m.Step(float64(k)*p.Period, outs, ins) }
	step()
	if n := testing.AllocsPerRun(300, step); n != 0 {
		t.Errorf("%v allocations per step", n)
	}
	if m.events.Load() == 0 || m.Fault() != nil {
		t.Errorf("%d events, fault %v: the steps did not bounce the ball\n%s", m.events.Load(), m.Fault(), log)
	}
}

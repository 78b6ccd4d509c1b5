package fmumodel

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/logtest"
	"beamconnect/models"
)

// A time event on a communication point is handled at that point: the
// stair's counter, one more at every whole second, is the new one in the
// reply to the message whose step ends on the second (at a 10 ms period,
// message 299's step ends at 3 s). The FMU's times are the messages' ids
// times the period; summed (300 × 10 ms add up to 2.99999999999998) the
// event came a message late.
func TestMETimeEventOnItsMessage(t *testing.T) {
	for _, period := range []float64{0.01, 0.001} {
		variants(t, fmt.Sprintf("%g ms", period*1000), func(t *testing.T, major int, host models.Params) {
			extra := models.Params{"outputs": map[string]any{"counter": "throttle"}}
			for key, v := range host {
				extra[key] = v
			}
			src := strings.ReplaceAll(readFile(t, "../../examples/cruise-pedals.json"), `"updatePeriodMs": 5`,
				fmt.Sprintf(`"updatePeriodMs": %g`, period*1000))
			p := planFrom(t, strings.Replace(src, `"$schema": "../schemas/config.schema.json",`, "", 1))
			p.ModelTimeout = 5
			params := models.Params{"path": testfmu.MEForTest(t, "stair.fmu", testfmu.MEOptions{FMI: major, Model: "stair"}),
				"interface": "ModelExchange", "deadlineMs": 5000.0}
			for key, v := range extra {
				params[key] = v
			}
			log := &logtest.Buffer{}
			md, err := newModel(params, p, log.Logger())
			if err != nil {
				t.Fatal(err)
			}
			m := md.(*FMU)
			t.Cleanup(func() { m.Close() })
			if p.Period != period {
				t.Fatalf("the plan's period %v, want %v", p.Period, period)
			}
			per := int(math.Round(1 / period)) // messages a second
			outs, ins := vectors(p)
			late := []string{}
			for k := range 5 * per {
				outs[0][0] = 3
				if !m.Step(float64(k)*period, outs, ins) {
					t.Fatalf("message %d: no controls: %v\n%s", k, m.Fault(), log)
				}
				// The step of message k ends at (k + 1) × the period.
				got, _ := pedals(t, p, ins)
				if want := float64(1 + (k+1)/per); got != want {
					late = append(late, fmt.Sprintf("%d × %g s: %v, want %v", k+1, period, got, want))
				}
			}
			if len(late) > 0 {
				t.Errorf("the counter at the end of a step, %d of %d wrong: %s", len(late), 5*per, strings.Join(late, "; "))
			}
			if ev := m.events.Load(); ev != 5 {
				t.Errorf("%d events, want the 5 time events", ev)
			}
		})
	}
}

// A derivative that turns NaN (at 0.5 s) is a fault at the step that
// meets it, under every solver, naming the derivative and its state: the
// output fmin(x, 0.8) stays 0.8, a number, and would otherwise have gone
// on driving BeamNG from a NaN state.
func TestMENaNStateIsAFault(t *testing.T) {
	for _, solver := range []string{"euler", "rk4", "dopri5"} {
		variants(t, solver, func(t *testing.T, major int, host models.Params) {
			extra := models.Params{"solver": solver, "outputs": map[string]any{"y": "throttle"}}
			for key, v := range host {
				extra[key] = v
			}
			m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "nan"}, extra)
			outs, ins := vectors(p)
			k := 0
			for ; k < 200; k++ {
				outs[0][0] = 3
				if !m.Step(float64(k)*p.Period, outs, ins) {
					break
				}
				if th, _ := pedals(t, p, ins); th != 0.8 {
					t.Fatalf("message %d: throttle %v, want 0.8", k, th)
				}
			}
			// The step of message 99 ends at 0.5 s: rk4 and dopri5 evaluate
			// the derivatives there; euler the next step does.
			if at := float64(k+1) * p.Period; at < 0.5-1e-9 || at > 0.505+1e-9 {
				t.Errorf("controls until message %d (its step to %g s): want until the step that meets 0.5 s", k, at)
			}
			err := m.Fault()
			if err == nil || !strings.Contains(err.Error(), "the FMU's derivative der(x) is NaN at t = 0.5") || !strings.Contains(err.Error(), "its state x = 0.95") {
				t.Fatalf("fault %v\n%s", err, log)
			}
			for range 20 {
				k++
				outs[0][0] = 4
				if m.Step(float64(k)*p.Period, outs, ins) {
					t.Fatalf("message %d: controls from a NaN state", k)
				}
			}
			if m.Failures() == 0 {
				t.Errorf("no failure counted")
			}
		})
	}
}

// An explicit solver's fixed step that the model's fast dynamics make
// unstable is a fault for good at the first step, before any output of it
// reaches BeamNG, naming the way out; a stable step, or dopri5, integrates
// the same model to its closed form.
func TestMEUnstableStepIsAFault(t *testing.T) {
	const a = 0.5 // the slow rate
	exact := func(lambda, t float64) float64 {
		return lambda / (lambda - a) * (math.Exp(-a*t) - math.Exp(-lambda*t))
	}
	for _, tt := range []struct {
		name   string
		params models.Params
		fault  string  // "": healthy
		tol    float64 // healthy: how close to the closed form …
		after  float64 // … from this time on (past the fast transient a coarse step gets wrong)
	}{
		{"euler h·λ = 2.5", models.Params{"solver": "euler", "parameters": map[string]any{"lambda": 500.0}},
			"the euler solver's step of 5 ms from t = 0 s is unstable for the model: its fastest dynamics (λ ≈ -500/s, h·λ ≈ -2.5) grow by 50 % a step under it where the model itself damps them; steps of at most 4 ms are stable for them: set modelParams.maxStep to 0.004 or less (2 steps a message), or the solver to dopri5", 0, 0},
		{"rk4 λ = 1e7", models.Params{"solver": "rk4", "parameters": map[string]any{"lambda": 1e7}},
			"an explicit solver would need 1.79e+04 steps a message (modelParams.maxStep 2.7e-07), and dopri5 as many: the model is too stiff for beamconnect's solvers at this period; export the FMU as co-simulation", 0, 0},
		// Stable but coarse: the first steps' transient is off, what follows
		// right.
		{"euler at maxStep 1 ms", models.Params{"solver": "euler", "maxStep": 0.001, "parameters": map[string]any{"lambda": 500.0}}, "", 2e-3, 0.05},
		{"rk4 h·λ = 2.5", models.Params{"solver": "rk4", "parameters": map[string]any{"lambda": 500.0}}, "", 1e-6, 0.25},
		{"rk4 at maxStep 0.1 ms", models.Params{"solver": "rk4", "maxStep": 1e-4, "parameters": map[string]any{"lambda": 1e4}}, "", 1e-6, 0},
		{"dopri5", models.Params{"solver": "dopri5", "tolerance": 1e-9, "parameters": map[string]any{"lambda": 1e4}}, "", 1e-7, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			variants(t, "", func(t *testing.T, major int, host models.Params) {
				extra := models.Params{"outputs": map[string]any{"x": "throttle"}, "restart": true}
				for _, from := range []models.Params{tt.params, host} {
					for key, v := range from {
						extra[key] = v
					}
				}
				lambda := tt.params["parameters"].(map[string]any)["lambda"].(float64)
				m, p, log := meRig(t, testfmu.MEOptions{FMI: major, Model: "stiff"}, extra)
				outs, ins := vectors(p)
				worst := 0.0
				for k := range 200 {
					outs[0][0] = 3
					computed := m.Step(float64(k)*p.Period, outs, ins)
					if tt.fault != "" && computed {
						th, _ := pedals(t, p, ins)
						t.Fatalf("message %d: controls (throttle %v) from an unstable step", k, th)
					}
					if tt.fault == "" {
						if !computed {
							t.Fatalf("message %d: no controls: %v\n%s", k, m.Fault(), log)
						}
						if at := float64(k+1) * p.Period; at >= tt.after {
							th, _ := pedals(t, p, ins)
							worst = max(worst, math.Abs(th-exact(lambda, at)))
						}
					}
				}
				if tt.fault == "" {
					if worst > tt.tol || m.Fault() != nil {
						t.Errorf("x differs from the closed form by %g (allowed %g); fault %v\n%s", worst, tt.tol, m.Fault(), log)
					}
					return
				}
				if err := m.Fault(); err == nil || !strings.Contains(err.Error(), tt.fault) {
					t.Fatalf("fault %v\nwant %s\n%s", err, tt.fault, log)
				}
				if m.Restarts() != 0 || !strings.Contains(log.String(), "not started again") {
					t.Errorf("restarts %d: an unstable step is for good\n%s", m.Restarts(), log)
				}
			})
		})
	}
}

package coupling

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// fleetConfig is a config of n vehicles v0…, each mapping its speed and
// position out and its pedals in, in contracts of its own.
func fleetConfig(t testing.TB, n int, overdueMs float64) *config.Config {
	t.Helper()
	var vehicles, outs, ins []string
	for v := range n {
		name := fmt.Sprintf("v%d", v)
		vehicles = append(vehicles, fmt.Sprintf(`%q: {"localPort": %d, "remotePort": %d}`, name, 65000+2*v, 65001+2*v))
		outs = append(outs, fmt.Sprintf(`{"remoteObject": %q, "updatePeriodMs": 5, "overdueDataTimeoutMs": %v,
		  "ports": [[{"propertyName": "groundspeed"}, {"propertyName": "posX"}, {"propertyName": "posY"}, {"propertyName": "yaw"}, {"propertyName": "velX"}, {"propertyName": "velY"}]]}`, name, overdueMs))
		ins = append(ins, fmt.Sprintf(`{"remoteObject": %q, "updatePeriodMs": 5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}`, name))
	}
	text := fmt.Sprintf(`{"version": 2, "outputs": [%s], "inputs": [%s], "beamng": {"vehicles": {%s}}}`,
		strings.Join(outs, ","), strings.Join(ins, ","), strings.Join(vehicles, ","))
	cfg, err := config.Parse("fleet.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// perVehicle gives each vehicle its own throttle: 0.1 × (v + 1).
type perVehicle struct{ throttle []ref2 }

func newPerVehicle(t testing.TB, p *ports.Plan) *perVehicle {
	m := &perVehicle{}
	for v := range p.Vehicles {
		port, el, ok := p.FindFor(beamng.ToBeamNG, "throttle", v)
		if !ok {
			t.Fatalf("vehicle %d: no throttle", v)
		}
		m.throttle = append(m.throttle, ref2{port, el})
	}
	return m
}

func (m *perVehicle) Step(_ float64, _ [][]float64, in [][]float64) bool {
	for v, r := range m.throttle {
		in[r.port][r.elem] = 0.1 * float64(v+1)
	}
	return true
}

// Reads: perVehicle reads no vehicle's data, so no vehicle's silence
// keeps the others from being controlled.
func (m *perVehicle) Reads(int) bool { return false }

// Two and four vehicles in one physics loop, loaded on different steps of
// the period: none stalls, every one stays in lockstep and gets its own
// controls.
func TestFleetLockstep(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n, " vehicles"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := rig{cfg: fleetConfig(t, n, -1), model: func(p *ports.Plan) models.Model { return newPerVehicle(t, p) },
					starts: []int64{0, 3, 7, 9}[:n], // send phases 0, 3, 7, 9 of the 10-step period
					em:     emulator.Config{Steps: 20000}}.sim(t)
				h.run(t)
				for v, s := range h.sums {
					if s.Stalls != 0 || s.Accepted < s.Sent-1 || s.Sent < 1900 {
						t.Errorf("vehicle %d: %v", v, s)
					}
					if got := h.ems[v].Vehicle().Throttle; math.Abs(got-0.1*float64(v+1)) > 1e-12 {
						t.Errorf("vehicle %d throttle %v, want its own %v", v, got, 0.1*float64(v+1))
					}
					st := h.s.Link(v).Stats()
					if st.Get(Messages) < 1900 || st.Get(LockstepLost) != 0 {
						t.Errorf("vehicle %d: %d messages, lockstep lost %d", v, st.Get(Messages), st.Get(LockstepLost))
					}
				}
				if f := h.s.Faults(); len(f) != 0 {
					t.Errorf("faults %q", f)
				}
			})
		})
	}
}

// One vehicle's controller stops mid-run: the others go on without a 2 s
// stall, the stopped one's data is reported overdue and port 0 stops
// saying connected; when its controller loads again (ids from 0, a new
// port) it re-joins.
func TestFleetVehicleGoesAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var overdue, notAll atomic.Int64
		// Paced like BeamNG, 3 s: vehicle 1 away from 1 s to 2.5 s.
		h := rig{cfg: fleetConfig(t, 3, 50), model: func(p *ports.Plan) models.Model { return newPerVehicle(t, p) },
			starts: []int64{0, 4, 8}, faults: map[int]emulator.Faults{1: {StopAt: time.Second, StopFor: 1500 * time.Millisecond}},
			em: emulator.Config{Steps: 6000}}.sim(t)
		h.run(t, func(ctx context.Context) {
			for ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
				if h.s.Link(1).Stats().Get(Overdue) > 0 {
					overdue.Add(1)
				}
				if h.s.Status() != ports.Connected && h.s.Link(0).Status() == ports.Connected {
					notAll.Add(1)
				}
			}
		})
		for v, s := range h.sums {
			if s.Stalls != 0 {
				t.Errorf("vehicle %d stalled: %v", v, s)
			}
		}
		if h.sums[1].Stops != 1 {
			t.Fatalf("the stop fault did not fire: %v", h.sums[1])
		}
		if overdue.Load() == 0 || notAll.Load() == 0 {
			t.Errorf("while vehicle 1 was away: overdue seen %d times, port 0 not connected %d times", overdue.Load(), notAll.Load())
		}
		st := h.s.Link(1).Stats()
		if st.Get(Restarts)+st.Get(SourceChanges) == 0 || st.Get(Messages) < 250 {
			t.Errorf("vehicle 1 did not re-join: %d messages, %d restarts, %d source changes", st.Get(Messages), st.Get(Restarts), st.Get(SourceChanges))
		}
		if got := h.ems[1].Vehicle().Throttle; got != 0.2 {
			t.Errorf("vehicle 1's throttle after re-joining %v, want 0.2", got)
		}
		if n := h.s.Link(0).Stats().Get(Messages); n < 590 {
			t.Errorf("vehicle 0 was held: %d messages", n)
		}
		if f := h.s.Faults(); !containsAll(f, `vehicle "v1"`) || containsAll(f, `vehicle "v0"`) {
			t.Errorf("faults %q: want vehicle v1's only", f)
		}
	})
}

// The follow model keeps its time gap to the lead within 10 % once settled,
// through the lead's speed changes; the coupling's gap field agrees with
// the emulated cars' positions.
func TestFollowKeepsTimeGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 70 s simulated: the lead at 20, 12 (20 s) and 25 m/s (40 s).
		h := rig{cfg: load(t, "../examples/follow.json"), starts: []int64{0, 6}, place: [][3]float64{{0, 0, 0}, {40, 0, 0}},
			em: emulator.Config{Steps: 140000}}.sim(t)
		h.run(t)
		ego, lead := h.ems[0].Vehicle(), h.ems[1].Vehicle()
		if math.Abs(lead.V-25) > 0.5 {
			t.Errorf("lead at %.2f m/s, want its profile's 25", lead.V)
		}
		gap := lead.X - ego.X
		if tg := gap / ego.V; math.Abs(tg-1.8) > 0.18 {
			t.Errorf("time gap %.3f s (gap %.1f m at %.2f m/s), want 1.8 s ± 10 %%", tg, gap, ego.V)
		}
		port, el := -1, 0
		for _, pt := range h.plan.Outputs {
			for _, f := range pt.Fields {
				if f.Source == ports.Relative && f.Relative.String() == "gap" {
					port, el = pt.Number, f.Offset
				}
			}
		}
		if got := h.s.stage.outs[port][el]; math.Abs(got-gap) > 0.5 {
			t.Errorf("the gap field says %.2f m, the cars are %.2f m apart", got, gap)
		}
		if q := figures(h); math.Abs(q["time gap now"]-gap/ego.V) > 0.05 || !(q["min time to collision"] > 2) || !(q["time gap error RMS after settling"] < 0.2 || h.s.Control()[0].Verdict != "good") {
			t.Errorf("the model reports %v", h.s.Control())
		}
	})
}

// Several vehicles on Gen 2, each laid out by its own CSV: the follow model
// keeps its time gap, each vehicle's BeamNG applies only its own controls,
// nothing is ever NaN; a reload of the fleet's config that sets a new time
// gap goes live and the ego takes it.
func TestGen2FleetFollows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := "../examples/gen2-follow.json"
		text, _ := os.ReadFile(path)
		h := rig{cfg: load(t, path), starts: []int64{0, 6}, place: [][3]float64{{0, 0, 0}, {40, 0, 0}},
			em: emulator.Config{Steps: 120000}}.sim(t)
		var err error
		h.run(t, func(ctx context.Context) {
			time.Sleep(25 * time.Second)
			_, err = reloadConfig(h.s, path, []byte(strings.Replace(string(text), `"timeGap": 1.8`, `"timeGap": 2.2`, 1)))
		})
		if err != nil {
			t.Fatalf("the reload was refused: %v", err)
		}
		ego, lead := h.ems[0].Vehicle(), h.ems[1].Vehicle()
		if tg := (lead.X - ego.X) / ego.V; math.Abs(tg-2.2) > 0.22 {
			t.Errorf("time gap %.3f s after the reload, want 2.2 s ± 10 %%", tg)
		}
		for v, s := range h.sums {
			if s.Stalls != 0 || s.LuaErrors != 0 || s.NaNApplied != 0 || s.Accepted < s.Sent-1 {
				t.Errorf("vehicle %d's BeamNG: %v, lua errors %d, NaN %d", v, s, s.LuaErrors, s.NaNApplied)
			}
			if l := h.plan.Vehicles[v].Layout; h.s.Link(v).in.msg == nil || len(h.s.Link(v).in.msg) != l.Len(0) {
				t.Errorf("vehicle %d's link reads %d doubles, its CSV says %d", v, len(h.s.Link(v).in.msg), l.Len(0))
			}
		}
		if f := h.s.Faults(); len(f) != 0 {
			t.Errorf("faults %q", f)
		}
	})
}

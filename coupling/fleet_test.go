package coupling

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
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

func (m *perVehicle) Step(_ float64, _ [][]float64, in [][]float64) {
	for v, r := range m.throttle {
		in[r.port][r.elem] = 0.1 * float64(v+1)
	}
}

type fleetRun struct {
	fleet *Fleet
	ems   []*emulator.Emulator
	sums  []emulator.Summary
}

// runFleet couples a fleet to emulated vehicles stepped in one physics
// loop, vehicle v's controller loading at starts[v].
func runFleet(t *testing.T, cfg *config.Config, m func(*ports.Plan) models.Model, steps int64, paced bool, starts []int64, faults map[int]emulator.Faults, during func(*Fleet)) *fleetRun {
	t.Helper()
	return runFleetAll(t, cfg, m, steps, paced, starts, nil, faults, during)
}

// runFleetStart runs free-running with the cars placed at start (X, Y, yaw).
func runFleetStart(t *testing.T, cfg *config.Config, m func(*ports.Plan) models.Model, steps int64, starts []int64, place [][3]float64) *fleetRun {
	t.Helper()
	return runFleetAll(t, cfg, m, steps, false, starts, place, nil, nil)
}

func runFleetAll(t *testing.T, cfg *config.Config, m func(*ports.Plan) models.Model, steps int64, paced bool, starts []int64, place [][3]float64, faults map[int]emulator.Faults, during func(*Fleet)) *fleetRun {
	t.Helper()
	plan, err := ports.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFleet(Options{Plan: plan, Model: m(plan), Local: loopback})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Bind(); err != nil {
		t.Fatal(err)
	}
	r := &fleetRun{fleet: f}
	for v, c := range f.Links {
		link, err := emulator.ListenUDP(loopback, c.LocalAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { link.Close() })
		c.SetRemote(link.LocalAddr())
		veh := emulator.DefaultVehicle()
		if place != nil {
			veh.Start = place[v]
		}
		em, err := emulator.New(emulator.Config{SimulinkTime: plan.Period, PingTime: plan.PingTime, FreeRunning: !paced,
			Steps: steps, StartStep: starts[v], Faults: faults[v], Vehicle: veh}, link)
		if err != nil {
			t.Fatal(err)
		}
		r.ems = append(r.ems, em)
	}
	r.ems[0].Attach(r.ems[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	stopDuring := make(chan struct{})
	if during != nil {
		go func() {
			for {
				select {
				case <-stopDuring:
					return
				case <-time.After(5 * time.Millisecond):
					during(f)
				}
			}
		}()
	}
	sum0, _ := r.ems[0].Run(ctx)
	close(stopDuring)
	cancel()
	<-done
	r.sums = append(r.sums, sum0)
	for _, em := range r.ems[1:] {
		r.sums = append(r.sums, em.Summary())
	}
	return r
}

// Two and four vehicles in one physics loop, loaded on different steps of
// the period: none stalls, every one stays in lockstep and gets its own
// controls.
func TestFleetLockstep(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprint(n, " vehicles"), func(t *testing.T) {
			starts := []int64{0, 3, 7, 9}[:n] // send phases 0, 3, 7, 9 of the 10-step period
			r := runFleet(t, fleetConfig(t, n, -1), func(p *ports.Plan) models.Model { return newPerVehicle(t, p) }, 20000, false, starts, nil, nil)
			for v, s := range r.sums {
				if s.Stalls != 0 || s.Accepted < s.Sent-1 || s.Sent < 1900 {
					t.Errorf("vehicle %d: %v", v, s)
				}
				if got := r.ems[v].Vehicle().Throttle; math.Abs(got-0.1*float64(v+1)) > 1e-12 {
					t.Errorf("vehicle %d throttle %v, want its own %v", v, got, 0.1*float64(v+1))
				}
				st := r.fleet.Links[v].Stats()
				if st.Messages.Load() < 1900 || st.LockstepLost.Load() != 0 {
					t.Errorf("vehicle %d: %d messages, lockstep lost %d", v, st.Messages.Load(), st.LockstepLost.Load())
				}
			}
			if f := r.fleet.Faults(); len(f) != 0 {
				t.Errorf("faults %q", f)
			}
		})
	}
}

// One vehicle's controller stops mid-run: the others go on without a 2 s
// stall, the stopped one's data is reported overdue and port 0 stops
// saying connected; when its controller loads again (ids from 0, a new
// port) it re-joins.
func TestFleetVehicleGoesAway(t *testing.T) {
	var overdue, notAll atomic.Int64
	// Paced like BeamNG, 3 s: vehicle 1 away from 1 s to 2.5 s.
	faults := map[int]emulator.Faults{1: {StopAt: time.Second, StopFor: 1500 * time.Millisecond}}
	r := runFleet(t, fleetConfig(t, 3, 50), func(p *ports.Plan) models.Model { return newPerVehicle(t, p) }, 6000, true, []int64{0, 4, 8}, faults,
		func(f *Fleet) {
			if f.Links[1].Stats().Overdue.Load() > 0 {
				overdue.Add(1)
			}
			if f.Status() != Connected && f.Links[0].Status() == Connected {
				notAll.Add(1)
			}
		})
	for v, s := range r.sums {
		if s.Stalls != 0 {
			t.Errorf("vehicle %d stalled: %v", v, s)
		}
	}
	if r.sums[1].Stops != 1 {
		t.Fatalf("the stop fault did not fire: %v", r.sums[1])
	}
	if overdue.Load() == 0 || notAll.Load() == 0 {
		t.Errorf("while vehicle 1 was away: overdue seen %d times, port 0 not connected %d times", overdue.Load(), notAll.Load())
	}
	st := r.fleet.Links[1].Stats()
	if st.Restarts.Load()+st.SourceChanges.Load() == 0 || st.Messages.Load() < 250 {
		t.Errorf("vehicle 1 did not re-join: %d messages, %d restarts, %d source changes", st.Messages.Load(), st.Restarts.Load(), st.SourceChanges.Load())
	}
	if got := r.ems[1].Vehicle().Throttle; got != 0.2 {
		t.Errorf("vehicle 1's throttle after re-joining %v, want 0.2", got)
	}
	if r.fleet.Links[0].Stats().Messages.Load() < 590 {
		t.Errorf("vehicle 0 was held: %d messages", r.fleet.Links[0].Stats().Messages.Load())
	}
	if f := r.fleet.Faults(); !containsAll(f, `vehicle "v1"`) || containsAll(f, `vehicle "v0"`) {
		t.Errorf("faults %q: want vehicle v1's only", f)
	}
}

// The follow model keeps its time gap to the lead within 10 % once settled,
// through the lead's speed changes; the coupling's gap field agrees with
// the emulated cars' positions.
func TestFollowKeepsTimeGap(t *testing.T) {
	cfg, err := config.Load("../examples/follow.json")
	if err != nil {
		t.Fatal(err)
	}
	var m models.Model
	// 70 s simulated: the lead at 20, 12 (20 s) and 25 m/s (40 s).
	r := runFleetStart(t, cfg, func(p *ports.Plan) models.Model {
		m, err = models.New(p.Model, p.ModelParams, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, 140000, []int64{0, 6}, [][3]float64{{0, 0, 0}, {40, 0, 0}})
	ego, lead := r.ems[0].Vehicle(), r.ems[1].Vehicle()
	if math.Abs(lead.V-25) > 0.5 {
		t.Errorf("lead at %.2f m/s, want its profile's 25", lead.V)
	}
	gap := lead.X - ego.X
	if tg := gap / ego.V; math.Abs(tg-1.8) > 0.18 {
		t.Errorf("time gap %.3f s (gap %.1f m at %.2f m/s), want 1.8 s ± 10 %%", tg, gap, ego.V)
	}
	p := r.fleet.Links[0].plan
	port, el := -1, 0
	for _, pt := range p.Outputs {
		for _, f := range pt.Fields {
			if f.Source == ports.Relative && f.Relative.String() == "gap" {
				port, el = pt.Number, f.Offset
			}
		}
	}
	if got := r.fleet.sh.outs[port][el]; math.Abs(got-gap) > 0.5 {
		t.Errorf("the gap field says %.2f m, the cars are %.2f m apart", got, gap)
	}
}

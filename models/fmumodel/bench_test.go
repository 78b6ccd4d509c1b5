package fmumodel

import (
	"slices"
	"testing"
	"time"

	"beamconnect/config/configtest"
	"beamconnect/fmu/testfmu"
	"beamconnect/models"
)

// Per-message cost of an FMU step as the coupling sees it (models.Model.Step:
// the inputs gathered from the ports, the FMU stepped, its outputs set),
// in process and in a child process, with the p50 and p99 of single
// steps:
//
//	go test -run XXX -bench FMUStep -benchtime 20000x ./models
func BenchmarkFMUStep(b *testing.B) {
	for _, mode := range []struct {
		name  string
		extra models.Params
	}{{"child", models.Params{"deadlineMs": 20.0}}, {"inProcess", models.Params{"inProcess": true}}} {
		for _, major := range []int{2, 3} {
			b.Run(mode.name+"/FMI"+string(rune('0'+major)), func(b *testing.B) {
				m, p := benchRig(b, testfmu.Options{FMI: major}, mode.extra)
				outs, ins := vectors(p)
				outs[0][0] = 3
				sp, spE, _ := p.Find(0, "groundspeed")
				lat := make([]time.Duration, 0, 1<<17)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					outs[sp][spE] = float64(i % 30)
					t0 := time.Now()
					m.Step(float64(i)*p.Period, outs, ins)
					if len(lat) < cap(lat) {
						lat = append(lat, time.Since(t0))
					}
				}
				if m.Fault() != nil {
					b.Errorf("fault %v", m.Fault())
				}
				// An answer later than the deadline is used one message late:
				// how often that happened is part of the cost.
				b.ReportMetric(float64(m.Missed()), "missed")
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}

// Per-message cost of a models.Model Exchange FMU integrated by beamconnect at a
// 1 ms period: five Van der Pol oscillators, 10 states, under each
// solver, in process and in a child process, paced at a message a
// millisecond as BeamNG sends them (ns/op is the period, then). Real time
// at 1 ms needs every step answered within the deadline (missed and
// skipped 0) and the p99 well under 1000 µs:
//
//	go test -run XXX -bench MEStep -benchtime 3000x ./models
func BenchmarkMEStep(b *testing.B) {
	for _, mode := range []struct {
		name  string
		extra models.Params
	}{{"child", nil}, {"inProcess", models.Params{"inProcess": true}}} {
		for _, solver := range []string{"dopri5", "rk4", "euler"} {
			b.Run(mode.name+"/"+solver, func(b *testing.B) {
				path := testfmu.MEForTest(b, "chain.fmu", testfmu.MEOptions{FMI: 3, Model: "chain"})
				p := configtest.Plan(b, "../../examples/cruise-pedals.json")
				p.Period = 0.001
				params := models.Params{"path": path, "interface": "ModelExchange", "solver": solver, "deadlineMs": 0.9,
					"outputs": map[string]any{"x1": "throttle"}}
				for k, v := range mode.extra {
					params[k] = v
				}
				md, err := newModel(params, p, nil)
				if err != nil {
					b.Fatal(err)
				}
				m := md.(*FMU)
				b.Cleanup(func() { m.Close() })
				outs, ins := vectors(p)
				outs[0][0] = 3
				lat := make([]time.Duration, 0, 1<<17)
				b.ReportAllocs()
				start := time.Now()
				for i := 0; b.Loop(); i++ {
					// Paced as BeamNG sends: a message a millisecond.
					time.Sleep(time.Until(start.Add(time.Duration(i) * time.Millisecond)))
					t0 := time.Now()
					m.Step(float64(i)*p.Period, outs, ins)
					if len(lat) < cap(lat) {
						lat = append(lat, time.Since(t0))
					}
				}
				if m.Fault() != nil {
					b.Errorf("fault %v", m.Fault())
				}
				b.ReportMetric(float64(m.Missed()), "missed")
				b.ReportMetric(float64(m.Skipped()), "skipped")
				b.ReportMetric(float64(m.steps.Load())/float64(b.N), "solver-steps/msg")
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}

package models

import (
	"slices"
	"testing"
	"time"

	"beamconnect/fmu/testfmu"
)

// Per-message cost of an FMU step as the coupling sees it (Model.Step:
// the inputs gathered from the ports, the FMU stepped, its outputs set),
// in process and in a child process, with the p50 and p99 of single
// steps:
//
//	go test -run XXX -bench FMUStep -benchtime 20000x ./models
func BenchmarkFMUStep(b *testing.B) {
	for _, mode := range []struct {
		name  string
		extra Params
	}{{"child", Params{"deadlineMs": 20.0}}, {"inProcess", Params{"inProcess": true}}} {
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

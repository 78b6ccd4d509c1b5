package coupling

import (
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
)

// BenchmarkLoopback is whole round trips over loopback UDP: the emulator,
// free-running in lockstep with no skips (a message every physics step),
// against the coupling with the cruise-pedals model. Reports round trips a
// second and the coupling's turnaround percentiles.
func BenchmarkLoopback(b *testing.B) {
	cfg := load(b, "../examples/cruise-pedals.json")
	cfg.Period = beamng.PhysicsDt // simulinkTime 0.5 ms: no skip steps
	h := rig{cfg: cfg, em: emulator.Config{Steps: int64(b.N)}}.udp(b)
	b.ResetTimer()
	start := time.Now()
	h.run(b)
	el := time.Since(start)
	b.StopTimer()
	if h.emSum.Stalls != 0 {
		b.Fatalf("stalls: %v", h.emSum)
	}
	tu := &h.c.Stats().Turnaround
	b.ReportMetric(float64(h.emSum.Accepted)/el.Seconds(), "roundtrips/s")
	b.ReportMetric(float64(tu.Quantile(0.5).Nanoseconds())/1e3, "turnaround-p50-µs")
	b.ReportMetric(float64(tu.Quantile(0.99).Nanoseconds())/1e3, "turnaround-p99-µs")
}

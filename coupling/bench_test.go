package coupling

import (
	"net/netip"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// handleRig is a coupling whose per-message path can be driven directly,
// with the state message BeamNG would send.
func handleRig(tb testing.TB, file string) (*Coupling, []byte, netip.AddrPort) {
	tb.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		tb.Fatal(err)
	}
	plan, err := ports.Compile(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := models.New(plan.Model, plan.ModelParams, plan, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := New(Options{Plan: plan, Model: m})
	if err != nil {
		tb.Fatal(err)
	}
	c.fresh = true
	msg := make([]float64, beamng.StateLen)
	msg[17] = 12 // groundspeed
	datagram, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
	return c, datagram, netip.AddrPortFrom(c.remote.Addr(), 50000)
}

// The per-message path (decode → contracts → built-in model → encode)
// allocates nothing, for every example rig.
func TestHandleAllocs(t *testing.T) {
	for _, file := range []string{"../examples/cruise-pedals.json", "../examples/cruise-torque.json",
		"../examples/heading-hold.json", "../examples/logging.json"} {
		c, datagram, from := handleRig(t, file)
		id := 0.0
		now := time.Now()
		step := func() {
			id++
			now = now.Add(5 * time.Millisecond)
			beamngSetID(datagram, id)
			if _, ok := c.Handle(datagram, from, now); !ok {
				t.Fatal("message dropped")
			}
		}
		for range 10 {
			step()
		}
		if a := testing.AllocsPerRun(1000, step); a != 0 {
			t.Errorf("%s: %v allocations per message", file, a)
		}
	}
}

func beamngSetID(datagram []byte, id float64) {
	msg := []float64{id}
	beamng.Encode(datagram[:8], msg)
}

// BenchmarkHandle is the in-process turnaround: one BeamNG message checked,
// decoded, spread over the contracts, a built-in model stepped, the reply
// encoded. Sockets excluded.
func BenchmarkHandle(b *testing.B) {
	for _, bm := range []struct{ name, file string }{
		{"cruise-pedals", "../examples/cruise-pedals.json"},
		{"logging-all-111", "../examples/logging.json"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			c, datagram, from := handleRig(b, bm.file)
			id := 0.0
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				id++
				now = now.Add(5 * time.Millisecond)
				beamngSetID(datagram, id)
				c.Handle(datagram, from, now)
			}
		})
	}
}

// BenchmarkLoopback is whole round trips over loopback UDP: the emulator,
// free-running in lockstep with no skips (a message every physics step),
// against the coupling with the cruise-pedals model. Reports round trips a
// second and the coupling's turnaround percentiles.
func BenchmarkLoopback(b *testing.B) {
	cfg, err := config.Load("../examples/cruise-pedals.json")
	if err != nil {
		b.Fatal(err)
	}
	cfg.Period = beamng.PhysicsDt // simulinkTime 0.5 ms: no skip steps
	t := &testing.T{}
	h := newHarnessPlan(t, cfg, nil, emulator.Config{Steps: int64(b.N)})
	b.ResetTimer()
	start := time.Now()
	h.run(t)
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

func beamngEncode(msg []float64) ([]byte, error) {
	return beamng.Encode(make([]byte, 8*len(msg)), msg)
}

func beamngDecode(dst []float64, b []byte) error { return beamng.Decode(dst, b) }

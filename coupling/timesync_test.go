package coupling

import (
	"math"
	"testing"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/timesync"
)

// syncRig is the cruise rig with time sync on its inputs (beamconnect the
// master) or its outputs (BeamNG the master).
func syncRig(t *testing.T, master bool, dilation float64) *config.Config {
	t.Helper()
	cfg, err := config.Load("../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	if master {
		cfg.Inputs[0].TimeSync = true
	} else {
		cfg.Outputs[0].TimeSync = true
	}
	cfg.TimeDilation = dilation
	return cfg
}

// Master: BeamNG free-running (as fast as the coupling lets it) is held to
// the local clock: real time at timeDilation 1, half at 0.5, and as fast as
// both sides go at 0.
func TestMasterPacesBeamNG(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 9 s of wall time")
	}
	for _, tt := range []struct {
		dilation float64
		steps    int64
	}{{1, 10000}, {0.5, 4000}, {0, 40000}} {
		h := newHarnessPlan(t, syncRig(t, true, tt.dilation), nil, emulator.Config{Steps: tt.steps})
		if h.plan.TimeSync != timesync.Master {
			t.Fatalf("time sync %v", h.plan.TimeSync)
		}
		h.run(t)
		e := h.emSum
		rtf := e.SimS / e.WallS
		sync := h.c.Sync()
		t.Logf("timeDilation %v: %.3f s simulated in %.3f s: %.4f× real time; pacing error p50 %v p99 %v, %d overruns",
			tt.dilation, e.SimS, e.WallS, rtf, sync.PacingError(0.5), sync.PacingError(0.99), sync.Overruns)
		switch {
		case tt.dilation > 0 && math.Abs(rtf-tt.dilation) > 0.01*tt.dilation:
			t.Errorf("timeDilation %v: BeamNG ran at %.4f× real time, want within 1 %%", tt.dilation, rtf)
		case tt.dilation <= 0 && rtf < 2:
			t.Errorf("timeDilation 0: only %.2f× real time; unthrottled should be well above 1", rtf)
		}
		if e.Stalls != 0 {
			t.Errorf("stalls %d", e.Stalls)
		}
	}
}

// Slave: local time follows BeamNG's, whatever BeamNG's pace, and the model
// steps once per new remote time.
func TestSlaveFollowsBeamNG(t *testing.T) {
	for _, rtf := range []float64{1, 3} {
		var steps int
		cfg := syncRig(t, false, 1)
		h := newHarnessPlan(t, cfg, nil, emulator.Config{Steps: 4000, FPS: 60, RealTimeFactor: rtf})
		h.c.opt.OnMessage = func(id, _ float64) {
			steps++
			if got, want := h.c.Sync().Local(), id*h.plan.Period; math.Abs(got-want) > 1e-12 {
				t.Errorf("local time %v at message %v, want the remote time %v", got, id, want)
			}
		}
		h.run(t)
		if h.plan.TimeSync != timesync.Slave || steps < 395 {
			t.Fatalf("sync %v, %d steps", h.plan.TimeSync, steps)
		}
		// The run took BeamNG's pace: local time covered what BeamNG simulated.
		if sim := h.c.SimTime(); math.Abs(sim-h.emSum.SimS) > 2*h.plan.Period {
			t.Errorf("realtime factor %v: local time covered %.3f s, BeamNG simulated %.3f s", rtf, sim, h.emSum.SimS)
		}
		// A slave never holds BeamNG back: BeamNG keeps (nearly) the pace
		// it was given. (On a loaded machine the emulator itself may fall a
		// little short of it.)
		if got := h.emSum.SimS / h.emSum.WallS; got < 0.8*rtf {
			t.Errorf("BeamNG's pace %.2f× with a slave client, want about %v×", got, rtf)
		}
		if !h.c.Sync().Blocked() {
			t.Error("a slave between messages must count as blocked (waiting for BeamNG's time)")
		}
	}
}

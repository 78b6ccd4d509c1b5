package coupling

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

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
	for _, tt := range []struct {
		dilation float64
		steps    int64
	}{{1, 10000}, {0.5, 4000}, {0, 40000}} {
		t.Run(fmt.Sprintf("timeDilation %v", tt.dilation), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// BeamNG free-running, 10 µs a step: the pace is the master's.
				h := rig{cfg: syncRig(t, true, tt.dilation), em: emulator.Config{Steps: tt.steps, FreeRunning: true, StepCost: 10 * time.Microsecond}}.sim(t)
				if h.plan.TimeSync != timesync.Master {
					t.Fatalf("time sync %v", h.plan.TimeSync)
				}
				h.run(t)
				e := h.emSum
				rtf := e.SimS / e.WallS
				sync := h.c.Sync()
				switch {
				case tt.dilation > 0 && math.Abs(rtf-tt.dilation) > 0.005*tt.dilation:
					t.Errorf("timeDilation %v: BeamNG ran at %.4f× real time, want within 0.5 %%", tt.dilation, rtf)
				case tt.dilation <= 0 && rtf < 10:
					t.Errorf("timeDilation 0: only %.2f× real time; unthrottled should be far above 1", rtf)
				}
				if e.Stalls != 0 || tt.dilation > 0 && sync.Held == 0 {
					t.Errorf("stalls %d, replies held %d", e.Stalls, sync.Held)
				}
			})
		})
	}
}

// Slave: local time follows BeamNG's, whatever BeamNG's pace, and the model
// steps once per new remote time.
func TestSlaveFollowsBeamNG(t *testing.T) {
	for _, rtf := range []float64{1, 3} {
		synctest.Test(t, func(t *testing.T) { slaveFollows(t, rtf) })
	}
}

func slaveFollows(t *testing.T, rtf float64) {
	{
		var steps int
		var h *harness
		h = rig{cfg: syncRig(t, false, 1), em: emulator.Config{Steps: 4000, RealTimeFactor: rtf},
			opts: func(_ *harness, o *Options) {
				o.OnMessage = func(_ int, id, _ float64) {
					steps++
					if got, want := h.c.Sync().Local(), id*h.plan.Period; math.Abs(got-want) > 1e-12 {
						t.Errorf("local time %v at message %v, want the remote time %v", got, id, want)
					}
				}
			}}.sim(t)
		h.run(t)
		if h.plan.TimeSync != timesync.Slave || steps < 395 {
			t.Fatalf("sync %v, %d steps", h.plan.TimeSync, steps)
		}
		// The run took BeamNG's pace: local time covered what BeamNG simulated.
		if sim := h.c.SimTime(); math.Abs(sim-h.emSum.SimS) > 2*h.plan.Period {
			t.Errorf("realtime factor %v: local time covered %.3f s, BeamNG simulated %.3f s", rtf, sim, h.emSum.SimS)
		}
		// A slave never holds BeamNG back: BeamNG keeps the pace it was
		// given.
		if got := h.emSum.SimS / h.emSum.WallS; math.Abs(got-rtf) > 0.05*rtf {
			t.Errorf("BeamNG's pace %.2f× with a slave client, want about %v×", got, rtf)
		}
		if !h.c.Sync().Blocked() {
			t.Error("a slave between messages must count as blocked (waiting for BeamNG's time)")
		}
	}
}

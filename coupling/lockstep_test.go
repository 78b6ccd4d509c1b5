package coupling

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
)

// holdOnce stands between BeamNG's side and its socket and holds one
// reply back until the next one has been delivered: a reply reordered on
// the network, the way the emulator's reorder fault does it, but once and
// at a known id.
type holdOnce struct {
	emulator.Transport
	id    float64 // the reply id to hold
	held  []byte
	queue [][]byte
}

func (h *holdOnce) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	if len(h.queue) > 0 {
		n := copy(buf, h.queue[0])
		h.queue = h.queue[1:]
		return n, true
	}
	deadline := time.Now().Add(wait)
	for {
		n, ok := h.Transport.Recv(buf, max(time.Until(deadline), 0), stop)
		if !ok {
			return n, ok
		}
		if n >= 8 && h.held == nil && h.id > 0 && math.Float64frombits(binary.LittleEndian.Uint64(buf)) == h.id {
			h.held, h.id = append([]byte(nil), buf[:n]...), 0
			if wait > 0 && time.Until(deadline) > 0 {
				continue
			}
			return 0, false
		}
		if h.held != nil {
			h.queue, h.held = append(h.queue, h.held), nil
		}
		return n, true
	}
}

// Issue 10, defect 9: a reply held back past BeamNG's 2 s timeout is
// delivered after the reply that follows the reset, so BeamNG accepts the
// stale id (200) and then rejects every real reply, running free, for as
// long as the run had lasted (200 messages here). The watchdog sees BeamNG sending before it
// has the replies, reports it, and repairs BeamNG's window: the model's
// controls reach BeamNG at once again (every other reply), and BeamNG ends
// back in lockstep. Before, none of the next 200 replies were applied and
// nothing was reported.
func TestLockstepRepair(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("arrival times are read on Linux only")
	}
	cfg, err := config.Load("../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	stalled := false
	var acceptedAfter, gotAfter int64
	// Paced like BeamNG (frame batches), at 4× real time to keep it short.
	h := newHarnessAll(t, cfg, nil, emulator.Config{Steps: 12000, FPS: 60, RealTimeFactor: 4, Trace: func(r *emulator.StepRecord) {
		stalled = stalled || r.TimedOut
		// The first 200 replies BeamNG receives after the stall.
		if stalled && r.Got && gotAfter < 200 {
			gotAfter++
			if r.Accepted {
				acceptedAfter++
			}
		}
	}}, func(tr emulator.Transport) emulator.Transport { return &holdOnce{Transport: tr, id: 200} })
	h.c.log = log.Logger()
	h.run(t)
	st := h.c.Stats()
	if h.emSum.Stalls != 1 || st.StallsRecovered.Load() != 1 {
		t.Fatalf("the held reply should cost one stall: %v", h.emSum)
	}
	if st.LockstepLost.Load() != 1 || st.OutOfLockstep.Load() <= 0 {
		t.Errorf("lockstep lost %d times for %v; want it seen once\n%s", st.LockstepLost.Load(), time.Duration(st.OutOfLockstep.Load()), log)
	}
	// Half in theory (one per two messages); 0.3 leaves room for the
	// scheduling of both sides in one process, and is still far from the
	// 1 % without the repair. Busy polling keeps one of this VM's two Ps
	// spinning, so the in-process emulator's reader shares the other: 0.15
	// there (24 % seen once on a loaded CI machine).
	floor := 0.3
	if testBusyPoll {
		floor = 0.15
	}
	if frac := float64(acceptedAfter) / float64(gotAfter); frac < floor {
		t.Errorf("BeamNG applied %d of the %d replies after the stall (%.0f%%): the repair should get half of them through", acceptedAfter, gotAfter, 100*frac)
	}
	if d := h.emSum.SendCtr - h.emSum.MaxRecvID; d < 0 || d > 1 {
		t.Errorf("at the end sendCtr %v, maxRecvId %v: BeamNG is not back in lockstep", h.emSum.SendCtr, h.emSum.MaxRecvID)
	}
	for _, want := range []string{"BeamNG is no longer in lockstep", "repairing its window", "BeamNG is back in lockstep"} {
		if !log.Has(want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if f := h.c.Faults(); !containsAll(f, "BeamNG ran out of lockstep 1 times", "BeamNG stalled 1 times") {
		t.Errorf("faults %q", f)
	}
}

// In lockstep nothing is reported: BeamNG never sends before it has the
// reply, so the watchdog stays quiet through a whole run (paced like
// BeamNG, in frame batches, and free-running).
func TestLockstepQuiet(t *testing.T) {
	for _, fps := range []float64{0, 60} {
		h := newHarness(t, "../examples/cruise-pedals.json", nil, emulator.Config{Steps: 4000, FPS: fps})
		h.run(t)
		if n := h.c.Stats().LockstepLost.Load(); n != 0 {
			t.Errorf("fps %v: lockstep lost %d times in lockstep", fps, n)
		}
		if f := h.c.Faults(); len(f) != 0 {
			t.Errorf("fps %v: faults %q", fps, f)
		}
	}
}

// A controller restart (a vehicle reset) closes BeamNG's sockets and opens
// new ones: the coupling takes the new source at id 0, re-bases, and stays
// in lockstep; nothing is lost or foreign.
func TestControllerRestart(t *testing.T) {
	var f emulator.Faults
	emulator.ParseFault("restart@1s", &f)
	h := newHarness(t, "../examples/cruise-pedals.json", nil, emulator.Config{Steps: 8000, Faults: f})
	h.run(t)
	st := h.c.Stats()
	if st.Restarts.Load() != 1 || st.SourceChanges.Load() != 1 || st.Foreign.Load() != 0 || st.LockstepLost.Load() != 0 {
		t.Errorf("restarts %d, source changes %d, foreign %d, lockstep lost %d", st.Restarts.Load(), st.SourceChanges.Load(), st.Foreign.Load(), st.LockstepLost.Load())
	}
	if h.emSum.Stalls != 0 || h.emSum.Restarts != 1 || h.emSum.SendCtr-h.emSum.MaxRecvID > 1 {
		t.Errorf("BeamNG %+v", h.emSum)
	}
}

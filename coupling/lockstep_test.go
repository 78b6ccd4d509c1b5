package coupling

import (
	"encoding/binary"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/models"
	"beamconnect/models/kinds"
	"beamconnect/ports"
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

// A reply held back past BeamNG's 2 s timeout is
// delivered after the reply that follows the reset, so BeamNG accepts the
// stale id (200) and then rejects every real reply, running free, for as
// long as the run had lasted (200 messages here). The watchdog sees BeamNG sending before it
// has the replies, reports it, and repairs BeamNG's window: the model's
// controls reach BeamNG at once again (every reply), and BeamNG ends
// back in lockstep. Before, none of the next 200 replies were applied and
// nothing was reported; and until a repair that let every reply through,
// only every other one was applied, for twice as long.
func TestLockstepRepair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalled := false
		var acceptedAfter, gotAfter int64
		// Paced like BeamNG (frame batches), at 4× real time; the model
		// takes 100 µs a step, so that, on the fake clock too, a BeamNG
		// that does not wait sends before the reply it should wait for.
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), model: slowModel(100 * time.Microsecond),
			em: emulator.Config{Steps: 12000, RealTimeFactor: 4, Trace: func(r *emulator.StepRecord) {
				stalled = stalled || r.TimedOut
				// The first 200 replies BeamNG receives after the stall.
				if stalled && r.Got && gotAfter < 200 {
					gotAfter++
					if r.Accepted {
						acceptedAfter++
					}
				}
			}},
			wrap: func(_ int, tr emulator.Transport) emulator.Transport { return &holdOnce{Transport: tr, id: 200} },
		}.sim(t)
		h.run(t)
		st := h.c.Stats()
		if h.emSum.Stalls != 1 || st.Get(StallsRecovered) != 1 {
			t.Fatalf("the held reply should cost one stall: %v", h.emSum)
		}
		if st.Get(LockstepLost) != 1 || st.Get(OutOfLockstep) <= 0 {
			t.Errorf("lockstep lost %d times for %v; want it seen once\n%s", st.Get(LockstepLost), time.Duration(st.Get(OutOfLockstep)), h.log)
		}
		// Every one from the repair's start: only those before the
		// watchdog has seen it (a few messages of evidence) are rejected.
		if acceptedAfter < gotAfter-8 {
			t.Errorf("BeamNG applied %d of the %d replies after the stall: the repair should get every one through", acceptedAfter, gotAfter)
		}
		if d := h.emSum.SendCtr - h.emSum.MaxRecvID; d < 0 || d > 1 {
			t.Errorf("at the end sendCtr %v, maxRecvId %v: BeamNG is not back in lockstep", h.emSum.SendCtr, h.emSum.MaxRecvID)
		}
		for _, want := range []string{"BeamNG is no longer in lockstep", "repairing its window", "BeamNG is back in lockstep"} {
			if !h.log.Has(want) {
				t.Errorf("log lacks %q:\n%s", want, h.log)
			}
		}
		if f := h.s.Faults(); !containsAll(f, "BeamNG ran out of lockstep 1 times", "BeamNG stalled 1 times") {
			t.Errorf("faults %q", f)
		}
	})
}

// slowModel is cruise-pedals taking d of (fake) time per step.
func slowModel(d time.Duration) func(*ports.Plan) models.Model {
	return func(p *ports.Plan) models.Model {
		m, _ := kinds.New("cruise-pedals", p.ModelParams, p, nil)
		return &sleepy{Model: m, d: d}
	}
}

type sleepy struct {
	models.Model
	d time.Duration
}

func (s *sleepy) Step(t float64, out, in [][]float64) bool {
	time.Sleep(s.d)
	s.Model.Step(t, out, in)
	return true
}

// In lockstep nothing is reported: BeamNG never sends before it has the
// reply, so the watchdog stays quiet through a whole run (paced like
// BeamNG, in frame batches, and free-running), whatever the model costs.
func TestLockstepQuiet(t *testing.T) {
	for _, free := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			em := emulator.Config{Steps: 4000}
			if free {
				em.FreeRunning, em.StepCost = true, 500*time.Microsecond
			}
			h := rig{cfg: load(t, "../examples/cruise-pedals.json"), model: slowModel(100 * time.Microsecond), em: em}.sim(t)
			h.run(t)
			if n := h.c.Stats().Get(LockstepLost); n != 0 {
				t.Errorf("free-running %v: lockstep lost %d times in lockstep", free, n)
			}
			if f := h.s.Faults(); len(f) != 0 {
				t.Errorf("free-running %v: faults %q", free, f)
			}
		})
	}
}

// A controller restart (a vehicle reset) closes BeamNG's sockets and opens
// new ones: the coupling takes the new source once the old port is silent,
// re-bases, and stays in lockstep; nothing is lost or foreign, and BeamNG,
// blocked waiting for the reply to its id 0, does not time out.
func TestControllerRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f emulator.Faults
		emulator.ParseFault("restart@1s", &f)
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 8000, Faults: f}}.sim(t)
		h.run(t)
		st := h.c.Stats()
		if st.Get(Restarts) != 1 || st.Get(SourceChanges) != 1 || st.Get(Foreign) != 0 || st.Get(Strangers) != 0 || st.Get(LockstepLost) != 0 {
			t.Errorf("restarts %d, source changes %d, foreign %d, strangers %d, lockstep lost %d",
				st.Get(Restarts), st.Get(SourceChanges), st.Get(Foreign), st.Get(Strangers), st.Get(LockstepLost))
		}
		if h.emSum.Stalls != 0 || h.emSum.Restarts != 1 || h.emSum.SendCtr-h.emSum.MaxRecvID > 1 {
			t.Errorf("BeamNG %+v", h.emSum)
		}
		if f := h.s.Faults(); len(f) != 0 {
			t.Errorf("faults %q", f)
		}
	})
}

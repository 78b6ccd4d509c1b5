package coupling

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
)

// lostReply loses the client's n-th reply on its way to BeamNG.
type lostReply struct {
	emulator.Transport
	n, seen int
}

func (w *lostReply) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	start := time.Now()
	n, ok := w.Transport.Recv(buf, wait, stop)
	if ok {
		if w.seen++; w.seen == w.n {
			// Lost: BeamNG waits on for what is left of its wait.
			if left := wait - time.Since(start); wait > 0 && left > 0 {
				return w.Transport.Recv(buf, left, stop)
			}
			return 0, false
		}
	}
	return n, ok
}

// lostAfterSilence loses BeamNG's first message after a silence of a
// second or more: its ids do not go on where it left off.
type lostAfterSilence struct {
	emulator.Transport
	last time.Time
	done bool
}

func (w *lostAfterSilence) Send(b []byte) error {
	now := time.Now()
	silence := !w.last.IsZero() && now.Sub(w.last) >= time.Second
	w.last = now
	if silence && !w.done {
		w.done = true
		return nil
	}
	return w.Transport.Send(b)
}

// BeamNG pauses (its physics stopped: a hitch, the pause button, a
// debugger) and goes on where it left off: a pause, not a fault. The
// coupling goes on in lockstep at once, whatever the pause's length: no
// re-base, so BeamNG never waits 2 s for a reply, never runs ahead, and no
// wrong address is diagnosed; the summary notes the pause and the longest.
// Before, a pause of a second or more was a fault ("BeamNG went silent"),
// and one of 1.9 s or more was taken for BeamNG's own 2 s wait: the reply
// ids were re-based, BeamNG rejected them and stalled 2 s, and two stalls
// in a row diagnosed replies sent where BeamNG is not listening.
//
// A silence that ends otherwise stays a fault: a reply lost (BeamNG's own
// 2 s wait), ids lost after the pause, a new port.
func TestPauses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		pause   time.Duration
		stop    time.Duration // BeamNG's coupling unloaded this long instead (a new port after it)
		replyID string
		wrap    func(v int, t emulator.Transport) emulator.Transport
		faults  []string // none: a pause, noted
		stalls  int64    // BeamNG's own 2 s waits
	}{
		{name: "1.2 s", pause: 1200 * time.Millisecond},
		{name: "1.95 s, as long as BeamNG's own wait", pause: 1950 * time.Millisecond},
		{name: "2.05 s, as long as BeamNG's own wait", pause: 2050 * time.Millisecond},
		{name: "2.05 s, counter ids", pause: 2050 * time.Millisecond, replyID: "counter"},
		{name: "3 s", pause: 3 * time.Second},
		{name: "30 s", pause: 30 * time.Second},
		{name: "a reply lost: BeamNG's own 2 s wait", wrap: func(_ int, t emulator.Transport) emulator.Transport { return &lostReply{Transport: t, n: 200} },
			faults: []string{"BeamNG stalled 1 times"}, stalls: 1},
		{name: "a message lost after a pause", pause: 1500 * time.Millisecond,
			wrap:   func(_ int, t emulator.Transport) emulator.Transport { return &lostAfterSilence{Transport: t} },
			faults: []string{"BeamNG stalled 1 times", "BeamNG went silent 1 times"}, stalls: 1},
		{name: "a new port after the silence", stop: 1500 * time.Millisecond,
			faults: []string{"BeamNG went silent 1 times"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := load(t, "../examples/cruise-pedals.json")
				if tt.replyID != "" {
					cfg.ReplyID = config.ReplyID(tt.replyID)
				}
				var mu sync.Mutex
				ahead := 0 // physics steps BeamNG's window ran ahead of the replies
				f := emulator.Faults{PauseAt: time.Second, PauseFor: tt.pause, StopAt: time.Second, StopFor: tt.stop}
				h := rig{cfg: cfg, wrap: tt.wrap, em: emulator.Config{Steps: 8000, Faults: f, Trace: func(r *emulator.StepRecord) {
					if r.MaxRecvID > r.SendCtr {
						mu.Lock()
						ahead++
						mu.Unlock()
					}
				}}}.sim(t)
				h.run(t)
				st := h.c.Stats()
				faults, notes := h.s.Faults(), h.s.Notes()
				if h.emSum.Stalls != tt.stalls || ahead != 0 || len(tt.faults) == 0 && h.emSum.Accepted < h.emSum.Sent-1 {
					t.Errorf("BeamNG waited 2 s %d times (want %d), ran ahead of the replies for %d steps: %v", h.emSum.Stalls, tt.stalls, ahead, h.emSum)
				}
				if ds := h.s.Diagnoses(time.Now()); len(ds) != 0 {
					t.Errorf("diagnoses %+v", ds)
				}
				if len(tt.faults) == 0 {
					if len(faults) != 0 || st.Get(Pauses) != 1 || st.Get(StallsRecovered) != 0 || len(notes) != 1 || !containsAll(notes, "BeamNG paused 1 times while connected (the longest", "not a fault") {
						t.Errorf("faults %q, pauses %d, stalls %d, notes %q: want a pause, noted\n%s", faults, st.Get(Pauses), st.Get(StallsRecovered), notes, h.log)
					}
					if d := time.Duration(h.s.Values()[longestPause]); d < tt.pause || d > tt.pause+100*time.Millisecond {
						t.Errorf("the longest pause %v, BeamNG paused %v", d, tt.pause)
					}
					if !h.log.Has("BeamNG went on where it left off, nothing lost: it paused") {
						t.Errorf("the pause's end is not logged:\n%s", h.log)
					}
					return
				}
				if !containsAll(faults, tt.faults...) || st.Get(Pauses) != 0 || slices.ContainsFunc(notes, func(n string) bool { return containsAll([]string{n}, "paused") }) {
					t.Errorf("faults %q, want %q; pauses %d, notes %q\n%s", faults, tt.faults, st.Get(Pauses), notes, h.log)
				}
			})
		})
	}
}

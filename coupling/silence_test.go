package coupling

import (
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/ports"
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
					cfg.ReplyID = ports.ReplyID(tt.replyID)
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

// lateReply delivers to BeamNG's reloaded controller a reply of the
// client's to its old self, late on the network: after a Reopen, its
// first receive gets a copy of the last reply the old controller had.
type lateReply struct {
	emulator.Transport
	last    []byte
	pending bool
}

func (w *lateReply) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	if w.pending {
		w.pending = false
		return copy(buf, w.last), true
	}
	n, ok := w.Transport.Recv(buf, wait, stop)
	if ok {
		w.last = append(w.last[:0], buf[:n]...)
	}
	return n, ok
}

func (w *lateReply) Reopen() error {
	err := w.Transport.(emulator.Reopener).Reopen()
	w.pending = true
	return err
}

// BeamNG's controller is reloaded (new sockets, a new port, ids from 0) and
// a late reply of ours to its old self lands on its new socket: the new
// controller takes it as its own (any reply above 0 is), so its window
// says it is far ahead, and it sends every period without waiting. Its
// messages come from the new port while the old one may still be sending:
// they are held, and the new port is taken with the first message after
// the old one's silence. Before, that message was taken, and the messages
// held before it, BeamNG's own, were then dropped as a stranger's
// ("claimed BeamNG's place while BeamNG still sent", 1 run in 16 after a
// restart on a loaded machine); the reply ids counted from that message,
// not from the new controller's first (a 2 s stall once BeamNG's window
// caught up), and BeamNG stayed out of lockstep unseen where arrival times
// are not stamped. Now the held messages are drained as BeamNG's, the
// restart is a restart, and BeamNG's window is repaired from the new
// session's start, stamps or not, every reply applied meanwhile.
func TestRestartAfterALateReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var aheadFrom, aheadTo time.Time // BeamNG's window ahead of the replies, after the restart
		var got, applied int             // replies BeamNG received, and applied, while ahead
		f := emulator.Faults{Restart: true, RestartAt: time.Second}
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"),
			wrap: func(_ int, t emulator.Transport) emulator.Transport { return &lateReply{Transport: t} },
			em: emulator.Config{Steps: 12000, Faults: f, Trace: func(r *emulator.StepRecord) {
				if r.MaxRecvID > r.SendCtr {
					mu.Lock()
					if aheadFrom.IsZero() {
						aheadFrom = r.Start
					}
					aheadTo = r.Start
					if r.Got {
						got++
						if r.Accepted {
							applied++
						}
					}
					mu.Unlock()
				}
			}}}.sim(t)
		h.run(t)
		st := h.c.Stats()
		if st.Get(Strangers) != 0 || h.log.Has("claimed to be BeamNG") {
			t.Errorf("%d of BeamNG's own messages dropped as a stranger's\n%s", st.Get(Strangers), h.log)
		}
		if st.Get(Restarts) != 1 || st.Get(SourceChanges) != 1 || !h.log.Has("BeamNG's controller restarted: ids from 0 again, from a new port") || h.s.Values()[ModelResets] != 1 {
			t.Errorf("restarts %d, source changes %d, model resets %d: want the restart taken as one\n%s", st.Get(Restarts), st.Get(SourceChanges), h.s.Values()[ModelResets], h.log)
		}
		if aheadFrom.IsZero() {
			t.Fatal("BeamNG's reloaded controller never took the late reply: the test tests nothing")
		}
		// Repaired: back in lockstep well before the end, never a 2 s stall.
		if h.emSum.Stalls != 0 || h.emSum.MaxRecvID > h.emSum.SendCtr || h.emSum.SendCtr-h.emSum.MaxRecvID > 1 {
			t.Errorf("BeamNG at the end: %+v", h.emSum)
		}
		if st.Get(LockstepLost) != 1 || st.endedOutOfLockstep() || !h.log.Has("took a late reply of ours to its old self") {
			t.Errorf("lockstep lost %d, at the end %v: want one episode, repaired\n%s", st.Get(LockstepLost), st.endedOutOfLockstep(), h.log)
		}
		// The repair lets every reply through (but the first, answered
		// before the repair began, and the late one), and takes as many
		// messages as the gap: about the old controller's 1 s.
		ahead := aheadTo.Sub(aheadFrom)
		t.Logf("BeamNG ran ahead of the replies for %v after the restart, and applied %d of the %d replies it got meanwhile; %d messages drained", ahead, applied, got, st.Get(Drained))
		if applied < got-2 || ahead > 1200*time.Millisecond {
			t.Errorf("BeamNG ran ahead for %v, applying %d of %d replies: want every one applied, for no longer than the gap", ahead, applied, got)
		}
		if f := h.s.Faults(); len(f) != 1 || !containsAll(f, "BeamNG ran out of lockstep 1 times") {
			t.Errorf("faults %q", f)
		}
		// BeamNG's time is its two sessions', the messages drained
		// included: the new session counts from its first message, held
		// or not, whatever id the message taken carried.
		if sim := h.c.SimTime(); math.Abs(sim-(h.emSum.SimS-h.plan.Period)) > 1e-9 {
			t.Errorf("simulated %v s, BeamNG %v s: want its time up to its last message", sim, h.emSum.SimS)
		}
	})
}

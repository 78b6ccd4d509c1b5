package mailbox

import (
	"testing"
	"time"

	"beamconnect/internal/eventually"
)

// A side spins its full limit while its spins see the other side's word;
// once most of them do not, it sleeps at once, every probeEvery-th wait
// spinning to see whether that has changed, and it spins again once the
// probes are caught.
func TestSpinnerLearnsWhetherSpinsPay(t *testing.T) {
	s := newSpinner(askerSpin)
	if b := s.budget(0); b != int64(askerSpin) {
		t.Fatalf("first budget %d", b)
	}
	n := 0
	for s.budget(0) != 0 {
		s.spun(false)
		if n++; n > 20 {
			t.Fatal("spins that never pay go on")
		}
	}
	if n < 3 {
		t.Errorf("%d missed spins stopped the spinning: one slow step should not", n)
	}
	probes := 0
	for range 10 * probeEvery {
		if s.budget(0) != 0 {
			probes++
			s.spun(true)
		}
	}
	if probes < 2 || s.budget(0) != int64(askerSpin) {
		t.Errorf("after %d probes caught: budget %d, want the limit again", probes, s.budget(0))
	}
}

// A machine found busy (a spin preempted, a wake-up late) makes the waits
// spin no longer than a wake-up costs for a calm period, which doubles
// while it happens again, up to maxCalm, and starts afresh once it has not
// happened for a while; busy polling never sleeps.
func TestSpinnerCalmsOnABusyMachine(t *testing.T) {
	s := newSpinner(answererSpin)
	now := int64(time.Hour)
	s.busy(now)
	if b := s.budget(now + 1); b != int64(busySpin) {
		t.Errorf("busy: budget %d, want %d", b, busySpin)
	}
	if b := s.budget(now + int64(minCalm)); b != int64(answererSpin) {
		t.Errorf("after the calm: budget %d", b)
	}
	for range 20 {
		now += int64(time.Millisecond)
		s.busy(now)
	}
	if s.calm != int64(maxCalm) || s.calmTo != now+int64(maxCalm) {
		t.Errorf("busy again and again: calm %v", time.Duration(s.calm))
	}
	now += 10 * int64(maxCalm)
	s.busy(now)
	if s.calmTo != now+int64(minCalm) {
		t.Errorf("busy long after: calm until %v", time.Duration(s.calmTo-now))
	}
	p := newSpinner(answererSpin)
	p.limit = -1
	p.busy(now)
	if b := p.budget(now); b >= 0 {
		t.Errorf("busy polling: budget %d", b)
	}
}

// A side woken long after the other wrote (the scheduler made it wait
// behind busy threads) takes the machine as busy; one woken at once does
// not. The request's stamp stands in for the moment it was written: 2 ms
// before, or (however late this machine wakes the side) just now.
func TestLateWakeUpIsABusyMachine(t *testing.T) {
	for _, late := range []bool{false, true} {
		b := newBox(t)
		p := peer(b)
		p.spin.limit = 0 // asleep at once
		done := make(chan error, 1)
		go func() { _, err := p.Next(time.Time{}); done <- err }()
		eventually.Must(t, 10*time.Second, "the answerer asleep", func() bool { return p.word(offReqSleep).Load() != 0 })
		at := b.spin.clock.now() + int64(time.Hour)
		if late {
			at = b.spin.clock.now() - int64(2*time.Millisecond)
		}
		b.seq++
		b.stamp(offReqStamp).Store(at)
		b.word(offReqSeq).Store(b.seq)
		b.wake.wake(b, offReqSeq)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if busy := p.spin.calmTo != 0; busy != late {
			t.Errorf("woken late %v: the machine taken as busy %v", late, busy)
		}
	}
}

// Two threads of one process hand requests and answers over through
// InProcess's ends, the box ordering what each wrote before its Ask or
// Reply, whether the answerer spins or sleeps; Close ends the answerer's
// wait, and a round trip allocates nothing.
func TestInProcess(t *testing.T) {
	ask, answer, err := InProcess()
	if err != nil {
		t.Fatal(err)
	}
	var req, ans int // the two threads' shared memory
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := answer.Next(time.Time{}); err != nil {
				done <- err
				return
			}
			ans = 2 * req
			answer.Reply(0)
		}
	}()
	roundTrip := func(i int) {
		req = i
		ask.Ask(0)
		if _, err := ask.Await(time.Now().Add(10 * time.Second)); err != nil || ans != 2*i {
			t.Fatalf("request %d: %d, %v", i, ans, err)
		}
	}
	for i := range 1000 {
		if i%100 == 99 {
			eventually.Must(t, 10*time.Second, "the answerer asleep", func() bool { return answer.word(offReqSleep).Load() != 0 })
		}
		roundTrip(i)
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() { i++; roundTrip(i) }); n != 0 {
		t.Errorf("%v allocations per round trip", n)
	}
	ask.Close()
	select {
	case err := <-done:
		if err != ErrClosed {
			t.Errorf("Next after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the answerer's wait")
	}
}

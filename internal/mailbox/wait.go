package mailbox

import (
	"sync/atomic"
	"time"

	"beamconnect/internal/timeslice"
)

// How a side waits for the other: it spins only as long as spinning pays,
// then sleeps on the kernel's object (a futex, an event), and never yields.
//
// Spinning pays on a machine with a core to spare: the other side's word
// is seen the moment it is written, where a sleeping thread on an idle
// machine wakes tens of microseconds after it is woken (its core, idle,
// first wakes itself). On a machine whose cores are all busy (the PC
// beside BeamNG) spinning costs: it takes a core from the threads that
// want one, and it spends the spinner's fair share of the processor, so
// that the scheduler preempts it for a whole time slice (milliseconds) and
// stops favouring it when it wakes. A yield is worse still: it hands the
// processor to a busy thread for a slice, at every handoff. A sleeping
// side, woken, runs at once on a busy machine: the scheduler favours a
// thread that has slept over one that has run.
//
// So each side keeps a spinner, which learns from its own waits:
//   - a spin that finds itself preempted (its clock jumps by more than
//     lateGap between two looks), or a sleep woken that late (each side
//     stamps its word with the clock, the same in both processes), has
//     met a machine with no core to spare (a side that spun too long has
//     spent its share of the processor, and the scheduler makes its
//     wake-ups wait): for a calm period (doubling while it happens again,
//     up to maxCalm) waits spin no longer than busySpin, about what a
//     sleep and its wake-up cost the sleeper anyway, then the full limit
//     is tried again;
//   - meanwhile (either side's: the answerer says so with each answer)
//     the asker names its processor with each request, and the answerer
//     moves its thread there (internal/affinity) until the asker names
//     none again: waking a thread asleep on another busy core costs
//     an interrupt and a wait for that core (tens of microseconds, on a
//     virtual machine), handing over on one core a switch (about a
//     microsecond). Neither side spins while they share a processor: the
//     spinner would only keep the other from running;
//   - a spin that the other side does not end within its budget was
//     wasted: once most recent spins are (a step that takes longer, a
//     BeamNG that paces its messages), waits sleep at once, and every
//     probeEvery-th spins again to see whether that has changed.
//
// The figures (docs/performance.md, "Busy cores") come from
// BenchmarkWakeUp and `beamconnect bench --load`.
const (
	// lateGap is a delay that only waiting for the processor explains: a
	// time slice is milliseconds; an interrupt, the other side run in
	// between, a wake-up on an idle machine (BenchmarkWakeUp: p99 about
	// 150 µs) far less.
	lateGap    = 500 * time.Microsecond
	minCalm    = 10 * time.Millisecond
	maxCalm    = time.Second
	probeEvery = 16
	busySpin   = 5 * time.Microsecond
)

// The spin limits: the asker waits for an answer (an FMU's step, usually
// a few microseconds; for an exported FMU, whose asker is the master, a
// round trip with BeamNG, 60 to 150 µs on an idle 2-core machine, where a
// 50 µs limit missed it and every step slept: the exported FMU coupled
// 8 800 messages a second instead of 15 800), the answerer for the next
// request (a round trip with BeamNG, tens of microseconds at full rate).
// A spin that does not pay (BeamNG paced to real time) or meets busy
// cores is cut short by the spinner, whatever the limit.
const (
	askerSpin    = 300 * time.Microsecond
	answererSpin = 100 * time.Microsecond
)

// spinner is one side's judgement of how long its waits spin; only the
// goroutine that waits on that side touches it.
type spinner struct {
	limit    int64  // ns a wait spins at most; < 0: until what it waits for comes (busy polling)
	score    int32  // recent spins ended by the other side, in 1/256ths (an average over about 8)
	waits    uint32 // waits so far, for the probes
	calmTo   int64  // clock (ns) until which waits spin busySpin at most
	calm     int64  // the next calm period
	lastBusy int64  // clock (ns) a wait last lost the processor
	clock    clock
}

func newSpinner(limit time.Duration) spinner {
	return spinner{limit: int64(limit), score: 256, calm: int64(minCalm)}
}

// budget is how long the wait starting at now may spin: 0 not at all, < 0
// until what it waits for comes.
func (s *spinner) budget(now int64) int64 {
	s.waits++
	switch {
	case s.limit < 0:
		return -1
	case s.score < 128 && s.waits%probeEvery != 0:
		return 0
	case now < s.calmTo:
		return min(s.limit, int64(busySpin))
	}
	return s.limit
}

// busyAt reports whether at now this side's waits find the cores busy:
// they spin briefly, and the asker asks the answerer to run beside it. A
// side that busy polls does not ask: it keeps its core.
func (s *spinner) busyAt(now int64) bool { return s.limit >= 0 && now < s.calmTo }

// spun notes how a spin of budget ns ended: caught (the other side's word
// came within it) or not.
func (s *spinner) spun(caught bool) {
	v := int32(0)
	if caught {
		v = 256
	}
	s.score += (v - s.score) / 8
	if caught && s.score < 256 && s.score > 248 {
		s.score = 256 // the integer average creeps, never arrives
	}
}

// busy notes that a wait lost the processor at now: the machine's cores
// are busy; waits spin briefly for a while.
func (s *spinner) busy(now int64) {
	if now-s.lastBusy > 4*int64(maxCalm) {
		s.calm = int64(minCalm) // the last was long ago: start afresh
	}
	s.lastBusy = now
	s.calmTo = now + s.calm
	s.calm = min(2*s.calm, int64(maxCalm))
}

// spin looks at done until it reports true, the budget (ns; < 0: none)
// is spent, the deadline (clock ns; 0: none) passes or the box closes.
// It reports whether done did, and notes what it learnt.
func (s *spinner) spin(done func() bool, closed *atomic.Uint32, start, budget, deadline int64) bool {
	last := start
	for i := 0; ; i++ {
		if done() {
			if budget >= 0 {
				s.spun(true)
			}
			return true
		}
		if i&7 != 7 {
			continue
		}
		now := s.clock.now()
		switch {
		case budget >= 0 && now-last > int64(lateGap):
			s.busy(now)
			return done()
		case budget >= 0 && now-start >= budget:
			s.spun(false)
			return done()
		case deadline != 0 && now >= deadline, closed.Load() != 0:
			return done()
		}
		last = now
	}
}

// awaitWord waits until the word at off reaches want (a sequence number:
// it only grows, and wraps), spinning as the spinner judges, then sleeping
// while sleep is set so the other side wakes it; the zero deadline waits
// for ever. It reports false at the deadline or once the box is closed. A
// sleep woken later than lateGap after the word's stamp says the machine
// is busy.
func (b *Box) awaitWord(off, sleep, stamp int, want uint32, deadline time.Time) bool {
	w := b.word(off)
	reached := func() bool { return int32(w.Load()-want) >= 0 }
	if reached() {
		return true
	}
	closed := b.word(offClosed)
	s := &b.spin
	start := s.clock.now()
	if budget := s.budget(start); budget != 0 && !b.beside {
		end := int64(0)
		if !deadline.IsZero() {
			end = start + int64(time.Until(deadline))
		}
		if s.spin(reached, closed, start, budget, end) {
			return true
		}
	}
	for slept := false; ; slept = true {
		cur := w.Load()
		if int32(cur-want) >= 0 {
			if now := s.clock.now(); slept && now-b.stamp(stamp).Load() > int64(lateGap) {
				s.busy(now)
			}
			return true
		}
		if closed.Load() != 0 {
			return false
		}
		left := closeCheck
		if !deadline.IsZero() {
			if left = min(time.Until(deadline), closeCheck); left <= 0 {
				return false
			}
		}
		b.word(sleep).Store(1)
		if int32(w.Load()-want) < 0 && closed.Load() == 0 {
			testHookBeforeSleep()
			timeslice.Shorten() // woken, run at once beside busy threads
			b.wake.wait(b, off, cur, left)
		}
		b.word(sleep).Store(0)
	}
}

// closeCheck bounds each sleep of a wait. Close changes no word a wait
// sleeps on (the sequence numbers are the other side's to write), so a
// Close that lands between a wait's last look at the closed flag and its
// sleep is seen only when the sleep ends: at its deadline, or never for a
// wait without one. Waking every closeCheck to look again costs nothing a
// sleeping side would notice, and bounds how late a Close is seen.
const closeCheck = 100 * time.Millisecond

// testHookBeforeSleep runs as a wait is about to sleep, after its last
// look (tests: a Close landing there).
var testHookBeforeSleep = func() {}

//go:build windows || (linux && (amd64 || arm64))

package mailbox

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"beamconnect/internal/affinity"
	"beamconnect/internal/eventually"
)

// busyFor puts a side's spinner in its calm period (the cores found busy)
// or out of it.
func busyFor(b *Box, busy bool) {
	b.spin.calmTo = 0
	if busy {
		b.spin.calmTo = b.spin.clock.now() + int64(time.Hour)
	}
}

// While the asker finds the cores busy, each request names its processor
// and the answerer's thread runs there, following the asker from one
// processor to another; once the asker finds them free again, the
// requests name none and the answerer runs where it may.
func TestBusyAskerHasTheAnswererBesideIt(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one processor: every thread is beside every other")
	}
	ask, answer, err := InProcess()
	if err != nil {
		t.Fatal(err)
	}
	defer ask.Close()
	type seen struct {
		on     affinity.Processor
		beside bool
	}
	got := make(chan seen, 1)
	go func() {
		for {
			if _, err := answer.Next(time.Time{}); err != nil {
				return
			}
			got <- seen{affinity.Current(), answer.beside}
			busyFor(answer, false) // only the asker's view counts here
			answer.Reply(0)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var asker affinity.Follower // moves the asker's thread, as the kernel might
	defer asker.Follow(0)
	for i, tc := range []struct {
		busy bool
		on   affinity.Processor // where the asker runs (0: anywhere)
	}{{false, 0}, {true, 2}, {true, 1}, {true, 2}, {false, 1}, {false, 0}} {
		if tc.on != 0 && !asker.Follow(tc.on) {
			t.Fatalf("cannot move the asker to processor %d", tc.on-1)
		}
		busyFor(ask, tc.busy)
		ask.Ask(0)
		if _, err := ask.Await(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		s := <-got
		named := affinity.Processor(ask.word(offReqCPU).Load())
		switch {
		case tc.busy && (named != tc.on || !ask.beside):
			t.Errorf("round %d, busy: the request named processor %d (asker beside %v), want %d", i, named, ask.beside, tc.on)
		case tc.busy && (s.on != tc.on || !s.beside):
			t.Errorf("round %d, busy: the answerer ran on %d (beside %v), want beside the asker on %d", i, s.on, s.beside, tc.on)
		case !tc.busy && (named != 0 || ask.beside || s.beside):
			t.Errorf("round %d, quiet: the request named processor %d, asker beside %v, answerer beside %v; want none", i, named, ask.beside, s.beside)
		}
	}
}

// Beside each other, neither side spins: the one that waits would only
// keep the other from the processor they share. Quiet, each spins before
// it sleeps. After a first round trip, the answer (and the next request)
// comes only once the waiting side sleeps, so that a spin, if any, misses,
// and its spinner notes it.
func TestSidesBesideEachOtherDoNotSpin(t *testing.T) {
	for _, busy := range []bool{false, true} {
		ask, answer, err := InProcess()
		if err != nil {
			t.Fatal(err)
		}
		scores := make(chan int32, 2) // the answerer's, after each request came
		done := make(chan error, 1)
		go func() {
			for i := 0; ; i++ {
				if _, err := answer.Next(time.Time{}); err != nil {
					done <- nil
					return
				}
				scores <- answer.spin.score
				if i > 0 && !eventually.True(10*time.Second, func() bool { return answer.word(offAnsSleep).Load() != 0 }) {
					done <- errors.New("the asker never slept")
					return
				}
				busyFor(answer, false) // only the asker's view counts here
				answer.Reply(0)
			}
		}()
		var asker [2]int32
		for i := range 2 {
			busyFor(ask, busy)
			asker[i] = ask.spin.score
			ask.Ask(0)
			if _, err := ask.Await(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			eventually.Must(t, 10*time.Second, "the answerer asleep", func() bool { return answer.word(offReqSleep).Load() != 0 })
		}
		askerSpun, answererSpun := ask.spin.score < asker[1], false
		a0, a1 := <-scores, <-scores
		answererSpun = a1 < a0
		ask.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		switch {
		case busy && affinity.Current() != 0 && !ask.beside:
			t.Error("busy: the asker did not ask for the answerer beside it")
		case busy && (askerSpun || answererSpun):
			t.Errorf("beside each other: the asker spun %v, the answerer %v; want neither", askerSpun, answererSpun)
		case !busy && (!askerSpun || !answererSpun):
			t.Errorf("quiet: the asker spun %v, the answerer %v; want both", askerSpun, answererSpun)
		}
	}
}

// The answerer's waits may find the cores busy before the asker's do (it
// sleeps more often: between messages): it says so with its answer, and
// the asker's next request names its processor as if its own had; once
// the answerer finds them free again, the requests name none.
func TestBusyAnswererHasTheAskerNameItsProcessor(t *testing.T) {
	ask, answer, err := InProcess()
	if err != nil {
		t.Fatal(err)
	}
	defer ask.Close()
	var answererBusy bool // written before Ask, read after Next: the box orders them
	beside := make(chan bool, 1)
	go func() {
		for {
			if _, err := answer.Next(time.Time{}); err != nil {
				return
			}
			beside <- answer.beside
			busyFor(answer, answererBusy)
			answer.Reply(0)
		}
	}()
	for i, tc := range []struct{ busyAfter, named bool }{
		{true, false}, // the first request: the answerer has said nothing yet
		{true, true},
		{false, true},
		{false, false},
	} {
		answererBusy = tc.busyAfter
		busyFor(ask, false) // only the answerer's view counts here
		ask.Ask(0)
		if _, err := ask.Await(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		named := ask.word(offReqCPU).Load() != 0
		if followed := <-beside; named != tc.named || followed != tc.named {
			t.Errorf("request %d: named its processor %v, the answerer beside %v; want %v", i, named, followed, tc.named)
		}
	}
}

package mailbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"beamconnect/internal/eventually"
)

// The test binary is the answering child too: with the environment
// variable set it serves its box (echo: each request's float64 doubled)
// until the box is closed.
func TestMain(m *testing.M) {
	switch os.Getenv("MAILBOX_TEST_CHILD") {
	case "echo":
		b, err := FromEnv()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		setMode(b, os.Getenv("MAILBOX_TEST_WAIT"))
		serve(b)
		os.Exit(0)
	case "silent":
		if _, err := FromEnv(); err != nil {
			os.Exit(2)
		}
		select {} // takes the box, never answers
	}
	os.Exit(m.Run())
}

// serve answers each request with its float64 doubled, until closed.
func serve(b *Box) {
	for {
		req, err := b.Next(time.Time{})
		if err != nil {
			return
		}
		x := math.Float64frombits(binary.LittleEndian.Uint64(req))
		binary.LittleEndian.PutUint64(b.Answer(), math.Float64bits(2*x))
		b.Reply(8)
	}
}

// setMode sets how b's waits wait: "" as they do by default, "busy poll"
// never asleep, "sleep" at once.
func setMode(b *Box, mode string) {
	switch mode {
	case "busy poll":
		b.BusyPoll()
	case "sleep":
		b.spin.limit = 0
	}
}

// peer is the other end of b in this process: the same memory, its own
// sequence.
func peer(b *Box) *Box {
	p := &Box{wake: b.wake}
	p.init(b.mem, b.reqCap, b.ansCap, false)
	return p
}

func ask(t testing.TB, b *Box, x float64, wait time.Duration) (float64, error) {
	binary.LittleEndian.PutUint64(b.Request(), math.Float64bits(x))
	if err := b.Ask(8); err != nil {
		return 0, err
	}
	a, err := b.Await(time.Now().Add(wait))
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(a)), nil
}

// servePeer serves b from a goroutine until the test ends, and lets go of
// the memory only once it has returned.
func servePeer(t testing.TB, b *Box, wait string) {
	done := make(chan struct{})
	p := peer(b)
	setMode(p, wait)
	go func() { serve(p); close(done) }()
	t.Cleanup(func() { b.Close(); <-done })
}

func newBox(t testing.TB) *Box {
	b, err := Create(64, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); b.Release() })
	return b
}

// Requests and answers go round, one at a time, whether the answerer
// spins or sleeps between them.
func TestRoundTrips(t *testing.T) {
	for _, wait := range []string{"", "busy poll", "sleep"} {
		b := newBox(t)
		servePeer(t, b, wait)
		for i := range 1000 {
			if i%100 == 99 && wait != "busy poll" {
				eventually.Must(t, 10*time.Second, "the answerer asleep", func() bool { return b.word(offReqSleep).Load() != 0 })
			}
			if got, err := ask(t, b, float64(i), 5*time.Second); err != nil || got != 2*float64(i) {
				t.Fatalf("%q, request %d: %v, %v", wait, i, got, err)
			}
		}
	}
}

// An answerer that takes no request leaves the asker waiting only until
// its deadline; an answer to an older request never passes for the
// newest; a torn answer is said to be one.
func TestFaults(t *testing.T) {
	b := newBox(t)
	p := peer(b)
	start := time.Now()
	if _, err := ask(t, b, 1, 20*time.Millisecond); !errors.Is(err, ErrDeadline) || time.Since(start) > time.Second {
		t.Errorf("no answer: %v after %v", err, time.Since(start))
	}
	// The answerer takes the first request late and answers it: the
	// asker, on its second request, must not take that answer.
	if _, err := p.Next(time.Time{}); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b.Request(), 2)
	b.Ask(8)
	p.seq = 1 // still answering the first
	binary.LittleEndian.PutUint64(p.Answer(), 99)
	p.Reply(8)
	if a, err := b.Await(time.Now().Add(20 * time.Millisecond)); !errors.Is(err, ErrDeadline) {
		t.Errorf("an old request's answer was taken: %v, %v", a, err)
	}
	// A torn answer: its trailing sequence number is not yet written.
	p.seq = b.seq
	p.Reply(8)
	binary.LittleEndian.PutUint32(p.ans[4+8:], p.seq-1)
	if _, err := b.Await(time.Now().Add(20 * time.Millisecond)); !errors.Is(err, ErrTorn) {
		t.Errorf("a torn answer: %v", err)
	}
}

// Closing ends a wait on either side at once.
func TestCloseEndsWaits(t *testing.T) {
	b := newBox(t)
	p := peer(b)
	next := make(chan error)
	go func() { _, err := p.Next(time.Time{}); next <- err }()
	b.Close()
	select {
	case err := <-next:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Next after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the answerer's wait")
	}
	b2 := newBox(t)
	await := make(chan error)
	go func() { _, err := ask(t, b2, 1, time.Hour); await <- err }()
	eventually.Must(t, 10*time.Second, "the asker asleep", func() bool { return b2.word(offAnsSleep).Load() != 0 })
	peer(b2).Close()
	select {
	case err := <-await:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Await after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the asker's wait")
	}
}

// Close from one goroutine may race Release on another (the exported
// FMU's child: its master's process ends while the FMU is freed): a Close
// after Release touches nothing, and never the unmapped memory (it
// crashed the child with a fault now and then).
func TestCloseRacesRelease(t *testing.T) {
	for range 200 {
		b, err := Create(64, 64)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { b.Close(); close(done) }()
		b.Close()
		b.Release()
		<-done
		b.Close() // after Release: nothing
	}
}

// An answerer that works on a request beats: the asker sees the box's
// stamp move with the clock, though no answer came.
func TestBeat(t *testing.T) {
	b := newBox(t)
	p := peer(b)
	if b.stamp(offAnsBeat).Load() != 0 {
		t.Fatal("a new box has a beat")
	}
	if err := b.Ask(0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Next(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	before := b.spin.clock.now()
	p.Beat()
	if got := b.stamp(offAnsBeat).Load(); got < before || got > b.spin.clock.now() {
		t.Errorf("the beat is %d, want the clock's now (between %d and now)", got, before)
	}
	if b.Answered() {
		t.Error("a beat passed for an answer")
	}
	if p.Superseded() {
		t.Error("the request in hand is superseded before the asker asked again")
	}
	if err := b.Ask(0); err != nil { // the asker gives up on it
		t.Fatal(err)
	}
	if !p.Superseded() {
		t.Error("a newer request does not supersede the one in hand")
	}
}

// A Close that lands as a wait is about to sleep (after its last look at
// the closed flag) ends the wait all the same: Next, which has no
// deadline, and Await with an hour's. Before, both slept on until their
// deadline, Next for ever.
func TestCloseJustBeforeTheSleep(t *testing.T) {
	for _, side := range []string{"Next", "Await"} {
		t.Run(side, func(t *testing.T) {
			b := newBox(t)
			p := peer(b)
			var once sync.Once
			testHookBeforeSleep = func() { once.Do(func() { b.Close() }) }
			defer func() { testHookBeforeSleep = func() {} }()
			done := make(chan error, 1)
			if side == "Next" {
				go func() { _, err := p.Next(time.Time{}); done <- err }()
			} else {
				go func() { _, err := ask(t, b, 1, time.Hour); done <- err }()
			}
			select {
			case err := <-done:
				if !errors.Is(err, ErrClosed) {
					t.Errorf("%s after Close: %v", side, err)
				}
			case <-time.After(30 * time.Second): // without the bound, never
				t.Fatalf("a Close just before %s's sleep was not seen", side)
			}
		})
	}
}

// child starts this test binary as the box's answering child.
func child(t testing.TB, b *Box, mode, wait string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	b.Attach(cmd)
	cmd.Env = append(cmd.Env, "MAILBOX_TEST_CHILD="+mode, "MAILBOX_TEST_WAIT="+wait)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// Across processes: the child inherits the box and answers through it;
// when it dies without answering, the asker's wait ends at its deadline.
func TestChildProcess(t *testing.T) {
	b := newBox(t)
	child(t, b, "echo", "")
	for i := range 200 {
		if got, err := ask(t, b, float64(i), 10*time.Second); err != nil || got != 2*float64(i) {
			t.Fatalf("request %d: %v, %v", i, got, err)
		}
	}
	b2 := newBox(t)
	cmd := child(t, b2, "silent", "")
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := ask(t, b2, 1, 50*time.Millisecond); !errors.Is(err, ErrDeadline) {
		t.Errorf("a dead child: %v", err)
	}
}

// A handoff allocates nothing on either side.
func TestAllocs(t *testing.T) {
	b := newBox(t)
	servePeer(t, b, "")
	x := 0.0
	if n := testing.AllocsPerRun(200, func() { x++; ask(t, b, x, 5*time.Second) }); n != 0 {
		t.Errorf("%v allocations per round trip", n)
	}
}

package coupling

import (
	"context"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/models/kinds"
	"beamconnect/timesync"
)

// A session ends with Options.HandOver while BeamNG runs on, and the next
// session of the same BeamNG takes over (Options.Resume), as an exported
// FMU does when the master resets it and initializes it again. BeamNG's
// messages meanwhile wait in the socket, and the reply ids go on from where
// the first session let go, since BeamNG applies only a reply whose id is
// above the highest it applied: BeamNG never waits 2 s, and stays in
// lockstep. Taken over later than BeamNG's 2 s wait, BeamNG has reset its
// window: the ids are re-based, as after any such wait, and BeamNG is in
// lockstep again.
func TestHandover(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gap    time.Duration // between the sessions
		stalls int64         // BeamNG's 2 s waits
	}{
		{name: "at once"},
		{name: "100 ms later", gap: 100 * time.Millisecond},
		{name: "3 s later, after BeamNG's 2 s wait", gap: 3 * time.Second, stalls: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 6000},
					opts: func(_ *harness, o *Options) { o.HandOver = true }}
				h := r.sim(t)
				em := make(chan emulator.Summary, 1)
				go func() {
					s, _ := h.em.Run(context.Background())
					em <- s
				}()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.s.Run(ctx)
				}()
				time.Sleep(time.Second)
				cancel()
				<-done
				hs := h.s.Handovers()
				if len(hs) != 1 || hs[0] == nil {
					t.Fatalf("handovers %v: want the vehicle's", hs)
				}

				time.Sleep(tt.gap)
				model, err := kinds.New(h.plan.Model, h.plan.ModelParams, h.plan, nil)
				if err != nil {
					t.Fatal(err)
				}
				next := &logBuffer{}
				s, err := New(Options{Plan: h.plan, Model: model, Log: next.Logger(), Local: loopback, Listen: memListen(h.net),
					Clock: timesync.SleepClock{}, Resume: hs})
				if err != nil {
					t.Fatal(err)
				}
				s.Link(0).SetRemote(h.c.Remote())
				if err := s.Bind(); err != nil {
					t.Fatal(err)
				}
				if got, want := s.Link(0).LocalAddr(), h.c.LocalAddr(); got != want {
					t.Fatalf("the next session bound %v: want the socket taken over, %v", got, want)
				}
				ctx, cancel = context.WithCancel(context.Background())
				done = make(chan struct{})
				go func() {
					defer close(done)
					s.Run(ctx)
				}()
				sum := <-em
				cancel()
				<-done

				if sum.Stalls != tt.stalls {
					t.Errorf("BeamNG waited 2 s %d times, want %d: %v", sum.Stalls, tt.stalls, sum)
				}
				// In lockstep BeamNG's count of messages sent since its last
				// reset is the highest reply id it applied, or one above while
				// it waits for a reply.
				if d := sum.SendCtr - sum.MaxRecvID; d < 0 || d > 1 {
					t.Errorf("BeamNG sent %v messages since its last reset and applied reply id %v: out of lockstep", sum.SendCtr, sum.MaxRecvID)
				}
				// The first session's neutral reply answered BeamNG's next
				// message in advance: the next session's reply to it, if that
				// message was not drained, is the one BeamNG drops.
				if sum.Rejected > 1 || sum.Accepted < sum.Sent-1-2*tt.stalls {
					t.Errorf("BeamNG applied %d replies of %d messages, dropped %d", sum.Accepted, sum.Sent, sum.Rejected)
				}
				rebased := strings.Contains(next.String(), "re-basing reply ids")
				if rebased != (tt.stalls > 0) {
					t.Errorf("the next session re-based its reply ids: %v, want %v:\n%s", rebased, tt.stalls > 0, next)
				}
				if f := s.Faults(); tt.stalls == 0 && len(f) > 0 {
					t.Errorf("the next session's faults %q: want none", f)
				}
			})
		})
	}
}

// A handover the next session cannot take (BeamNG at another address now)
// is closed: its port is free again.
func TestHandoverNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 1000},
			opts: func(_ *harness, o *Options) { o.HandOver = true }}
		h := r.sim(t)
		h.run(t)
		hs := h.s.Handovers()
		if len(hs) != 1 || hs[0] == nil {
			t.Fatalf("handovers %v: want the vehicle's", hs)
		}
		port := h.c.LocalAddr()
		s, err := New(Options{Plan: h.plan, Model: h.model, Local: loopback, Listen: memListen(h.net), Resume: hs})
		if err != nil {
			t.Fatal(err)
		}
		s.Link(0).SetRemote(netip.MustParseAddrPort("127.0.0.1:7"))
		if err := s.Bind(); err != nil {
			t.Fatal(err)
		}
		if s.Link(0).LocalAddr() == port {
			t.Fatalf("bound %v: the handover of another BeamNG's was taken", port)
		}
		c, err := h.net.Listen(port, 0)
		if err != nil {
			t.Fatalf("the handover's port %v is still bound: %v", port, err)
		}
		c.Close()
	})
}

// Over real sockets, read either way: the next session takes the socket
// over (busy polling from its own loop's thread), and BeamNG, which ran on,
// never waits 2 s and stays in lockstep.
func TestHandoverUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets on the real clock: timing a race detector would distort")
	}
	for _, busy := range []bool{false, true} {
		if busy && runtime.GOOS != "linux" {
			continue
		}
		cfg := load(t, "../examples/cruise-pedals.json")
		cfg.BusyPoll = busy
		answered := make(chan struct{})
		var once sync.Once
		h := rig{cfg: cfg, em: emulator.Config{Steps: 20000}, opts: func(_ *harness, o *Options) {
			o.HandOver = true
			o.OnMessage = func(_ int, id, _ float64) {
				if id >= 500 {
					once.Do(func() { close(answered) })
				}
			}
		}}.udp(t)
		em := make(chan emulator.Summary, 1)
		go func() {
			s, _ := h.em.Run(context.Background())
			em <- s
		}()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.s.Run(ctx)
		}()
		select {
		case <-answered:
		case <-time.After(time.Minute):
			t.Fatalf("busy %v: BeamNG's message 500 was not answered in a minute", busy)
		}
		cancel()
		<-done
		model, err := kinds.New(h.plan.Model, h.plan.ModelParams, h.plan, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{Plan: h.plan, Model: model, Local: loopback, BusyPoll: busy, Resume: h.s.Handovers()})
		if err != nil {
			t.Fatal(err)
		}
		s.Link(0).SetRemote(h.c.Remote())
		if err := s.Bind(); err != nil {
			t.Fatal(err)
		}
		if got, want := s.Link(0).LocalAddr(), h.c.LocalAddr(); got != want {
			t.Fatalf("busy %v: the next session bound %v: want the socket taken over, %v", busy, got, want)
		}
		ctx, cancel = context.WithCancel(context.Background())
		done = make(chan struct{})
		go func() {
			defer close(done)
			s.Run(ctx)
		}()
		var sum emulator.Summary
		select {
		case sum = <-em:
		case <-time.After(time.Minute):
			t.Fatalf("busy %v: BeamNG's side did not finish in a minute", busy)
		}
		cancel()
		<-done
		if d := sum.SendCtr - sum.MaxRecvID; sum.Stalls != 0 || d < 0 || d > 1 || sum.Rejected > 1 {
			t.Errorf("busy %v: BeamNG across the handover: %v; want no 2 s wait, in lockstep", busy, sum)
		}
		if n := s.Link(0).Stats().Get(Replies); n < 1000 {
			t.Errorf("busy %v: the next session answered %d messages, want the rest of BeamNG's", busy, n)
		}
	}
}

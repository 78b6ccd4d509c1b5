package coupling

import (
	"beamconnect/ports"
	"context"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/internal/memnet"
	"beamconnect/models"
)

// BeamNG's full address is latched at its first message. A message from
// another port of its host is held, and taken as BeamNG's only once the
// latched port has been silent long enough (a reloaded controller: its old
// socket is closed; a new session); while the latched port still sends it
// is a stranger's, whatever id it carries (one datagram with id 0 or 1e6
// took the coupling over before), and is dropped. Ids that jump further
// than BeamNG can have sent are dropped, unless BeamNG goes on from there.
func TestSourceLatching(t *testing.T) {
	log := &logBuffer{}
	d := newDirect(t, load(t, "../examples/cruise-pedals.json"), models.Hold{}, log)
	a, b, c := d.from(40000), d.from(40001), d.from(40002)
	t0 := d.start()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	type step struct {
		from      netip.AddrPort // invalid: no message, time passes
		id, ms    float64
		replyID   float64 // 0: no reply
		strangers int64
		jumps     int64
		restarts  int64
	}
	var none netip.AddrPort
	// One test, not subtests: each step's verdict depends on the steps before it.
	for i, s := range []step{
		{a, 10, 0, 1, 0, 0, 0},              // latched: BeamNG sends from a
		{a, 11, 5, 2, 0, 0, 0},              //
		{b, 1e6, 7, 0, 0, 0, 0},             // another port: held…
		{a, 12, 10, 3, 1, 0, 0},             // …and dropped as BeamNG goes on undisturbed
		{b, 0, 12, 0, 1, 0, 0},              // id 0 from another port while BeamNG still sends…
		{a, 13, 15, 4, 2, 0, 0},             // …is a stranger's too
		{b, 0, 20, 0, 2, 0, 0},              // BeamNG's controller reloaded: its old port falls silent
		{none, 0, 60, 0, 2, 0, 0},           // 40 ms of silence: not yet
		{none, 0, 125, 1, 2, 0, 1},          // 110 ms: the held message is BeamNG's, answered, latched
		{a, 14, 130, 0, 2, 0, 1},            // the old port: held…
		{b, 1, 135, 2, 3, 0, 1},             // …a stranger's, as the new one sends
		{b, 1e9, 140, 0, 3, 1, 1},           // an id no BeamNG can have reached: dropped
		{b, 2, 145, 3, 3, 1, 1},             // BeamNG goes on
		{b, 5e8, 150, 0, 3, 2, 1},           // a jump…
		{b, 5e8 + 1, 155, 5e8 + 2, 3, 2, 1}, // …that BeamNG continues is followed
		{c, 77, 1400, 1, 3, 2, 1},           // after 1.2 s of silence, a new port is a new session at once
		{b, 5e8 + 2, 1405, 0, 3, 2, 1},      // and the old one held…
		{c, 78, 1410, 2, 4, 2, 1},           // …and dropped
	} {
		var reply []float64
		ok := false
		if s.from.IsValid() {
			d.msg[0] = s.id
			reply, ok = d.send(s.from, at(s.ms))
		} else {
			reply, ok = d.pass(at(s.ms))
		}
		got := 0.0
		if ok {
			got = reply[0]
		}
		st := d.l.Stats()
		if got != s.replyID || st.Get(Strangers) != s.strangers || st.Get(IDJumps) != s.jumps || st.Get(Restarts) != s.restarts {
			t.Fatalf("step %d (id %v from %v at %v ms): reply id %v strangers %d jumps %d restarts %d, want %v %d %d %d\n%s",
				i, s.id, s.from, s.ms, got, st.Get(Strangers), st.Get(IDJumps), st.Get(Restarts), s.replyID, s.strangers, s.jumps, s.restarts, log)
		}
	}
	if n := d.l.Stats().Get(SourceChanges); n != 2 {
		t.Errorf("source changes %d, want 2 (the reload, the new session)", n)
	}
	// The first stranger is warned about at once, naming both addresses;
	// the next ones within 5 s are only counted.
	if n := log.Count("claimed to be BeamNG while BeamNG's own port still sends"); n != 1 {
		t.Errorf("%d warnings about strangers, want 1:\n%s", n, log)
	}
	if !log.Has("from=127.0.0.1:40001") || !log.Has("beamng=127.0.0.1:40000") {
		t.Errorf("the warning names neither address:\n%s", log)
	}
	if !log.Has("BeamNG's controller restarted") || !log.Has("a new coupling session") || !log.Has("ids jumped and went on") {
		t.Errorf("the reload, the new session or the followed jump went unlogged:\n%s", log)
	}
	if f := d.s.Faults(); !containsAll(f, "claimed BeamNG's place") {
		t.Errorf("faults %q", f)
	}
}

// strangerAt sends, from another port of BeamNG's host, BeamNG-sized
// messages with ids from `id` (and a speed that would make the model
// floor the throttle), once BeamNG's messages have begun.
func strangerAt(h *harness, id float64, n int) func(ctx context.Context) {
	return func(ctx context.Context) {
		s, _ := h.net.Listen(loopback, 0)
		for ctx.Err() == nil && h.c.Stats().Get(Messages) < 200 {
			time.Sleep(time.Millisecond)
		}
		msg := make([]float64, beamng.StateLen)
		msg[17] = 0 // standing still: the cruise model would floor it
		for i := range n {
			msg[0] = id + float64(i)
			b, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
			s.WriteTo(b, h.c.LocalAddr())
			time.Sleep(time.Millisecond)
		}
	}
}

// A stranger on BeamNG's host sends BeamNG-sized datagrams to the coupling
// while BeamNG sends, with id 0 (claiming a controller restart) or a huge
// id: BeamNG keeps control, its replies keep being applied (no freeze), the
// car holds its speed, status stays connected; the stranger is counted,
// warned about and reported.
func TestStrangerWhileBeamNGSends(t *testing.T) {
	for _, id := range []float64{0, 1e6} {
		synctest.Test(t, func(t *testing.T) {
			h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 40000}}.sim(t)
			h.run(t, strangerAt(h, id, 20))
			st := h.c.Stats()
			if st.Get(Strangers) != 20 || st.Get(Restarts) != 0 || st.Get(SourceChanges) != 0 {
				t.Errorf("id %v: strangers %d, restarts %d, source changes %d; want 20, 0, 0", id, st.Get(Strangers), st.Get(Restarts), st.Get(SourceChanges))
			}
			if h.emSum.MaxRecvID >= 1e6 || h.emSum.Stalls != 0 || h.emSum.Accepted < h.emSum.Sent-1 {
				t.Errorf("id %v: the stranger disturbed BeamNG: %+v", id, h.emSum)
			}
			holdsSpeed(t, h)
			for _, s := range h.statusList()[1:] {
				if s == ports.Disconnecting {
					break // the run's end
				}
				if s != ports.Connected {
					t.Errorf("id %v: status went %v", id, s)
				}
			}
			if !h.log.Has("claimed to be BeamNG") || !containsAll(h.s.Faults(), "claimed BeamNG's place") {
				t.Errorf("id %v: faults %q\n%s", id, h.s.Faults(), h.log)
			}
		})
	}
}

// With remoteIP wrong, BeamNG's datagrams are foreign; the coupling says
// so, naming the address seen and the remoteIP to set, once and then at
// most every 5 s.
func TestWrongRemoteIPWarns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := load(t, "../examples/cruise-pedals.json")
		cfg.PingTime = 1 // BeamNG sends every 5 ms without waiting: plenty of datagrams
		h := rig{cfg: cfg, em: emulator.Config{Steps: 1500}}.sim(t)
		h.c.SetRemote(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), h.c.Remote().Port())) // the wrong host
		h.run(t)
		if h.c.Stats().Get(Foreign) < 100 || h.c.Stats().Get(Messages) != 0 {
			t.Fatalf("foreign %d, messages %d", h.c.Stats().Get(Foreign), h.c.Stats().Get(Messages))
		}
		want := "datagrams of BeamNG's size come from a host that is not the configured BeamNG"
		if n := h.log.Count(want); n != 1 || !h.log.Has("expected_host=127.0.0.2") || !h.log.Has("set remoteIP to 127.0.0.1") {
			t.Errorf("%d warnings, want 1 naming both hosts:\n%s", n, h.log)
		}
		if f := h.s.Faults(); len(f) < 2 || !containsAll(f, "never connected", "were not BeamNG's") {
			t.Errorf("faults %q", f)
		}
	})
}

// After a pause, the link answers only BeamNG's newest queued message; a
// datagram from another host that happens to be read first, with an id
// higher than BeamNG's, must not be the one kept: BeamNG's newest is
// answered, the stray counted as foreign.
func TestDrainKeepsOnlyBeamNGs(t *testing.T) {
	d := newDirect(t, load(t, "../examples/cruise-pedals.json"), models.Hold{}, nil)
	from := d.from(40000)
	d.msg[0] = 1
	d.clock.now = d.start()
	if _, ok := d.send(from, d.start()); !ok {
		t.Fatal("no reply to the first message")
	}
	stray, err := d.net.Listen(netip.MustParseAddrPort("127.0.0.9:5000"), 0)
	if err != nil {
		t.Fatal(err)
	}
	beamng, err := d.net.Listen(from, 0)
	if err != nil {
		t.Fatal(err)
	}
	// BeamNG's side paused 3 s (its 2 s timeout passed): then the stray,
	// and BeamNG's ids 2 to 4, are queued when the link reads again.
	d.clock.now = d.start().Add(3 * time.Second)
	queue := func(c *memnet.Conn, id float64) {
		d.msg[0] = id
		b, _ := beamngEncode(d.buf, d.msg)
		if err := c.WriteTo(b, d.l.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	queue(stray, 1e6)
	for id := 2.0; id <= 4; id++ {
		queue(beamng, id)
	}
	d.l.receive() // the stray: dropped
	d.l.receive() // BeamNG's: its newest answered
	st := d.l.Stats()
	if _, _, ok, _ := d.beamng.ReadFrom(d.rx, 0, nil); !ok {
		t.Fatalf("BeamNG got no reply: foreign %d, drained %d, replies %d", st.Get(Foreign), st.Get(Drained), st.Get(Replies))
	}
	if st.Get(Foreign) != 1 || st.Get(Replies) != 2 {
		t.Errorf("foreign %d, replies %d, drained %d: want the stray foreign and BeamNG's newest answered", st.Get(Foreign), st.Get(Replies), st.Get(Drained))
	}
	if got := d.l.in.lastID; got != 4 {
		t.Errorf("the message answered was id %v; want BeamNG's newest, 4", got)
	}
}

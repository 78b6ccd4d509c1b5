package coupling

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// handleOnly is a coupling driven through Handle alone: no sockets.
func handleOnly(t *testing.T, log *logBuffer) *Coupling {
	t.Helper()
	cfg, err := config.Load("../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := ports.Compile(cfg)
	c, err := New(Options{Plan: plan, Model: models.Hold{}, Log: log.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	c.fresh = true
	return c
}

// BeamNG's full address is latched at its first message: a datagram from
// another port of its host is foreign, whatever id it carries (issue 10,
// defect 1: one datagram with id 1e6 took the coupling over), unless it
// starts at id 0 (a reloaded controller) or comes after BeamNG's silence
// (a new session). Ids that jump further than BeamNG can have sent are
// dropped, unless BeamNG goes on from there.
func TestSourceLatching(t *testing.T) {
	log := &logBuffer{}
	c := handleOnly(t, log)
	host := c.remote.Addr()
	a, b, d := netip.AddrPortFrom(host, 40000), netip.AddrPortFrom(host, 40001), netip.AddrPortFrom(host, 40002)
	msg := make([]float64, beamng.StateLen)
	reply := make([]float64, beamng.ControlLen)
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	type step struct {
		from     netip.AddrPort
		id, ms   float64
		replyID  float64 // 0: dropped
		foreign  int64
		jumps    int64
		restarts int64
	}
	for i, s := range []step{
		{a, 10, 0, 1, 0, 0, 0},             // latched: BeamNG sends from a
		{a, 11, 5, 2, 0, 0, 0},             //
		{b, 1e6, 7, 0, 1, 0, 0},            // spoofed from another port: dropped
		{a, 12, 10, 3, 1, 0, 0},            // BeamNG goes on undisturbed
		{b, 13, 12, 0, 2, 0, 0},            // even with a plausible id
		{b, 0, 15, 1, 2, 0, 1},             // id 0 from a new port: a reloaded controller
		{a, 14, 20, 0, 3, 0, 1},            // the old port is foreign now
		{b, 1, 20, 2, 3, 0, 1},             //
		{b, 1e9, 25, 0, 3, 1, 1},           // an id no BeamNG can have reached: dropped
		{b, 2, 30, 3, 3, 1, 1},             // BeamNG goes on
		{b, 5e8, 35, 0, 3, 2, 1},           // a jump…
		{b, 5e8 + 1, 40, 5e8 + 2, 3, 2, 1}, // …that BeamNG continues is followed
		{d, 77, 1240, 1, 3, 2, 1},          // after 1.2 s of silence, a new port is a new session
		{b, 5e8 + 2, 1245, 0, 4, 2, 1},     // and the old one foreign
		{d, 78, 1250, 2, 4, 2, 1},          //
	} {
		msg[0] = s.id
		dg, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
		out, ok := c.Handle(dg, s.from, at(s.ms))
		got := 0.0
		if ok {
			beamng.Decode(reply, out)
			got = reply[0]
		}
		st := c.Stats()
		if got != s.replyID || st.Foreign.Load() != s.foreign || st.IDJumps.Load() != s.jumps || st.Restarts.Load() != s.restarts {
			t.Fatalf("step %d (id %v from %v): reply id %v foreign %d jumps %d restarts %d, want %v %d %d %d\n%s",
				i, s.id, s.from, got, st.Foreign.Load(), st.IDJumps.Load(), st.Restarts.Load(), s.replyID, s.foreign, s.jumps, s.restarts, log)
		}
	}
	if n := c.Stats().SourceChanges.Load(); n != 2 {
		t.Errorf("source changes %d, want 2 (the reload, the new session)", n)
	}
	// The first foreign datagram is warned about at once, naming both
	// addresses; the next ones within 5 s are only counted.
	if n := log.Count("not from the port its coupling sends from"); n != 1 {
		t.Errorf("%d warnings about another port, want 1:\n%s", n, log)
	}
	if !log.Has("from=127.0.0.1:40001") || !log.Has("beamng=127.0.0.1:40000") {
		t.Errorf("the warning names neither address:\n%s", log)
	}
	if !log.Has("BeamNG's controller restarted") || !log.Has("a new coupling session") || !log.Has("ids jumped and went on") {
		t.Errorf("the reload, the new session or the followed jump went unlogged:\n%s", log)
	}
}

// Issue 10, defect 1, over real sockets: one 888-byte datagram with id 1e6
// from another port of BeamNG's host during a run. Before source latching
// it was answered with reply id 1000001, which BeamNG accepted, and BeamNG
// then rejected every real reply and the car stopped.
func TestSpoofedDatagram(t *testing.T) {
	h := newHarness(t, "../examples/cruise-pedals.json", nil, emulator.Config{Steps: 40000})
	spoof, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(loopback))
	if err != nil {
		t.Fatal(err)
	}
	defer spoof.Close()
	go func() {
		for h.c.Stats().Messages.Load() < 200 {
			time.Sleep(time.Millisecond)
		}
		msg := make([]float64, beamng.StateLen)
		msg[0], msg[17] = 1e6, 99 // a huge id, and a speed that would make the model brake
		b, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
		spoof.WriteToUDPAddrPort(b, h.c.LocalAddr())
	}()
	h.run(t)
	st := h.c.Stats()
	if st.Foreign.Load() != 1 {
		t.Errorf("foreign %d, want 1", st.Foreign.Load())
	}
	if h.emSum.MaxRecvID >= 1e6 || h.emSum.Stalls != 0 || h.emSum.Accepted < h.emSum.Sent-1 {
		t.Errorf("the spoofed datagram reached BeamNG: %+v", h.emSum)
	}
	set := h.plan.ModelParams["setSpeed"].(float64)
	checkHeld(t, h, set, func(v emulator.Vehicle) float64 { return v.V }, 0.05*set, "speed")
}

// Issue 10, defect 10: with remoteIP wrong, BeamNG's datagrams are foreign;
// the coupling says so, naming the address seen and the remoteIP to set,
// once and then at most every 5 s.
func TestWrongRemoteIPWarns(t *testing.T) {
	log := &logBuffer{}
	cfg, _ := config.Load("../examples/cruise-pedals.json")
	cfg.PingTime = 1 // BeamNG sends every 5 ms without waiting: plenty of datagrams
	plan, _ := ports.Compile(cfg)
	c, err := New(Options{Plan: plan, Model: models.Hold{}, Log: log.Logger(), Local: loopback})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Bind(); err != nil {
		t.Fatal(err)
	}
	link, err := emulator.ListenUDP(loopback, c.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	c.SetRemote(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), link.LocalAddr().Port())) // the wrong host
	// Paced like BeamNG (0.75 s): free-running, it would be done before Run starts.
	em, _ := emulator.New(emulator.Config{SimulinkTime: plan.Period, PingTime: 1, Steps: 1500}, link)
	runBoth(t, c, em)
	if c.Stats().Foreign.Load() < 100 || c.Stats().Messages.Load() != 0 {
		t.Fatalf("foreign %d, messages %d", c.Stats().Foreign.Load(), c.Stats().Messages.Load())
	}
	want := "datagrams of BeamNG's size come from a host that is not the configured BeamNG"
	if n := log.Count(want); n != 1 || !log.Has("expected_host=127.0.0.2") || !log.Has("set remoteIP to 127.0.0.1") {
		t.Errorf("%d warnings, want 1 naming both hosts:\n%s", n, log)
	}
	if f := c.Faults(); len(f) < 2 || !containsAll(f, "never connected", "were not BeamNG's") {
		t.Errorf("faults %q", f)
	}
}

func containsAll(lines []string, subs ...string) bool {
	for _, sub := range subs {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, sub) }) {
			return false
		}
	}
	return true
}

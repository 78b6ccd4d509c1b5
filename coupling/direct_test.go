package coupling

import (
	"net/netip"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/internal/memnet"
	"beamconnect/models"
	"beamconnect/models/kinds"
	"beamconnect/ports"
)

// direct drives one link's per-message path by hand, message by message:
// each datagram is handled as if it had just been read from `from` at a
// given time, and the reply is read where BeamNG listens. No goroutine, no
// clock: the test says when each message arrives.
type direct struct {
	t      testing.TB
	s      *Session
	l      *Link
	plan   *ports.Plan
	beamng *memnet.Conn // BeamNG's receive socket: the replies land here
	msg    []float64
	buf    []byte
	reply  []float64
	rx     []byte
	clock  *manualClock // the session's: it reads the time each message says
	net    *memnet.Network
	tr     *directSocket // the link's socket
}

// directSocket is the link's socket in a direct test: a read takes the
// datagram the test hands it (next, from `from`), else one queued on the
// in-memory network, and never waits; arrival times are not stamped.
type directSocket struct {
	Transport
	next []byte
	from netip.AddrPort
}

func (s *directSocket) Read(buf []byte) (int, netip.AddrPort, int64, error) {
	if s.next != nil {
		n := copy(buf, s.next)
		s.next = nil
		return n, s.from, 0, nil
	}
	if n, from, ok := s.Transport.Queued(buf); ok {
		return n, from, 0, nil
	}
	return 0, netip.AddrPort{}, 0, errTimeout
}

// manualClock is the time a direct test says it is.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time        { return c.now }
func (c *manualClock) WaitUntil(t time.Time) { c.now = t }

func newDirect(t testing.TB, cfg *config.Config, m models.Model, log *logBuffer, opts ...func(*Options)) *direct {
	t.Helper()
	skipInBusyPoll(t)
	plan, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		if m, err = kinds.New(plan.Model, plan.ModelParams, plan, nil); err != nil {
			t.Fatal(err)
		}
	}
	n := memnet.New()
	clock := &manualClock{now: time.Unix(1e9, 0)}
	var tr *directSocket
	listen := func(local netip.AddrPort) (Transport, error) {
		t, err := memListen(n)(local)
		if err != nil {
			return nil, err
		}
		tr = &directSocket{Transport: t}
		return tr, nil
	}
	o := Options{Plan: plan, Model: m, Params: kinds.Parameters(plan.Model), Listen: listen, Clock: clock}
	if log != nil {
		o.Log = log.Logger()
	}
	for _, f := range opts {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(); err != nil {
		t.Fatal(err)
	}
	l := s.Link(0)
	bn, err := n.Listen(l.Remote(), 0)
	if err != nil {
		t.Fatal(err)
	}
	v := plan.Vehicles[0]
	return &direct{t: t, s: s, l: l, plan: plan, beamng: bn, clock: clock, net: n, tr: tr,
		msg: make([]float64, v.Layout.Len(beamng.FromBeamNG)), buf: make([]byte, beamng.MaxDatagram),
		reply: make([]float64, v.Layout.Len(beamng.ToBeamNG)), rx: make([]byte, beamng.MaxDatagram)}
}

// from is an address of BeamNG's host, at port.
func (d *direct) from(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(d.l.Remote().Addr(), port)
}

// start is when the session started (its clock's time at New).
func (d *direct) start() time.Time { return time.Unix(1e9, 0) }

// send hands the link d.msg (as it stands) from `from` at `at` and returns
// the reply, or ok false when none went out. The link takes it as its
// loop does (receive): a held message whose time has come first.
func (d *direct) send(from netip.AddrPort, at time.Time) (reply []float64, ok bool) {
	b, _ := beamng.Encode(d.buf, d.msg)
	return d.sendRaw(b, from, at)
}

func (d *direct) sendRaw(b []byte, from netip.AddrPort, at time.Time) ([]float64, bool) {
	d.clock.now = at
	d.tr.next, d.tr.from = b, from
	d.l.receive()
	return d.reply1()
}

// pass lets time pass until at with no message: the link reads nothing,
// or a held message whose time has come. It returns the reply, or ok
// false when none went out.
func (d *direct) pass(at time.Time) ([]float64, bool) {
	d.clock.now = at
	d.l.receive()
	return d.reply1()
}

// reply1 reads the reply that went out, if any.
func (d *direct) reply1() ([]float64, bool) {
	n, _, ok, _ := d.beamng.ReadFrom(d.rx, 0, nil)
	if !ok {
		return nil, false
	}
	if err := beamng.Decode(d.reply, d.rx[:n]); err != nil {
		d.t.Fatalf("the reply is %d bytes: %v", n, err)
	}
	return d.reply, true
}

func beamngEncode(buf []byte, msg []float64) ([]byte, error) { return beamng.Encode(buf, msg) }

package coupling

import (
	"net/netip"
	"time"
)

// What is not BeamNG's message, or not yet: a datagram of another host, of
// a length BeamNG does not send, with an id BeamNG cannot have sent; a
// message from a new port of BeamNG's host, held until the latched port
// falls silent (then BeamNG's: a reloaded controller, a new session) or
// sends again (then a stranger's); and what is queued after a (re)connect
// or a pause, drained to BeamNG's newest message.

// warnEvery rate-limits the warnings about datagrams that are not BeamNG's
// and about a model's NaN.
const warnEvery = 5 * time.Second

// stranger counts a message from a new port that claimed BeamNG's place
// while BeamNG's latched port still sent, and warns: at once, naming both
// addresses, then at most every 5 s.
func (s *source) stranger(from netip.AddrPort, n int64, now time.Time) {
	s.stats.add(Strangers, n)
	s.strangerN += n
	if !s.strangerAt.IsZero() && now.Sub(s.strangerAt) < warnEvery {
		return
	}
	s.log.Warn("a datagram from another port of BeamNG's host claimed to be BeamNG while BeamNG's own port still sends: dropped, BeamNG keeps control",
		"from", from, "beamng", s.latched, "count", s.strangerN,
		"hint", "another program, or a second BeamNG coupling configured onto this port; a reloaded BeamNG controller is taken once the old port has been silent for "+s.silence.String())
	s.strangerAt, s.strangerN = now, 0
}

// foreign counts a datagram that is not BeamNG's and warns about it, at
// once for the first and then at most every 5 s, naming the address seen
// and the one expected: a wrong remoteIP, a second vehicle, or BeamNG
// configured onto this port. Not on the path of BeamNG's own messages;
// logging here may allocate.
func (s *source) foreign(from, remote netip.AddrPort, size int, beamngSized bool, now time.Time) {
	s.stats.inc(Foreign)
	s.foreignN++
	if !s.foreignAt.IsZero() && now.Sub(s.foreignAt) < warnEvery {
		return
	}
	n := s.foreignN
	s.foreignAt, s.foreignN = now, 0
	otherHost := from.Addr().Unmap() != remote.Addr().Unmap()
	switch {
	case otherHost && beamngSized:
		s.log.Warn("datagrams of BeamNG's size come from a host that is not the configured BeamNG: dropped",
			"from", from, "expected_host", remote.Addr(), "count", n,
			"hint", "if that is BeamNG, set remoteIP to "+from.Addr().Unmap().String()+"; otherwise another program sends to this port")
	case otherHost:
		s.log.Warn("datagrams from a host that is not the configured BeamNG: dropped",
			"from", from, "expected_host", remote.Addr(), "size", size, "count", n)
	default:
		s.log.Warn("datagrams from BeamNG's host, but not from the port its coupling sends from: dropped",
			"from", from, "beamng", s.latched, "size", size, "count", n,
			"hint", "a second vehicle's coupling or another BeamNG sending to this port, or another program")
	}
}

// heldMessage is a message from a new port of BeamNG's host, kept until the
// latched port has been silent long enough for it to be BeamNG's own (a
// reloaded controller waits, blocked, for its reply) or until the latched
// port sends again, which makes it a stranger's.
type heldMessage struct {
	buf   []byte
	n     int
	from  netip.AddrPort
	count int     // messages held since the last decision; the newest is kept
	low   float64 // the lowest id held from `from`
}

// takeSource latches a new port of BeamNG's host as BeamNG's, once the old
// one has been silent long enough: a reloaded controller (ids from 0), or a
// new session. The messages held from that port are its own: the first of
// them began its session (low is the lowest id of them and of id).
func (in *inbox) takeSource(from netip.AddrPort, id float64, now time.Time) {
	low := id
	if in.held.count > 0 && in.held.from == from {
		low = min(low, in.held.low)
	}
	silent := in.src.silentFor(now).Round(time.Millisecond)
	if low == 0 {
		in.stats.inc(Restarts)
		in.log.Warn("BeamNG's controller restarted: ids from 0 again, from a new port", "from", from, "was", in.src.latched, "old_port_silent_for", silent)
	} else {
		in.log.Warn("BeamNG sends from a new port after its silence: a new coupling session", "from", from, "was", in.src.latched,
			"silent_for", silent, "id", low)
	}
	in.stats.inc(SourceChanges)
	in.restarted = true // a new coupling session: the model starts over
	in.src.latch(from, now)
	in.jumpFrom = -1
	in.fresh = true // count the reply ids from this session's first message
	in.freshBase = low
	if in.held.count > 0 && in.held.from == from {
		// BeamNG's own messages, held while its old port might still
		// send: only the newest is answered.
		in.stats.add(Drained, int64(in.held.count))
		if id-low+1 > float64(in.out.lockstep.window) {
			// The new controller sent more than its window allows before
			// any reply to it: it took a reply of ours to its old self,
			// late on the network, as its own, and runs ahead.
			in.out.lockstep.suspect()
		}
		in.held.count = 0
	}
}

// hold keeps a message from a new port until the latched port's silence
// says whose it is.
func (in *inbox) hold(d []byte, from netip.AddrPort) {
	if in.held.count == 0 || from != in.held.from || messageID(d) < in.held.low {
		in.held.low = messageID(d)
	}
	in.held.n = copy(in.held.buf, d)
	in.held.from = from
	in.held.count++
}

// reject counts and reports a datagram that is not BeamNG's message.
func (in *inbox) reject(k class, d []byte, fits bool, from netip.AddrPort, now time.Time) {
	switch k {
	case foreign:
		in.src.foreign(from, in.sock.remote, len(d), fits, now)
	case wrongSize:
		in.diag.wrongSize(len(d), now, len(in.msg), in.proto)
	case malformed:
		in.stats.inc(Malformed)
	}
}

// drain reads whatever else is already queued and keeps BeamNG's newest
// message (the highest id: the network may deliver them out of order). The
// datagram in rx[:n] is BeamNG's; every queued one must be too to be
// kept, so a stray with a high id never wins over BeamNG's messages.
//
// It notes how many of BeamNG's messages were queued, and the lowest id
// among them, for the end of a silence (resumedWhole).
func (in *inbox) drain(n int, from netip.AddrPort, now time.Time) (int, netip.AddrPort) {
	keep := append(in.keep[:0], in.rx[:n]...)
	in.drainLow, in.drainN = messageID(keep), 1
	for {
		m, f, ok := in.sock.t.Queued(in.rx)
		if !ok {
			break
		}
		if k, fits := in.classify(in.rx[:m], f); k != beamngs {
			if k != newPort {
				in.reject(k, in.rx[:m], fits, f, now)
			} else {
				in.src.foreign(f, in.sock.remote, m, fits, now)
			}
			continue
		}
		in.stats.inc(Drained)
		in.drainLow, in.drainN = min(in.drainLow, messageID(in.rx[:m])), in.drainN+1
		if messageID(in.rx[:m]) > messageID(keep) {
			keep, from = append(keep[:0], in.rx[:m]...), f
		}
	}
	in.keep = keep
	return copy(in.rx, keep), from
}

// connecting is told that the link binds: the first message will say
// where BeamNG sends from.
func (in *inbox) connecting() {
	in.fresh = true
	in.src.unlatch()
}

package coupling

import (
	"net/netip"
	"time"
)

// maxIDJump is how far BeamNG's ids may move between two messages beyond
// what its physics could have sent meanwhile: about what a full socket
// buffer can lose.
const maxIDJump = 1024

// foreignWarnEvery rate-limits the warning about datagrams that are not
// BeamNG's.
const foreignWarnEvery = 5 * time.Second

// sourceState is what the coupling knows of where BeamNG sends from. BeamNG
// sends from an ephemeral port of its send socket (it only setpeername's,
// spec §2.1), fixed for a controller's life and new when the controller
// reloads, so its full address is latched at its first valid message and
// anything from another address is foreign; a new address is accepted only
// with id 0 (a reload) or after BeamNG's silence (a new session).
type sourceState struct {
	latched netip.AddrPort
	// jumpFrom is an id dropped as an implausible jump: if the next message
	// continues from it, the jump was BeamNG's own and is followed. -1: none.
	jumpFrom float64
	// Rate-limited warnings about datagrams that are not BeamNG's.
	lastWarn time.Time
	unwarned int64
	// Rate-limited warnings about a model's NaN or Inf (Gen 2).
	nfWarn   time.Time
	nfUnwarn int64
}

// nonFinite warns, at once and then at most every 5 s, that the model
// wrote a NaN or Inf that a Gen 2 BeamNG must never get.
func (s *sourceState) nonFinite(c *Coupling, field string) {
	s.nfUnwarn++
	now := time.Now()
	if !s.nfWarn.IsZero() && now.Sub(s.nfWarn) < foreignWarnEvery {
		return
	}
	c.log.Warn("the model wrote NaN or Inf: BeamNG's Gen 2 controller has no NaN filter (one NaN stops every control for good), so the last value sent goes instead",
		"field", field, "count", s.nfUnwarn)
	s.nfWarn, s.nfUnwarn = now, 0
}

// latch takes from as BeamNG's sending address.
func (s *sourceState) latch(from netip.AddrPort) {
	s.latched = from
	s.jumpFrom = -1
}

// fromBeamNG reports whether a datagram from addr may be BeamNG's.
func (c *Coupling) fromBeamNG(addr netip.AddrPort) bool {
	return addr.Addr().Unmap() == c.remote.Addr().Unmap() && (!c.src.latched.IsValid() || addr == c.src.latched)
}

// accept decides on a well-formed message from BeamNG's host that does not
// come from the latched port: a reloaded controller (id 0) or a new session
// after silence are accepted and latched; anything else is foreign.
func (s *sourceState) accept(c *Coupling, from netip.AddrPort, id float64, arrival time.Time) bool {
	switch {
	case id == 0:
		c.stats.Restarts.Add(1)
		c.log.Warn("BeamNG's controller restarted: ids from 0 again, from a new port", "from", from, "was", s.latched)
	case arrival.Sub(c.lastArrival) >= c.opt.Silence:
		c.log.Warn("BeamNG sends from a new port after its silence: a new coupling session", "from", from, "was", s.latched,
			"silent_for", arrival.Sub(c.lastArrival).Round(time.Millisecond), "id", id)
	default:
		s.foreign(c, from, c.stateBytes)
		return false
	}
	c.stats.SourceChanges.Add(1)
	s.latch(from)
	c.fresh = true // count the reply ids from this message
	return true
}

// plausible rejects an id further ahead than BeamNG can have sent since its
// last message (at most one per physics step, plus what a full socket
// buffer can lose), unless the next message continues from it, which only
// BeamNG itself would do.
func (s *sourceState) plausible(c *Coupling, id float64, arrival time.Time) bool {
	limit := c.lastID + maxIDJump + 2*arrival.Sub(c.lastArrival).Seconds()/c.plan.PhysicsDt
	if id <= limit {
		s.jumpFrom = -1
		return true
	}
	if s.jumpFrom >= 0 && id == s.jumpFrom+1 {
		c.log.Warn("BeamNG's ids jumped and went on from there: following them", "from", c.lastID, "to", id)
		s.jumpFrom = -1
		return true
	}
	s.jumpFrom = id
	c.stats.IDJumps.Add(1)
	c.log.Warn("dropped a message whose id jumps further than BeamNG can have sent: a stray or spoofed datagram?",
		"id", id, "last_id", c.lastID, "since", arrival.Sub(c.lastArrival).Round(time.Microsecond))
	return false
}

// foreign counts a datagram that is not BeamNG's and warns about it, at
// once for the first and then at most every 5 s, naming the address seen
// and the one expected: a wrong remoteIP, a second vehicle, or BeamNG
// configured onto this port. Not on the per-message path of BeamNG's own
// messages; logging here may allocate.
func (s *sourceState) foreign(c *Coupling, from netip.AddrPort, size int) {
	c.stats.Foreign.Add(1)
	s.unwarned++
	now := time.Now()
	if !s.lastWarn.IsZero() && now.Sub(s.lastWarn) < foreignWarnEvery {
		return
	}
	n := s.unwarned
	s.lastWarn, s.unwarned = now, 0
	beamngSized := c.usable(size)
	switch {
	case from.Addr().Unmap() != c.remote.Addr().Unmap() && beamngSized:
		c.log.Warn("datagrams of BeamNG's size come from a host that is not the configured BeamNG: dropped",
			"from", from, "expected_host", c.remote.Addr(), "count", n,
			"hint", "if that is BeamNG, set remoteIP to "+from.Addr().Unmap().String()+"; otherwise another program sends to this port")
	case from.Addr().Unmap() != c.remote.Addr().Unmap():
		c.log.Warn("datagrams from a host that is not the configured BeamNG: dropped",
			"from", from, "expected_host", c.remote.Addr(), "size", size, "count", n)
	default:
		c.log.Warn("datagrams from BeamNG's host, but not from the port its coupling sends from: dropped",
			"from", from, "beamng", s.latched, "size", size, "count", n,
			"hint", "a second vehicle's coupling or another BeamNG sending to this port, or another program; a reloaded controller would start at id 0")
	}
}

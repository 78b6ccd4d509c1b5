package coupling

import (
	"log/slog"
	"math"
	"net/netip"
	"time"

	"beamconnect/ports"
	"beamconnect/timesync"
)

// maxIDJump is how far BeamNG's ids may move between two messages beyond
// what its physics could have sent meanwhile: about what a full socket
// buffer can lose.
const maxIDJump = 1024

// warnEvery rate-limits the warnings about datagrams that are not BeamNG's
// and about a model's NaN.
const warnEvery = 5 * time.Second

// Taking a new source: BeamNG's sending address may change only once the
// latched one has been silent this long (at least sourcePeriods periods):
// longer than BeamNG's pauses between graphics frames (50 ms at its 20 FPS
// floor), so a BeamNG that still sends is never taken for gone.
const (
	sourceSilence = 100 * time.Millisecond
	sourcePeriods = 10
)

// source is what a link knows of where BeamNG sends from. BeamNG sends from
// an ephemeral port of its send socket, fixed for a controller's life and
// new when the controller reloads (which closes the old socket: the old
// port falls silent). So its full address is latched at its first valid
// message; a message from another port of BeamNG's host is taken as BeamNG's
// only once the latched port has been silent long enough (a reload, or a
// new session), never while it still sends: a stranger on BeamNG's host
// cannot take control with one datagram.
type source struct {
	log     *slog.Logger
	stats   *Stats
	silence time.Duration // how long the latched port must be silent before another is taken

	latched  netip.AddrPort
	lastSeen time.Time // the latched port's latest well-formed datagram
	// jumpFrom is an id dropped as an implausible jump: if the next message
	// continues from it, the jump was BeamNG's own and is followed. -1: none.
	jumpFrom float64

	// Rate-limited warnings.
	foreignAt, strangerAt time.Time
	foreignN, strangerN   int64
	clock                 timesync.Clock
}

func (s *source) init(log *slog.Logger, stats *Stats, clock timesync.Clock, period time.Duration) {
	s.log, s.stats, s.clock = log, stats, clock
	s.silence = max(sourceSilence, sourcePeriods*period)
	s.jumpFrom = -1
}

// unlatch forgets BeamNG's address: a new socket, the first message will
// say where BeamNG sends from.
func (s *source) unlatch() { s.latched = netip.AddrPort{} }

// latch takes from as BeamNG's sending address.
func (s *source) latch(from netip.AddrPort, now time.Time) {
	s.latched, s.lastSeen = from, now
	s.jumpFrom = -1
}

// isNew reports whether from is another port than the latched one.
func (s *source) isNew(from netip.AddrPort) bool { return s.latched.IsValid() && from != s.latched }

// seen notes a well-formed datagram from the latched port: BeamNG still
// sends.
func (s *source) seen(now time.Time) { s.lastSeen = now }

// silentFor is how long the latched port has been silent at now.
func (s *source) silentFor(now time.Time) time.Duration { return now.Sub(s.lastSeen) }

// mayTake reports whether a message from a new port may be taken as
// BeamNG's at now: the latched port has been silent long enough.
func (s *source) mayTake(now time.Time) bool { return s.silentFor(now) >= s.silence }

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

// plausible rejects an id further ahead than BeamNG can have sent since its
// last message (at most one per physics step, plus what a full socket
// buffer can lose), unless the next message continues from it, which only
// BeamNG itself would do.
func (s *source) plausible(id, lastID float64, gap time.Duration, physicsDt float64) bool {
	limit := lastID + maxIDJump + 2*gap.Seconds()/physicsDt
	if id <= limit {
		s.jumpFrom = -1
		return true
	}
	if s.jumpFrom >= 0 && id == s.jumpFrom+1 {
		s.log.Warn("BeamNG's ids jumped and went on from there: following them", "from", lastID, "to", id)
		s.jumpFrom = -1
		return true
	}
	s.jumpFrom = id
	s.stats.inc(IDJumps)
	s.log.Warn("dropped a message whose id jumps further than BeamNG can have sent: a stray or spoofed datagram?",
		"id", id, "last_id", lastID, "since", gap.Round(time.Microsecond))
	return false
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

// place classifies an id from BeamNG's address against the ids before it:
// the first after connecting, a controller restart, the end of a silence
// (BeamNG's 2 s timeout, or a pause: silence.go), a repeat, an implausible
// jump. It reports whether to answer.
func (l *Link) place(id float64, from netip.AddrPort, now time.Time) bool {
	gap := now.Sub(l.lastArrival)
	if l.fresh || id == 0 && l.lastID > 0 || id > l.lastID {
		l.settleGuess(id, now) // a message BeamNG sent after a guessed silence
	}
	pause := false
	switch {
	case l.fresh && l.prior.IsValid() && from == l.prior:
		// BeamNG as the session before let go of it (Handover): it ran on,
		// its window with it, so the reply ids go on too. Its message is
		// placed after the last that session answered: the next one, a
		// silence, BeamNG's 2 s wait, a restart, as if the link had gone on.
		l.fresh, l.prior = false, netip.AddrPort{}
		l.stats.inc(Connects)
		return l.place(id, from, now)
	case l.fresh:
		l.prior = netip.AddrPort{}
		// The first message since connecting: BeamNG may have been cycling
		// through 2 s timeouts with nobody answering; count from here (a
		// new port's first message, when more came from it meanwhile).
		l.src.latch(from, now)
		l.rebase(id, now)
		if l.freshBase < id {
			l.ids.rebase(l.freshBase) // the reply ids count the new port's messages from its first
		}
		l.fresh = false
		l.stats.inc(Connects)
	case id == 0 && l.lastID > 0:
		l.stats.inc(Restarts)
		l.restarted = true
		l.log.Warn("BeamNG's controller restarted (ids from 0 again)", "from", from)
		l.rebase(id, now)
	case gap >= RebaseGap && id > l.lastID:
		pause = l.endSilence(id, gap, now)
	case id <= l.lastID:
		l.stats.inc(Duplicates)
		return false
	case !l.src.plausible(id, l.lastID, gap, l.plan.PhysicsDt):
		return false
	default:
		pause = l.silent && l.resumedWhole(id)
	}
	if pause {
		l.paused(gap, l.silent, id, now)
	}
	l.freshBase = math.Inf(1)
	if l.state != ports.Connected {
		l.setState(ports.Connected)
	}
	l.silent = false
	l.owed = true
	l.diag.sinceStall++
	l.interArrival = gap
	l.lastID, l.lastArrival = id, now
	if l.stats.inc(Messages) == 1 {
		l.firstID, l.firstAt = id, now
	}
	l.stats.lastArrival.Store(now.UnixNano())
	return true
}

// takeSource latches a new port of BeamNG's host as BeamNG's, once the old
// one has been silent long enough: a reloaded controller (ids from 0), or a
// new session. The messages held from that port are its own: the first of
// them began its session (low is the lowest id of them and of id).
func (l *Link) takeSource(from netip.AddrPort, id float64, now time.Time) {
	low := id
	if l.held.count > 0 && l.held.from == from {
		low = min(low, l.held.low)
	}
	silent := l.src.silentFor(now).Round(time.Millisecond)
	if low == 0 {
		l.stats.inc(Restarts)
		l.log.Warn("BeamNG's controller restarted: ids from 0 again, from a new port", "from", from, "was", l.src.latched, "old_port_silent_for", silent)
	} else {
		l.log.Warn("BeamNG sends from a new port after its silence: a new coupling session", "from", from, "was", l.src.latched,
			"silent_for", silent, "id", low)
	}
	l.stats.inc(SourceChanges)
	l.restarted = true // a new coupling session: the model starts over
	l.src.latch(from, now)
	l.fresh = true // count the reply ids from this session's first message
	l.freshBase = low
	if l.held.count > 0 && l.held.from == from {
		// BeamNG's own messages, held while its old port might still
		// send: only the newest is answered.
		l.stats.add(Drained, int64(l.held.count))
		if id-low+1 > float64(l.lockstep.window) {
			// The new controller sent more than its window allows before
			// any reply to it: it took a reply of ours to its old self,
			// late on the network, as its own, and runs ahead.
			l.lockstep.suspect()
		}
		l.held.count = 0
	}
}

// hold keeps a message from a new port until the latched port's silence
// says whose it is.
func (l *Link) hold(d []byte, from netip.AddrPort) {
	if l.held.count == 0 || from != l.held.from || messageID(d) < l.held.low {
		l.held.low = messageID(d)
	}
	l.held.n = copy(l.held.buf, d)
	l.held.from = from
	l.held.count++
}

// takeHeld answers the held message once the latched port has been silent
// long enough for it to be BeamNG's.
func (l *Link) takeHeld(now time.Time) bool {
	if l.held.count == 0 || !l.src.mayTake(now) {
		return false
	}
	l.held.count-- // the newest is answered; takeSource drains the others
	n := copy(l.rx, l.held.buf[:l.held.n])
	l.handle(l.rx[:n], l.held.from, now, 0)
	l.held.count = 0
	return true
}

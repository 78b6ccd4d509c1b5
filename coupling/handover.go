package coupling

import (
	"net/netip"
	"runtime"
	"time"
)

// Handover is what a link holds of BeamNG when its run ends, for the next
// session of the same BeamNG, which runs on in between (an exported FMU
// that the master resets and initializes again). BeamNG's controller knows
// nothing of sessions: it applies a reply only if its id is above the
// highest it applied, and its window counts the messages it sent since its
// own last reset. A new session that counted its reply ids from 1 again
// would have its replies dropped and BeamNG blocking 2 s for one it can
// apply; so the next session takes over where this one let go: the socket,
// still bound, so that BeamNG's messages meanwhile wait in it rather than
// get lost; the port BeamNG sends from; BeamNG's latest message; and the
// reply ids BeamNG has had. Create them with Options.HandOver; pass them on
// with Options.Resume, or Close them.
type Handover struct {
	asked, remote netip.AddrPort // the link's local address as configured (port 0 too), and BeamNG's
	t             Transport      // still bound
	src           netip.AddrPort // where BeamNG sends from (invalid: it never sent)
	seen          time.Time      // src's latest datagram
	lastID        float64
	lastAt        time.Time
	owed          bool // BeamNG's latest message had no reply
	ids           replyIDs
	last          []float64 // the controls BeamNG has
}

// Close releases the socket of a handover that no session takes.
func (h *Handover) Close() error {
	if h == nil || h.t == nil {
		return nil
	}
	err := h.t.Close()
	h.t = nil
	return err
}

// handOver lets go of the socket for the next session, with what the link
// knows of BeamNG. Called from the link's loop at the run's end, after the
// neutral reply.
func (l *Link) handOver() *Handover {
	if l.sock.t == nil {
		return nil
	}
	if s, ok := l.sock.t.(*spinSocket); ok && s.locked {
		// The loop's OS thread was locked for busy polling: the next
		// session's loop locks its own.
		runtime.UnlockOSThread()
		s.locked = false
	}
	h := &Handover{asked: l.sock.asked, remote: l.sock.remote, t: l.sock.t, src: l.in.src.latched, seen: l.in.src.lastSeen,
		lastID: l.in.lastID, lastAt: l.in.lastArrival, owed: l.out.owed, ids: l.out.ids, last: append([]float64(nil), l.out.last...)}
	l.sock.t = nil
	return h
}

// takeOver gives the link the socket of the handover made for it, when it
// binds the same local address for the same BeamNG, and what the session
// before knew of BeamNG: the first message is then placed after the last
// that session answered, and the reply ids go on (place). A handover that
// does not fit is closed. It reports whether the link took one.
func (l *Link) takeOver() bool {
	h := l.resume
	l.resume = nil
	if h == nil || h.t == nil {
		return false
	}
	if h.asked != l.sock.asked || h.remote != l.sock.remote || len(h.last) != len(l.out.last) {
		h.Close() // another address now: the next bind may want its port
		return false
	}
	l.sock.t, h.t = h.t, nil
	if !h.src.IsValid() {
		return true // BeamNG never sent: the socket alone
	}
	policy := l.out.ids.policy
	l.out.ids = h.ids
	l.out.ids.switchTo(policy)
	l.in.src.latch(h.src, h.seen)
	l.in.jumpFrom = -1
	l.in.lastID, l.in.lastArrival, l.out.owed = h.lastID, h.lastAt, h.owed
	copy(l.out.last, h.last)
	l.in.prior = h.src
	return true
}

package coupling

import (
	"encoding/binary"
	"math"
	"net/netip"
	"runtime"
	"time"
)

// yieldEvery is how often the link's loop yields to the scheduler.
const yieldEvery = 5 * time.Millisecond

// receive waits for one datagram, or the idle step, and answers it.
func (l *Link) receive() {
	n, from, rxAt, err := l.t.Read(l.rx)
	now := l.clock.Now()
	switch {
	case err == errTimeout:
		l.quiet(now)
		return
	case err != nil:
		l.socketFailed(err)
		return
	}
	if (l.fresh || l.stats.Get(Messages) > 0 && now.Sub(l.lastArrival) >= RebaseGap) && l.isBeamNGs(l.rx[:n], from) {
		// After a (re)connect or a pause of our own what is queued is stale:
		// answering only BeamNG's newest message puts it back in lockstep.
		// (A datagram that cannot be BeamNG's is handled, and dropped, as
		// any other; the next read drains.)
		n, from = l.drain(n, from, now)
		now, rxAt = l.clock.Now(), 0
	}
	l.handle(l.rx[:n], from, now, rxAt)
	l.drainN = 0
	l.takeHeld(now)
	if now.Sub(l.yieldAt) > yieldEvery {
		// A scheduling point every few milliseconds: a goroutine that only
		// ever goes in and out of system calls looks to the runtime like
		// one that never yields, and gets preempted with a signal (an
		// interrupted receive, a rescheduled loop) tens of times a second.
		runtime.Gosched()
		l.yieldAt = now
	}
}

// class is what a datagram is, as the link sees it: classify says it once,
// for the message in hand (accept) and for those drained behind it.
type class uint8

const (
	beamngs   class = iota // from BeamNG's host and latched port (any, before one is latched), of a size its protocol sends, with a valid id
	newPort                // the same, but from another port of BeamNG's host
	foreign                // another host, or another port whose datagram is not even well formed
	wrongSize              // BeamNG's address, a length it does not send
	malformed              // BeamNG's address and size, an id it cannot have sent
)

// classify says what datagram d from `from` is, and whether its length is
// one BeamNG's protocol sends.
func (l *Link) classify(d []byte, from netip.AddrPort) (k class, fits bool) {
	fits = l.proto.Fits(len(d), len(l.msg))
	if from.Addr().Unmap() != l.remote.Addr().Unmap() {
		return foreign, fits
	}
	isNew := l.src.isNew(from)
	switch {
	case !fits && isNew, isNew && !validID(messageID(d)):
		return foreign, fits
	case !fits:
		return wrongSize, fits
	case !validID(messageID(d)):
		return malformed, fits
	case isNew:
		return newPort, fits
	}
	return beamngs, fits
}

// reject counts and reports a datagram that is not BeamNG's message.
func (l *Link) reject(k class, d []byte, fits bool, from netip.AddrPort, now time.Time) {
	switch k {
	case foreign:
		l.src.foreign(from, l.remote, len(d), fits, now)
	case wrongSize:
		l.wrongSize(len(d), now)
	case malformed:
		l.stats.inc(Malformed)
	}
}

// accept checks a datagram and places its id. It reports whether the
// datagram is BeamNG's message to answer, and whether it holds every field
// the model reads (whole); only BeamNG's whole messages reach the model.
func (l *Link) accept(d []byte, from netip.AddrPort, now time.Time) (id float64, whole, ok bool) {
	k, fits := l.classify(d, from)
	switch {
	case k != beamngs && k != newPort:
		l.reject(k, d, fits, from, now)
		return 0, false, false
	case k == newPort && !l.src.mayTake(now):
		l.hold(d, from)
		return 0, false, false
	case k == newPort:
		l.takeSource(from, messageID(d), now)
	case l.src.latched.IsValid():
		l.src.seen(now)
		if l.held.count > 0 {
			// BeamNG's own port still sends: the held messages were a stranger's.
			l.src.stranger(l.held.from, int64(l.held.count), now)
			l.held.count = 0
		}
	}
	present := l.proto.Decode(l.msg, d)
	id = l.msg[0]
	if !l.place(id, from, now) {
		return 0, false, false
	}
	whole = present >= l.need
	switch {
	case !whole:
		l.stats.inc(ShortMessages)
		l.shortWarn(present, now)
	case present > len(l.msg):
		l.stats.inc(LongMessages)
		l.longWarn(present, now)
	}
	return id, whole, true
}

// drain reads whatever else is already queued and keeps BeamNG's newest
// message (the highest id: the network may deliver them out of order). The
// datagram in l.rx[:n] is BeamNG's; every queued one must be too to be
// kept, so a stray with a high id never wins over BeamNG's messages.
//
// It notes how many of BeamNG's messages were queued, and the lowest id
// among them, for the end of a silence (resumedWhole).
func (l *Link) drain(n int, from netip.AddrPort, now time.Time) (int, netip.AddrPort) {
	keep := append(l.keep[:0], l.rx[:n]...)
	l.drainLow, l.drainN = messageID(keep), 1
	for {
		m, f, ok := l.t.Queued(l.rx)
		if !ok {
			break
		}
		if k, fits := l.classify(l.rx[:m], f); k != beamngs {
			if k != newPort {
				l.reject(k, l.rx[:m], fits, f, now)
			} else {
				l.src.foreign(f, l.remote, m, fits, now)
			}
			continue
		}
		l.stats.inc(Drained)
		l.drainLow, l.drainN = min(l.drainLow, messageID(l.rx[:m])), l.drainN+1
		if messageID(l.rx[:m]) > messageID(keep) {
			keep, from = append(keep[:0], l.rx[:m]...), f
		}
	}
	l.keep = keep
	return copy(l.rx, keep), from
}

// isBeamNGs reports whether a datagram may be BeamNG's message: from
// BeamNG's host and its latched port (any port before one is latched), of
// a size the protocol takes, with a valid id.
func (l *Link) isBeamNGs(d []byte, from netip.AddrPort) bool {
	k, _ := l.classify(d, from)
	return k == beamngs
}

// validID reports whether id can be a BeamNG message id: a whole number,
// 0 to 2^53.
func validID(id float64) bool { return id >= 0 && id <= 1<<53 && id == math.Trunc(id) }

// messageID reads the id of an encoded message (NaN for a short one).
func messageID(b []byte) float64 {
	if len(b) < 8 {
		return math.NaN()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

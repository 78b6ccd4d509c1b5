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

// heldMessage is a message from a new port of BeamNG's host, kept until the
// latched port has been silent long enough for it to be BeamNG's own (a
// reloaded controller waits, blocked, for its reply) or until the latched
// port sends again, which makes it a stranger's.
type heldMessage struct {
	buf   []byte
	n     int
	from  netip.AddrPort
	count int // messages held since the last decision; the newest is kept
}

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

// handle answers one datagram if it is BeamNG's message.
func (l *Link) handle(d []byte, from netip.AddrPort, arrival time.Time, rxAt int64) {
	id, whole, ok := l.accept(d, from, arrival)
	if !ok {
		return
	}
	a := l.step(id, arrival, whole)
	stepped := l.clock.Now()
	if stepped.Sub(arrival) >= RebaseGap {
		// The step took so long that BeamNG has timed out and moved on.
		l.stats.inc(Late)
		return
	}
	l.lockstep.observe(id, rxAt, arrival)
	// Master time sync: the reply waits for its time, so BeamNG, which
	// blocks when its window is full, cannot run ahead of the local clock.
	paced := l.sim.Paced
	waited := l.sim.Hold(id)
	if l.sim.Paced != paced {
		l.stats.Pacing.Observe(l.sim.LastError)
	}
	sentAt := stepped
	if waited > 0 {
		sentAt = l.clock.Now()
	}
	if err := l.send(a.datagram); err != nil {
		l.log.Warn("reply failed", "err", err)
		return
	}
	l.sent(l.reply)
	l.lockstep.replied(id, sentAt)
	l.stats.inc(Replies)
	if a.neutral {
		l.stats.inc(NeutralReplies)
	}
	l.stats.Turnaround.Observe(l.clock.Now().Sub(arrival) - waited)
	l.observed(id, a.neutral)
}

// observed hands the message to whatever watches the run: the recording,
// the scope, a test. The recording and the scope show what went on the
// wire: while the reply was neutral, its values, not the model's.
func (l *Link) observed(id float64, neutral bool) {
	o := l.opt
	if o.Record != nil || o.Scope != nil {
		st := l.enter()
		ins := st.ins
		if neutral {
			ins = l.wireInputs()
		}
		t := l.sim.Local()
		if o.Record != nil {
			o.Record.Row(t, l.index, l.Status(), id, l.reply[0], st.stats.Get(Reloads), st.outs, ins, st.loops.set)
		}
		if o.Scope != nil {
			o.Scope.Push(t, st.outs, ins, st.loops.group)
		}
		st.leave()
	}
	if o.OnMessage != nil {
		o.OnMessage(l.index, id, l.reply[0])
	}
}

// wireInputs is the input ports as the reply carried them: this vehicle's
// fields from the reply's slots, the other vehicles' as the model wrote
// them. Under the stage's lock.
func (l *Link) wireInputs() [][]float64 {
	st := l.stage
	if len(l.wire) != len(st.ins) {
		l.wire = make([][]float64, len(st.ins)) // a reload changed the ports
	}
	for pn, v := range st.ins {
		l.wire[pn] = append(l.wire[pn][:0], v...)
	}
	for pn := range l.plan.Inputs[1:] {
		port := &l.plan.Inputs[pn+1]
		for fi := range port.Fields {
			f := &port.Fields[fi]
			if f.Vehicle == l.index && f.Width > 0 {
				copy(l.wire[port.Number][f.Offset:f.Offset+f.Width], l.reply[f.Slot:f.Slot+f.Width])
			}
		}
	}
	return l.wire
}

// quiet is a read that waited its bound and got nothing: BeamNG may have
// gone silent, a held message's time may have come, contracts may be
// overdue, and while connecting the model is stepped so it sees the status.
func (l *Link) quiet(now time.Time) {
	if l.takeHeld(now) {
		return
	}
	l.noMessages(now)
	if l.state == Connected && now.Sub(l.lastArrival) > l.opt.Silence {
		l.stats.inc(Silences)
		l.silent = true
		l.log.Warn("BeamNG went silent: its coupling stopped, it paused, or it is lost",
			"for", now.Sub(l.lastArrival).Round(time.Millisecond), "last_id", l.lastID)
		l.setState(Connecting)
	}
	st := l.enter()
	l.checkOverdue(l.sim.IdleTime())
	if l.state == Connecting {
		st.idle()
	}
	st.leave()
	l.report() // another vehicle's step may have faulted or healed the model
}

// kind is what a datagram is, as the link sees it: classify says it once,
// for the message in hand (accept) and for those drained behind it.
type kind uint8

const (
	beamngs   kind = iota // from BeamNG's host and latched port (any, before one is latched), of a size its protocol sends, with a valid id
	newPort               // the same, but from another port of BeamNG's host
	foreign               // another host, or another port whose datagram is not even well formed
	wrongSize             // BeamNG's address, a length it does not send
	malformed             // BeamNG's address and size, an id it cannot have sent
)

// classify says what datagram d from `from` is, and whether its length is
// one BeamNG's protocol sends.
func (l *Link) classify(d []byte, from netip.AddrPort) (k kind, fits bool) {
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
func (l *Link) reject(k kind, d []byte, fits bool, from netip.AddrPort, now time.Time) {
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

// place classifies an id from BeamNG's address against the ids before it:
// the first after connecting, after BeamNG's 2 s timeout, a controller
// restart, a repeat, an implausible jump. It reports whether to answer.
func (l *Link) place(id float64, from netip.AddrPort, now time.Time) bool {
	gap := now.Sub(l.lastArrival)
	switch {
	case l.fresh:
		// The first message since connecting: BeamNG may have been cycling
		// through 2 s timeouts with nobody answering; count from here.
		l.src.latch(from, now)
		l.rebase(id, now)
		l.fresh = false
		l.stats.inc(Connects)
	case gap >= RebaseGap:
		l.stats.inc(StallsRecovered)
		l.stalled(now)
		if gap < stallGap && l.silent {
			l.stats.inc(stallSilences) // the silence was BeamNG's own 2 s timeout
		}
		l.log.Warn("BeamNG waited 2 s for a reply and reset its window: re-basing reply ids",
			"gap", gap.Round(time.Millisecond), "id", id)
		l.rebase(id, now)
	case id == 0 && l.lastID > 0:
		l.stats.inc(Restarts)
		l.restarted = true
		l.log.Warn("BeamNG's controller restarted (ids from 0 again)", "from", from)
		l.rebase(id, now)
	case id <= l.lastID:
		l.stats.inc(Duplicates)
		return false
	case !l.src.plausible(id, l.lastID, gap, l.plan.PhysicsDt):
		return false
	}
	if l.state != Connected {
		l.setState(Connected)
	}
	l.silent = false
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
// new session.
func (l *Link) takeSource(from netip.AddrPort, id float64, now time.Time) {
	silent := l.src.silentFor(now).Round(time.Millisecond)
	if id == 0 {
		l.stats.inc(Restarts)
		l.log.Warn("BeamNG's controller restarted: ids from 0 again, from a new port", "from", from, "was", l.src.latched, "old_port_silent_for", silent)
	} else {
		l.log.Warn("BeamNG sends from a new port after its silence: a new coupling session", "from", from, "was", l.src.latched,
			"silent_for", silent, "id", id)
	}
	l.stats.inc(SourceChanges)
	l.restarted = true // a new coupling session: the model starts over
	l.src.latch(from, now)
	l.fresh = true // count the reply ids from this message
}

// hold keeps a message from a new port until the latched port's silence
// says whose it is.
func (l *Link) hold(d []byte, from netip.AddrPort) {
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
	l.stats.add(Drained, int64(l.held.count-1)) // only the newest is answered
	l.held.count = 0
	n := copy(l.rx, l.held.buf[:l.held.n])
	l.handle(l.rx[:n], l.held.from, now, 0)
	return true
}

// rebase restarts the reply ids at BeamNG message id, so they track the
// window counter BeamNG just restarted, and restarts the master schedule
// there, so a stall is not followed by a burst.
func (l *Link) rebase(id float64, now time.Time) {
	l.ids.rebase(id)
	l.sim.Anchor(id, now)
	l.lockstep.rebased(now)
}

// drain reads whatever else is already queued and keeps BeamNG's newest
// message (the highest id: the network may deliver them out of order). The
// datagram in l.rx[:n] is BeamNG's; every queued one must be too to be
// kept, so a stray with a high id never wins over BeamNG's messages.
func (l *Link) drain(n int, from netip.AddrPort, now time.Time) (int, netip.AddrPort) {
	keep := append(l.keep[:0], l.rx[:n]...)
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

package coupling

import (
	"encoding/binary"
	"log/slog"
	"math"
	"net/netip"
	"time"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/ports"
	"beamconnect/relative"
	"beamconnect/timesync"
)

// maxIDJump is how far BeamNG's ids may move between two messages beyond
// what its physics could have sent meanwhile: about what a full socket
// buffer can lose.
const maxIDJump = 1024

// inbox is what comes in to a link from BeamNG: each datagram read (or a
// held one whose time came), classified once, and taken only when it is
// BeamNG's whole message; where BeamNG sends from (source); what each
// message's id says (the first after connecting, a restart, the end of a
// silence, a repeat, an impossible jump). What is not BeamNG's, or not
// yet, is dealt with in source.go; silences in silence.go. A message taken
// fills the output ports of the link's incoming contracts (below).
type inbox struct {
	log     *slog.Logger
	stats   *Stats
	clock   timesync.Clock
	sock    *socket
	out     *replier // the replies, whose ids a silence re-bases
	diag    *diagnoser
	sim     *timesync.Engine
	vehicle int

	proto *beamng.Protocol
	msg   []float64                     // the message taken, decoded
	need  int                           // doubles of BeamNG's message the model reads
	slots [len(relative.Quantities)]int // where the cross-vehicle properties' data sit
	plan  *ports.Plan                   // the plan the link last stepped with
	rx    []byte
	keep  []byte      // drain's newest message
	held  heldMessage // a message from a new port, waiting for BeamNG's to fall silent
	// fromHeld: the datagram read is the held message.
	fromHeld bool
	src      source

	lastID      float64
	lastArrival time.Time
	// firstID is the first id of BeamNG's coupling as it runs now (since
	// it last started over); earlier is the simulated time its couplings
	// before covered, each from its first message to one period after its
	// last (as the recording's time axis goes on): SimTime adds them.
	firstID      float64
	earlier      float64
	firstAt      time.Time     // BeamNG's first message of the run
	interArrival time.Duration // between the last two BeamNG messages (ping_results[1])
	// jumpFrom is an id dropped as an implausible jump: if the next message
	// continues from it, the jump was BeamNG's own and is followed. -1: none.
	jumpFrom  float64
	fresh     bool         // the next message is the first since (re)connecting
	freshBase float64      // a new port's first id, when more came from it before it was taken (else +Inf)
	restarted bool         // BeamNG started this vehicle's coupling again: its next message begins it
	silent    bool         // BeamNG went silent while connected, and has not sent since
	guess     silenceGuess // a silence of about 2 s, re-based on a guess being checked
	// After a silence, what drain found queued: BeamNG's messages, and the
	// lowest id among them (drainN 0: the message in hand alone).
	drainLow float64
	drainN   int64
	// prior is the port BeamNG sent from when the session before let go of
	// it (Handover), until its first message here is placed after the last
	// that session answered.
	prior netip.AddrPort
}

func (in *inbox) init(log *slog.Logger, stats *Stats, clock timesync.Clock, sock *socket, out *replier, diag *diagnoser, sim *timesync.Engine, v int, veh ports.Vehicle, period float64) {
	in.log, in.stats, in.clock, in.sock, in.out, in.diag, in.sim, in.vehicle = log, stats, clock, sock, out, diag, sim, v
	in.proto = veh.Layout.Protocol
	in.msg = make([]float64, veh.Layout.Len(beamng.FromBeamNG))
	in.slots = veh.State
	in.rx = make([]byte, beamng.MaxDatagram+1)
	in.keep = make([]byte, 0, beamng.MaxDatagram+1)
	in.held.buf = make([]byte, beamng.MaxDatagram)
	in.freshBase = math.Inf(1)
	in.jumpFrom = -1
	in.src.init(log, stats, clock, seconds(period))
}

// rebind moves the inbox to plan p (at the start, and after a reload).
func (in *inbox) rebind(p *ports.Plan) {
	in.plan = p
	in.need = p.Vehicles[in.vehicle].Need
}

// read is the next datagram: the held message once its time has come,
// else the socket's, waited for at most about idleStep; after a
// (re)connect or a pause of our own, BeamNG's newest of those queued
// (drain). It reports when it came (now) and, where the socket says, when
// the kernel received it (rxAt); errTimeout when nothing came.
func (in *inbox) read() (d []byte, from netip.AddrPort, rxAt int64, now time.Time, err error) {
	in.drainN = 0
	if now = in.clock.Now(); in.heldDue(now) {
		in.held.count-- // the newest is answered; takeSource drains the others
		in.fromHeld = true
		return in.rx[:copy(in.rx, in.held.buf[:in.held.n])], in.held.from, 0, now, nil
	}
	n, from, rxAt, err := in.sock.t.Read(in.rx)
	now = in.clock.Now()
	if err != nil {
		return nil, from, 0, now, err
	}
	if in.fresh || in.stats.Get(Messages) > 0 && now.Sub(in.lastArrival) >= rebaseGap {
		if k, _ := in.classify(in.rx[:n], from); k == beamngs {
			// What is queued is stale: answering only BeamNG's newest
			// message puts it back in lockstep. (A datagram that cannot be
			// BeamNG's is taken, and dropped, as any other; the next read
			// drains.)
			n, from = in.drain(n, from, now)
			now, rxAt = in.clock.Now(), 0
		}
	}
	return in.rx[:n], from, rxAt, now, nil
}

// heldDue reports whether the held message's time has come: the latched
// port has been silent long enough for it to be BeamNG's.
func (in *inbox) heldDue(now time.Time) bool { return in.held.count > 0 && in.src.mayTake(now) }

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
func (in *inbox) classify(d []byte, from netip.AddrPort) (k class, fits bool) {
	fits = in.proto.Fits(len(d), len(in.msg))
	if from.Addr().Unmap() != in.sock.remote.Addr().Unmap() {
		return foreign, fits
	}
	isNew := in.src.isNew(from)
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

// accept checks a datagram and places its id. It reports whether the
// datagram is BeamNG's message to answer, and whether it holds every field
// the model reads (whole); only BeamNG's whole messages reach the model.
func (in *inbox) accept(d []byte, from netip.AddrPort, now time.Time) (id float64, whole, ok bool) {
	if in.fromHeld {
		// Whatever it was taken for, the held messages are dealt with.
		defer func() { in.fromHeld, in.held.count = false, 0 }()
	}
	k, fits := in.classify(d, from)
	switch {
	case k != beamngs && k != newPort:
		in.reject(k, d, fits, from, now)
		return 0, false, false
	case k == newPort && !in.src.mayTake(now):
		in.hold(d, from)
		return 0, false, false
	case k == newPort:
		in.takeSource(from, messageID(d), now)
	case in.src.latched.IsValid():
		in.src.seen(now)
		if in.held.count > 0 {
			// BeamNG's own port still sends: the held messages were a stranger's.
			in.src.stranger(in.held.from, int64(in.held.count), now)
			in.held.count = 0
		}
	}
	present := in.proto.Decode(in.msg, d)
	id = in.msg[0]
	if !in.place(id, from, now) {
		return 0, false, false
	}
	whole = present >= in.need
	switch {
	case !whole:
		in.stats.inc(ShortMessages)
		in.diag.shortWarn(present, now, len(in.msg), in.need)
	case present > len(in.msg):
		in.stats.inc(LongMessages)
		in.diag.longWarn(present, now, len(in.msg))
	}
	return id, whole, true
}

// startedOver notes that BeamNG's coupling started over: the simulated
// time of the one before is kept, and the next message is the new one's
// first.
func (in *inbox) startedOver() {
	in.earlier += in.sim.Remote(in.lastID+1) - in.sim.Remote(in.firstID)
	in.firstID = -1
}

// place classifies an id from BeamNG's address against the ids before it:
// the first after connecting, a controller restart, the end of a silence
// (BeamNG's 2 s timeout, or a pause: silence.go), a repeat, an implausible
// jump. It reports whether to answer.
func (in *inbox) place(id float64, from netip.AddrPort, now time.Time) bool {
	gap := now.Sub(in.lastArrival)
	if in.guess.phase != noGuess && (in.fresh || id == 0 && in.lastID > 0 || id > in.lastID) {
		in.settleGuess(id, now) // a message BeamNG sent after a guessed silence
	}
	pause := false
	first := id // this message, or the first of its session held before it
	switch {
	case in.fresh && in.prior.IsValid() && from == in.prior:
		// BeamNG as the session before let go of it (Handover): it ran on,
		// its window with it, so the reply ids go on too. Its message is
		// placed after the last that session answered: the next one, a
		// silence, BeamNG's 2 s wait, a restart, as if the link had gone on.
		in.fresh, in.prior = false, netip.AddrPort{}
		in.stats.inc(Connects)
		return in.place(id, from, now)
	case in.fresh:
		// A new port taken after its messages were held: its session began
		// with the first of them, whatever the id of the one taken (a
		// restarted controller that took a late reply of ours as its own
		// sends on without waiting).
		first = min(id, in.freshBase)
		if in.stats.Get(Messages) > 0 && first <= in.lastID {
			in.startedOver() // a coupling of BeamNG's started anew while the link was down
		}
		in.prior = netip.AddrPort{}
		// The first message since connecting: BeamNG may have been cycling
		// through 2 s timeouts with nobody answering; count from here (a
		// new port's first message, when more came from it meanwhile).
		in.src.latch(from, now)
		in.jumpFrom = -1
		in.rebase(id, now)
		if in.freshBase < id {
			in.out.ids.rebase(in.freshBase) // the reply ids count the new port's messages from its first
		}
		in.fresh = false
		in.stats.inc(Connects)
	case id == 0 && in.lastID > 0:
		in.stats.inc(Restarts)
		in.restarted = true
		in.log.Warn("BeamNG's controller restarted (ids from 0 again)", "from", from)
		in.rebase(id, now)
		in.startedOver()
	case gap >= rebaseGap && id > in.lastID:
		pause = in.endSilence(id, gap, now)
	case id <= in.lastID:
		in.stats.inc(Duplicates)
		return false
	case !in.plausible(id, gap):
		return false
	default:
		pause = in.silent && in.resumedWhole(id)
	}
	if pause {
		in.paused(gap, in.silent, id, now)
	}
	in.freshBase = math.Inf(1)
	in.silent = false
	in.out.owed = true
	in.diag.d.sinceStall++
	in.interArrival = gap
	in.lastID, in.lastArrival = id, now
	if in.stats.inc(Messages) == 1 {
		in.firstAt = now
		in.firstID = first
	} else if in.firstID < 0 {
		in.firstID = first
	}
	in.stats.lastArrival.Store(now.UnixNano())
	return true
}

// plausible rejects an id further ahead than BeamNG can have sent since its
// last message gap ago (at most one per physics step, plus what a full
// socket buffer can lose), unless the next message continues from it,
// which only BeamNG itself would do.
func (in *inbox) plausible(id float64, gap time.Duration) bool {
	limit := in.lastID + maxIDJump + 2*gap.Seconds()/in.plan.PhysicsDt
	if id <= limit {
		in.jumpFrom = -1
		return true
	}
	if in.jumpFrom >= 0 && id == in.jumpFrom+1 {
		in.log.Warn("BeamNG's ids jumped and went on from there: following them", "from", in.lastID, "to", id)
		in.jumpFrom = -1
		return true
	}
	in.jumpFrom = id
	in.stats.inc(IDJumps)
	in.log.Warn("dropped a message whose id jumps further than BeamNG can have sent: a stray or spoofed datagram?",
		"id", id, "last_id", in.lastID, "since", gap.Round(time.Microsecond))
	return false
}

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

	// Rate-limited warnings.
	foreignAt, strangerAt time.Time
	foreignN, strangerN   int64
	clock                 timesync.Clock
}

func (s *source) init(log *slog.Logger, stats *Stats, clock timesync.Clock, period time.Duration) {
	s.log, s.stats, s.clock = log, stats, clock
	s.silence = max(sourceSilence, sourcePeriods*period)
}

// unlatch forgets BeamNG's address: a new socket, the first message will
// say where BeamNG sends from.
func (s *source) unlatch() { s.latched = netip.AddrPort{} }

// latch takes from as BeamNG's sending address.
func (s *source) latch(from netip.AddrPort, now time.Time) {
	s.latched, s.lastSeen = from, now
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

// incoming are a link's incoming contracts (data from BeamNG), by plan
// contract index: each one's schedule, serial number and overdue state.
// A message taken fills the output ports of those due with its data.
type incoming struct {
	vehicle int
	stats   *Stats
	plan    *ports.Plan // the plan they are laid out by
	state   []contracts.Incoming
}

// rebind moves the contracts to plan p (at the start, and after a reload),
// at local time now: they keep their state by name.
func (c *incoming) rebind(p *ports.Plan, now float64) {
	cs := make([]contracts.Incoming, len(p.Contracts))
	for i, ct := range p.Contracts {
		cs[i] = contracts.Incoming{Schedule: ct.Schedule, Overdue: ct.Overdue}
		cs[i].Start(now)
		if c.plan == nil {
			continue
		}
		for j, oc := range c.plan.Contracts {
			if oc.Name == ct.Name {
				st := c.state[j]
				st.Schedule, st.Overdue = ct.Schedule, ct.Overdue
				cs[i] = st
			}
		}
	}
	c.plan, c.state = p, cs
}

// start starts the contracts at local time 0: the run's start.
func (c *incoming) start() {
	for i := range c.state {
		c.state[i].Start(0)
	}
}

// fill writes this vehicle's fields of the output ports whose contract is
// due, from message msg (id, at local time t, interArrival after the one
// before) and the contract's meta values. Under the stage's lock.
func (c *incoming) fill(st *stage, msg []float64, id, t float64, interArrival time.Duration) {
	p := c.plan
	remote := id * p.Period
	for ci := range p.Contracts {
		ct := &p.Contracts[ci]
		if ct.Dir != beamng.FromBeamNG {
			continue
		}
		due := ct.Schedule.Due(uint64(id))
		if !ct.CommData && !due {
			continue
		}
		if !ct.CommData {
			c.state[ci].Update(id, remote, t)
		}
		for _, pn := range ct.Ports {
			c.port(st, &p.Outputs[pn], st.outs[pn], &c.state[ci], msg, interArrival)
		}
	}
}

// port writes one output port's fields of this vehicle.
func (c *incoming) port(st *stage, port *ports.Port, v []float64, ct *contracts.Incoming, msg []float64, interArrival time.Duration) {
	for fi := range port.Fields {
		f := &port.Fields[fi]
		if f.Vehicle != c.vehicle {
			continue // another vehicle's data: its own link fills it
		}
		switch f.Source {
		case ports.Slot:
			for k := range f.Width {
				x := msg[f.Slot+k]
				if x-x != 0 { // NaN or ±Inf
					x = f.Invalid
				}
				v[f.Offset+k] = x
			}
		case ports.Relative:
			v[f.Offset] = st.relative(f)
		case ports.Meta:
			switch f.Meta {
			case contracts.Time:
				v[f.Offset] = ct.RemoteTime
			case contracts.ReceiveTimeOffset:
				v[f.Offset] = ct.ReceiveTimeOffset()
			case contracts.SerialNumber:
				v[f.Offset] = ct.Serial
			case contracts.PingResults:
				c.stats.pingResults(v[f.Offset:f.Offset+f.Width], interArrival)
			}
		}
	}
}

// overdue rolls this vehicle's contracts' blocked states up, at local
// time t.
func (c *incoming) overdue(t float64) {
	var n int64
	for ci := range c.plan.Contracts {
		ct := &c.plan.Contracts[ci]
		if ct.Dir == beamng.FromBeamNG && !ct.CommData && c.state[ci].Check(t) {
			n++
		}
	}
	if c.stats.Get(Overdue) != n { // a gauge read by other goroutines: written only when it moves
		c.stats.Set(Overdue, n)
	}
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

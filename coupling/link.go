package coupling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/ports"
	"beamconnect/recording"
	"beamconnect/relative"
	"beamconnect/timesync"
)

// flushEvery is how often the recording is flushed.
const flushEvery = 250 * time.Millisecond

// Bind retries back off from firstRetry to maxRetry.
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// Link couples one vehicle: its socket pair, where BeamNG sends from, its
// reply ids, the lockstep watchdog, its connection state and its counters.
// Its loop runs on its own goroutine; the model it steps is the session's.
type Link struct {
	index  int
	name   string
	log    *slog.Logger
	clock  timesync.Clock
	listen Listen
	stage  *stage
	opt    *Options

	local, remote netip.AddrPort
	asked         netip.AddrPort // the local address as configured (port 0: any free one)
	t             Transport
	retryAt       time.Time // when a failed bind is tried again
	backoff       time.Duration
	bound         bool      // the address was bound in this run: a later failure is retried without limit
	failingSince  time.Time // the first of the failed binds in a row (zero: none)
	bindErr       error     // the latest bind's error

	// state is the connection state machine, owned by the loop; status is
	// what is reported: the state, or Error while the model is faulted.
	state  ports.Status
	status atomic.Int32

	proto   *beamng.Protocol
	plan    *ports.Plan                   // the plan this link last stepped with
	need    int                           // doubles of BeamNG's message the model reads
	slots   [len(relative.Quantities)]int // where the cross-vehicle properties' data sit
	in      []contracts.Incoming          // by plan contract index (incoming ones used)
	sim     *timesync.Engine              // the simulation clock: what local time each message is stepped at
	msg     []float64
	reply   []float64
	neutral []float64 // the reply's values when the model's cannot be trusted
	lo, hi  []float64 // per reply slot, the range BeamNG documents for its control (±Inf: none)
	clamped []bool    // per reply slot: a value beyond its range was warned about
	last    []float64 // the last reply's values, which BeamNG has
	rx, tx  []byte
	held    heldMessage // a message from a new port, waiting for BeamNG's to fall silent
	keep    []byte      // drain's newest message
	wire    [][]float64 // the input ports as a neutral reply carried them (recording, scope)
	// simTime is the recording's time of the latest message: BeamNG's
	// simulation time (modelClock.axis); entry is its row.
	simTime float64
	entry   recording.Entry
	diag    diagnosis
	diags   diagnoses

	ids      replyIDs
	src      source
	lockstep lockstep

	lastID       float64
	lastArrival  time.Time
	firstID      float64
	firstAt      time.Time
	yieldAt      time.Time     // when the loop last yielded to the scheduler
	flushAt      time.Time     // when the recording is flushed next (vehicle 0's loop)
	interArrival time.Duration // between the last two BeamNG messages (ping_results[1])
	fresh        bool          // the next message is the first since (re)connecting
	freshBase    float64       // a new port's first id, when more came from it before it was taken (else +Inf)
	restarted    bool          // BeamNG started this vehicle's coupling again: its next message begins it
	silent       bool          // BeamNG went silent while connected, and has not sent since
	owed         bool          // BeamNG's latest message has had no reply yet
	guess        silenceGuess  // a silence of about 2 s, re-based on a guess being checked
	// After a silence, what drain found queued: BeamNG's messages, and the
	// lowest id among them (drainN 0: the message in hand alone).
	drainLow float64
	drainN   int64
	// Handovers: resume is the session before's, until the link binds;
	// prior is the port BeamNG sent from then, until its first message
	// here is placed after the last that session answered; handing is this
	// run's, made at its end (Options.HandOver).
	resume  *Handover
	prior   netip.AddrPort
	handing *Handover

	stats Stats
}

func newLink(s *Session, v int, log *slog.Logger) *Link {
	p := s.opt.Plan
	veh := p.Vehicles[v]
	l := &Link{
		index: v, name: veh.Name, log: log, clock: s.opt.Clock, listen: s.opt.Listen, stage: s.stage, opt: &s.opt,
		local: veh.Local, remote: veh.Remote,
		proto: veh.Layout.Protocol,
		msg:   make([]float64, veh.Layout.Len(beamng.FromBeamNG)), reply: make([]float64, veh.Layout.Len(beamng.ToBeamNG)),
		neutral: veh.Layout.Protocol.Neutral(veh.Layout),
		last:    make([]float64, veh.Layout.Len(beamng.ToBeamNG)),
		rx:      make([]byte, beamng.MaxDatagram+1), tx: make([]byte, 8*veh.Layout.Len(beamng.ToBeamNG)),
		slots: veh.State,
		sim:   timesync.NewEngine(p.TimeSync, p.TimeDilation, p.Period, s.opt.Clock),
	}
	l.held.buf = make([]byte, beamng.MaxDatagram)
	l.freshBase = math.Inf(1)
	l.keep = make([]byte, 0, beamng.MaxDatagram+1)
	l.diag.startCommand = p.StartCommand(v)
	if s.opt.Local.IsValid() {
		l.local = s.opt.Local
	}
	l.asked = l.local
	if v < len(s.opt.Resume) {
		l.resume = s.opt.Resume[v]
	}
	copy(l.last, veh.Template) // what BeamNG holds before the first reply, as far as we know
	l.src.init(log, &l.stats, s.opt.Clock, seconds(p.Period))
	l.lockstep.init(log, &l.stats, &l.ids, veh.Unanswered)
	l.ids.policy = p.ReplyID
	l.rebind(p)
	l.status.Store(int32(ports.Unknown))
	return l
}

// rebind moves the link to plan p (at the start, and after a reload):
// contracts keep their state by name.
func (l *Link) rebind(p *ports.Plan) {
	in := make([]contracts.Incoming, len(p.Contracts))
	for i, ct := range p.Contracts {
		in[i] = contracts.Incoming{Schedule: ct.Schedule, Overdue: ct.Overdue}
		in[i].Start(l.sim.IdleTime())
		if l.plan == nil {
			continue
		}
		for j, oc := range l.plan.Contracts {
			if oc.Name == ct.Name {
				st := l.in[j]
				st.Schedule, st.Overdue = ct.Schedule, ct.Overdue
				in[i] = st
			}
		}
	}
	if l.plan != nil && (l.plan.TimeSync != p.TimeSync || l.plan.TimeDilation != p.TimeDilation) {
		l.sim.Retune(p.TimeSync, p.TimeDilation)
	}
	if l.plan != nil && l.ids.switchTo(p.ReplyID) {
		l.log.Warn("reply ids switched to echo: echoed ids lag one behind what BeamNG last applied, so BeamNG will wait 2 s once before it follows them")
	}
	if l.plan == nil || !l.plan.Vehicles[l.index].Layout.Equal(p.Vehicles[l.index].Layout) {
		l.lo, l.hi = p.Vehicles[l.index].Layout.Limits()
		l.clamped = make([]bool, len(l.lo))
	}
	l.plan, l.in = p, in
	l.need = p.Vehicles[l.index].Need
}

// Name is the vehicle's name (its remoteObject).
func (l *Link) Name() string { return l.name }

// Status is the reported connection status: the link's, or Error while the
// model is faulted.
func (l *Link) Status() ports.Status { return ports.Status(l.status.Load()) }

// Stats are the vehicle's live counters.
func (l *Link) Stats() *Stats { return &l.stats }

// LocalAddr is the address bound (valid once bound).
func (l *Link) LocalAddr() netip.AddrPort { return l.local }

// SetRemote sets BeamNG's address before Run (the in-process emulator's
// port is known only once it is bound).
func (l *Link) SetRemote(a netip.AddrPort) { l.remote = a }

// Remote is BeamNG's address the replies go to.
func (l *Link) Remote() netip.AddrPort { return l.remote }

// Sync is the vehicle's simulation clock. Read it after Run.
func (l *Link) Sync() *timesync.Engine { return l.sim }

// SimTime is the remote simulation time the run covered: from BeamNG's
// first message to its latest.
func (l *Link) SimTime() float64 {
	if l.stats.Get(Messages) == 0 {
		return 0
	}
	return l.sim.Remote(l.lastID) - l.sim.Remote(l.firstID)
}

// setState moves the connection state machine.
func (l *Link) setState(s ports.Status) {
	l.state = s
	l.report()
}

// report recomputes the reported status (the connection state, 4 error
// while the model is faulted) and logs a change. Only the link's loop
// calls it: after every step, since a step may fault or heal the model;
// unchanged, it costs two atomic loads.
func (l *Link) report() {
	s := l.reported()
	if ports.Status(l.status.Load()) == s {
		return
	}
	old := ports.Status(l.status.Swap(int32(s)))
	l.log.Info("connection status", "status", int(s), "is", s.String(), "was", old.String())
	l.recordStatus(s, old)
	if l.opt.OnStatus != nil {
		l.opt.OnStatus(l.index, s)
	}
}

// reported is the status to report: the connection state, 4 error while
// the model is faulted.
func (l *Link) reported() ports.Status {
	if s := l.state; !l.stage.fault.active.Load() || s != ports.Connecting && s != ports.Connected {
		return s
	}
	return ports.Error
}

// run is the link's loop: the connection state machine around receive.
func (l *Link) run(ctx context.Context) error {
	defer l.closeSocket()
	// Local time starts with the run.
	l.sim = timesync.NewEngine(l.plan.TimeSync, l.plan.TimeDilation, l.plan.Period, l.clock)
	for i := range l.in {
		l.in[i].Start(0)
	}
	if l.t == nil {
		l.setState(ports.Unconnected)
	} else {
		l.log.Info("waiting for BeamNG", "bound", l.local, "beamng", l.remote)
	}
	for ctx.Err() == nil {
		directive := l.stage.directive()
		switch l.state {
		case ports.Unconnected:
			if directive {
				if l.connect() == nil {
					l.log.Info("waiting for BeamNG", "bound", l.local, "beamng", l.remote)
				}
				continue
			}
			l.idle(ctx)
		case ports.Error:
			// A bind that fails is retried with backoff while the directive
			// asks for a connection; an address never bound gives up after
			// the bind timeout (a busy port is a mistake to say, not to
			// wait out); a socket that failed after it was bound is bound
			// again for as long as it takes (VS Connect "perpetually
			// attempts to reconnect").
			if !directive {
				l.setState(ports.Unconnected)
				continue
			}
			if err := l.givenUp(); err != nil {
				l.finish(false)
				return err
			}
			if !l.clock.Now().Before(l.retryAt) {
				if l.connect() == nil {
					l.log.Info("bound after retrying; waiting for BeamNG", "bound", l.local, "beamng", l.remote)
				}
				continue
			}
			l.idle(ctx)
		default: // Connecting, Connected
			if !directive {
				l.disconnect(false)
				continue
			}
			l.receive()
		}
		if l.index == 0 && l.opt.Record != nil {
			// Whole rows every 250 ms, while BeamNG is silent too, so a crash
			// or a silence loses at most that much; it never blocks. Under
			// the stage's lock, as every vehicle's rows are written, taken
			// only when a flush is due.
			if now := l.clock.Now(); !now.Before(l.flushAt) {
				st := l.enter()
				l.flushAt = l.opt.Record.FlushEvery(now, flushEvery)
				st.leave()
			}
		}
	}
	l.finish(errors.Is(ctx.Err(), context.Canceled))
	return nil
}

// finish notes how the run ended for this vehicle and leaves BeamNG with
// neutral controls, not the last ones. stopped says the run was stopped
// (Ctrl-C, SIGTERM: its context cancelled) rather than ended by its
// duration.
func (l *Link) finish(stopped bool) {
	now := l.clock.Now()
	if l.guess.phase != noGuess {
		// The run ended before BeamNG said whether it waited or paused:
		// taken for its wait, as guessed.
		l.stall(l.guess.gap, l.guess.silent, l.guess.id, now)
		l.guess.phase = noGuess
	}
	l.stats.endLink.Store(int32(l.state))
	if l.silent {
		// A silence the run's end cut short: say how long it lasted rather
		// than calling it longer than BeamNG's 2 s timeout. BeamNG waits 2 s
		// only for a reply it has not had: with every message answered, its
		// silence was its stop (or a pause, or its loss: a run that ends by
		// its duration expected it to send throughout).
		gap := now.Sub(l.lastArrival)
		l.stats.endSilence.Store(int64(gap))
		waiting := l.owed && gap < stallGap
		l.stats.endWaiting.Store(waiting)
		switch {
		case waiting:
			l.stats.inc(stallSilences)
		case stopped:
			l.stats.inc(stopSilences) // BeamNG stopped, then beamconnect was: a clean stop
		}
	}
	if l.state == ports.Connected || l.state == ports.Connecting {
		l.disconnect(l.opt.HandOver)
	}
	l.resume.Close() // never bound: the directive never asked for a connection
	l.resume = nil
	l.lockstep.end(now)
}

// idle steps a model that wants to see the status with no new data, then
// waits a little.
func (l *Link) idle(ctx context.Context) {
	st := l.enter()
	st.idle()
	st.leave()
	t := time.NewTimer(idleStep)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// connect binds the local address. On failure the status is Error and the
// loop tries again after a backoff, for as long as the directive asks for a
// connection.
func (l *Link) connect() error {
	if l.t != nil {
		return nil
	}
	l.fresh = true
	l.src.unlatch() // the first message will say where BeamNG sends from
	if !l.takeOver() {
		t, err := l.listen(l.local)
		if err != nil {
			return l.bindFailed(err)
		}
		l.t = t
	}
	l.backoff, l.bound, l.failingSince = 0, true, time.Time{}
	l.local = l.t.LocalAddr()
	l.diag.boundAt = l.clock.Now()
	l.setState(ports.Connecting)
	l.log.Debug("bound", "addr", l.local)
	return nil
}

// bindFailed logs a failed bind and schedules the next try.
func (l *Link) bindFailed(err error) error {
	l.stats.inc(BindFailures)
	l.bindErr = err
	if l.failingSince.IsZero() {
		l.failingSince = l.clock.Now()
	}
	wait := l.retryLater()
	l.log.Error("cannot bind the local address; retrying", "addr", l.local, "err", err,
		"retry_in", wait, "hint", bindHint(err, l.local))
	l.setState(ports.Error)
	return fmt.Errorf("coupling: cannot bind %v: %w", l.local, err)
}

// givenUp is the error that ends the run when the address has failed to
// bind for longer than the bind timeout, and was never bound in this run;
// nil while it is retried.
func (l *Link) givenUp() error {
	limit := l.opt.BindTimeout
	if l.bound || limit < 0 || l.failingSince.IsZero() || l.clock.Now().Sub(l.failingSince) < limit {
		return nil
	}
	n := l.stats.Get(BindFailures)
	l.log.Error("giving up: the local address could not be bound", "addr", l.local, "tries", n, "for", limit, "err", l.bindErr)
	return fmt.Errorf("could not bind %v for %v (%d tries): %w; %s", l.local, limit, n, l.bindErr, bindHint(l.bindErr, l.local))
}

// retryLater schedules the next bind, backing off.
func (l *Link) retryLater() time.Duration {
	l.backoff = min(max(2*l.backoff, firstRetry), maxRetry)
	l.retryAt = l.clock.Now().Add(l.backoff)
	return l.backoff
}

// bindHint says what usually causes a bind error.
func bindHint(err error, addr netip.AddrPort) string {
	switch {
	case errors.Is(err, errAddrInUse):
		return fmt.Sprintf("another program has %v: a second beamconnect on this config, BeamNG's Simulink S-function or FMU, or a second vehicle on the same port? (on Linux: ss -ulpn 'sport = :%d'; on Windows: netstat -ano -p udp)", addr, addr.Port())
	case errors.Is(err, errAddrNotAvail):
		return fmt.Sprintf("%v is not an address of this machine: check beamng.localIP", addr.Addr())
	case errors.Is(err, syscall.EACCES):
		return fmt.Sprintf("port %d needs privileges: use a port above 1023", addr.Port())
	}
	return "check beamng.localIP and beamng.localPort"
}

// socketFailed closes a socket that failed for good and binds again later.
func (l *Link) socketFailed(err error) {
	wait := l.retryLater()
	l.log.Error("socket failed; binding again", "err", err, "retry_in", wait)
	l.closeSocket()
	l.setState(ports.Error)
}

func (l *Link) closeSocket() {
	if l.t == nil {
		return
	}
	l.t.Close()
	l.t = nil
}

// disconnect sends neutral controls (pedals released, wheel torques 0,
// drive mode back to pedals), releases the port, or with keep hands it
// over (Handover), and goes unconnected.
func (l *Link) disconnect(keep bool) {
	l.setState(ports.Disconnecting)
	if l.t != nil && l.stats.Get(Messages) > 0 {
		l.send(l.neutralReply())
	}
	if keep {
		l.handing = l.handOver()
	}
	l.closeSocket()
	l.setState(ports.Unconnected)
}

// neutralReply builds the neutral reply of a link letting go into the
// loop's buffers, and takes it as sent. BeamNG applies a reply only if its
// id is above the highest it applied. With BeamNG's latest message
// unanswered, the neutral reply answers it (the next id). With it answered
// by a reply as neutral, that reply goes again under its own id, which
// BeamNG drops unless the first was lost on the way: its window stays as
// it was, and a session that takes over (Handover) answers its next
// message under the id it expects. Otherwise the neutral reply takes the
// next id, which BeamNG applies at once and counts as the answer to its
// next message.
func (l *Link) neutralReply() []byte {
	id := l.ids.last + 1
	l.neutralInto(l.reply, l.tx, id)
	if !l.owed && slices.EqualFunc(l.reply[1:], l.last[1:], sameValue) {
		id = l.ids.last
	}
	b := l.neutralInto(l.reply, l.tx, id)
	l.ids.sent(id)
	l.sent(l.reply)
	return b
}

// sameValue is equality of two values of a reply, NaN ("keep") equal to
// itself.
func sameValue(a, b float64) bool { return a == b || a != a && b != b }

// neutralInto fills reply with neutral controls under id, "keep" resolved
// to what BeamNG has, and encodes it into tx (sized for the reply).
func (l *Link) neutralInto(reply []float64, tx []byte, id float64) []byte {
	copy(reply, l.neutral)
	reply[0] = id
	l.proto.Resolve(reply, l.last)
	b, _ := beamng.Encode(tx, reply)
	return b
}

// send writes a reply to BeamNG.
func (l *Link) send(b []byte) error { return l.t.Send(b, l.remote) }

// enter takes the stage for link l, moving l to the plan in force.
func (l *Link) enter() *stage {
	st := l.stage
	st.enter()
	if l.plan != st.plan {
		l.rebind(st.plan) // a reload came in between two messages
	}
	return st
}

// sent notes the values of a reply that went out: BeamNG has them now, and
// its latest message is answered.
func (l *Link) sent(reply []float64) {
	copy(l.last, reply)
	l.owed = false
}

// quiet is a read that waited its bound and got nothing: BeamNG may have
// gone silent, a held message's time may have come, contracts may be
// overdue, and while connecting the model is stepped so it sees the status.
func (l *Link) quiet(now time.Time) {
	if l.takeHeld(now) || l.checkGuess(now) {
		return
	}
	l.noMessages(now)
	if l.state == ports.Connected && now.Sub(l.lastArrival) > l.opt.Silence {
		l.stats.inc(Silences)
		l.silent = true
		l.log.Warn("BeamNG went silent: its coupling stopped, it paused, or it is lost",
			"for", now.Sub(l.lastArrival).Round(time.Millisecond), "last_id", l.lastID)
		l.setState(ports.Connecting)
	}
	st := l.enter()
	l.checkOverdue(l.sim.IdleTime())
	if l.state == ports.Connecting {
		st.idle()
	}
	st.leave()
	l.report() // another vehicle's step may have faulted or healed the model
}

package coupling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"beamconnect/ports"
	"beamconnect/recording"
	"beamconnect/timesync"
)

// flushEvery is how often the recording is flushed.
const flushEvery = 250 * time.Millisecond

// yieldEvery is how often the link's loop yields to the scheduler.
const yieldEvery = 5 * time.Millisecond

// Link couples one vehicle. Its loop, on its own goroutine, runs the
// connection's state machine (connect, run, disconnect) around receive,
// which answers one message top to bottom. What it owns it keeps in parts:
// its socket (transport.go), what comes in from BeamNG (inbox.go), what
// goes out to it (reply.go), its connection status and its diagnoses
// (diagnose.go), its counters. The model it steps is the session's stage.
type Link struct {
	index int
	name  string
	log   *slog.Logger
	clock timesync.Clock
	stage *stage
	opt   *Options

	sock     socket   // where BeamNG is, and the socket to it
	in       inbox    // BeamNG's messages: read, classified, drained, placed
	incoming incoming // the contracts the messages fill the outputs by
	out      replier  // the replies: their ids, the lockstep watchdog, the reply, the send
	status   status   // the connection's state and what is reported of it
	diag     diagnoser

	plan *ports.Plan      // the plan this link last stepped with
	sim  *timesync.Engine // the simulation clock: what local time each message is stepped at
	// simTime is the recording's time of the latest message: BeamNG's
	// simulation time (modelClock.axis); entry is its row.
	simTime float64
	entry   recording.Entry
	yieldAt time.Time // when the loop last yielded to the scheduler
	flushAt time.Time // when the recording is flushed next (vehicle 0's loop)
	// Handovers: resume is the session before's, until the link binds;
	// handing is this run's, made at its end (Options.HandOver).
	resume  *Handover
	handing *Handover

	stats Stats
}

func newLink(s *Session, v int, log *slog.Logger) *Link {
	p := s.opt.Plan
	veh := p.Vehicles[v]
	l := &Link{
		index: v, name: veh.Name, log: log, clock: s.opt.Clock, stage: s.stage, opt: &s.opt,
		sim: timesync.NewEngine(p.TimeSync, p.TimeDilation, p.Period, s.opt.Clock),
	}
	l.sock = socket{listen: s.opt.Listen, log: log, stats: &l.stats, clock: s.opt.Clock, limit: s.opt.BindTimeout,
		local: veh.Local, remote: veh.Remote}
	if s.opt.Local.IsValid() {
		l.sock.local = s.opt.Local
	}
	l.sock.asked = l.sock.local
	if v < len(s.opt.Resume) {
		l.resume = s.opt.Resume[v]
	}
	l.diag.init(log, &l.stats, s.opt.Record, v, &l.simTime, &l.sock, p.StartCommand(v))
	l.status.init(log, s.opt.Record, v, veh.Name, len(p.Vehicles) > 1, &s.stage.fault.active, &l.simTime, s.opt.OnStatus)
	l.out.init(log, &l.stats, &l.sock, veh, p.ReplyID)
	l.in.init(log, &l.stats, s.opt.Clock, &l.sock, &l.out, &l.diag, l.sim, v, veh, p.Period)
	l.incoming.vehicle, l.incoming.stats = v, &l.stats
	l.rebind(p)
	return l
}

// rebind moves the link to plan p (at the start, and after a reload).
func (l *Link) rebind(p *ports.Plan) {
	l.incoming.rebind(p, l.sim.IdleTime()) // contracts keep their state by name
	if l.plan != nil && (l.plan.TimeSync != p.TimeSync || l.plan.TimeDilation != p.TimeDilation) {
		l.sim.Retune(p.TimeSync, p.TimeDilation)
	}
	l.in.rebind(p)
	l.out.rebind(l.plan, p, l.index)
	l.plan = p
}

// Name is the vehicle's name (its remoteObject).
func (l *Link) Name() string { return l.name }

// Status is the reported connection status: the link's, or Error while the
// model is faulted.
func (l *Link) Status() ports.Status { return l.status.get() }

// Stats are the vehicle's live counters.
func (l *Link) Stats() *Stats { return &l.stats }

// LocalAddr is the address bound (valid once bound).
func (l *Link) LocalAddr() netip.AddrPort { return l.sock.local }

// SetRemote sets BeamNG's address before Run (the in-process emulator's
// port is known only once it is bound).
func (l *Link) SetRemote(a netip.AddrPort) { l.sock.remote = a }

// Remote is BeamNG's address the replies go to.
func (l *Link) Remote() netip.AddrPort { return l.sock.remote }

// SendTo is where BeamNG must send: the bound address, or when it binds
// every interface (0.0.0.0), this machine's address on the way to BeamNG.
func (l *Link) SendTo() netip.AddrPort { return l.sock.sendTo() }

// Sync is the vehicle's simulation clock. Read it after Run.
func (l *Link) Sync() *timesync.Engine { return l.sim }

// SimTime is the remote simulation time the run covered: from BeamNG's
// first message to its latest, every coupling of BeamNG's in the run (it
// restarted its controller: ids from 0 again) counted, as the recording's
// time axis counts them.
func (l *Link) SimTime() float64 {
	if l.stats.Get(Messages) == 0 {
		return 0
	}
	return l.in.earlier + l.sim.Remote(l.in.lastID) - l.sim.Remote(l.in.firstID)
}

// diagnosed are what the link diagnosed so far, in the order of their
// kinds, each saying whether it holds at now.
func (l *Link) diagnosed(now time.Time) []Diagnosis { return l.diag.list(now) }

// run is the link's loop: the connection state machine around receive.
func (l *Link) run(ctx context.Context) error {
	defer l.sock.close()
	// Local time starts with the run.
	*l.sim = *timesync.NewEngine(l.plan.TimeSync, l.plan.TimeDilation, l.plan.Period, l.clock)
	l.incoming.start()
	if l.sock.t == nil {
		l.status.set(ports.Unconnected)
	} else {
		l.log.Info("waiting for BeamNG", "bound", l.sock.local, "beamng", l.sock.remote)
	}
	for ctx.Err() == nil {
		directive := l.stage.directive()
		switch l.status.state {
		case ports.Unconnected:
			if directive {
				if l.connect() == nil {
					l.log.Info("waiting for BeamNG", "bound", l.sock.local, "beamng", l.sock.remote)
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
				l.status.set(ports.Unconnected)
				continue
			}
			if err := l.sock.givenUp(); err != nil {
				l.finish(false)
				return err
			}
			if !l.clock.Now().Before(l.sock.retryAt) {
				if l.connect() == nil {
					l.log.Info("bound after retrying; waiting for BeamNG", "bound", l.sock.local, "beamng", l.sock.remote)
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
				l.flushAt = l.opt.Record.flushBy(now, flushEvery)
				st.leave()
			}
		}
	}
	l.finish(errors.Is(ctx.Err(), context.Canceled))
	return nil
}

// receive waits for BeamNG's next message and answers it, top to bottom:
// in, the step, out, counted. Whatever is not BeamNG's whole message is
// dropped and counted on the way in and never reaches the model; a read
// that waits its bound and gets nothing is quiet. It allocates nothing.
func (l *Link) receive() {
	if now := l.clock.Now(); now.Sub(l.yieldAt) > yieldEvery {
		// A scheduling point every few milliseconds: a goroutine that only
		// ever goes in and out of system calls looks to the runtime like
		// one that never yields, and gets preempted with a signal (an
		// interrupted receive, a rescheduled loop) tens of times a second.
		runtime.Gosched()
		l.yieldAt = now
	}

	// In: a held message whose time has come, or the socket's next
	// datagram (after a (re)connect or a pause, BeamNG's newest of those
	// queued); is it BeamNG's, where from, and what its id says.
	d, from, rxAt, arrival, err := l.in.read()
	switch {
	case err == errTimeout:
		l.quiet(arrival)
		return
	case err != nil:
		l.socketFailed(err)
		return
	}
	id, whole, ok := l.in.accept(d, from, arrival)
	if !ok {
		return
	}
	if l.status.state != ports.Connected {
		l.status.set(ports.Connected)
	}

	// The step, under the stage's lock: the message's local and model
	// time, its reply id, the outputs its contracts fill, the model's step
	// on them. The reply carries the model's controls only if it computed
	// them from this message's data; otherwise neutral ones, and why is
	// counted (short messages were counted when taken). The reply is built
	// and encoded, and its row recorded, before the lock is left: the row
	// is the reply BeamNG gets, whatever another vehicle's step does next.
	t := l.sim.Message(id, arrival)
	l.stats.localTime.Store(math.Float64bits(t))
	st := l.enter()
	replyID := l.out.ids.next(id, &l.out.lockstep)
	mt := st.place(l.index, id, l.in.restarted)
	l.simTime = st.clock.axis(mt) // the recording's time of this message
	l.in.restarted = false
	if whole {
		st.capture(l.index, &l.in.slots, l.in.msg)
		l.incoming.fill(st, l.in.msg, id, t, l.in.interArrival)
	}
	l.incoming.overdue(t)
	why, computed := ShortMessages, false
	if whole {
		why, computed = st.step(l.index, id, mt)
		st.loops.observe(l.index, mt, st.outs, st.ins) // judged in simulation time
	}
	if !computed && why != ShortMessages {
		l.stats.inc(why)
	}
	reply := l.out.build(l.plan, st, l.index, id, replyID, computed)
	late := l.clock.Now().Sub(arrival) >= rebaseGap
	if !late {
		l.observed(st, id)
	}
	st.leave()
	l.status.report() // the step may have faulted or healed the model
	if late {
		// The step took so long that BeamNG has timed out and moved on:
		// the reply is withheld.
		l.stats.inc(Late)
		return
	}

	// Out: master time sync holds the reply until its time, so BeamNG,
	// which blocks when its window is full, cannot run ahead of the local
	// clock; only this loop writes the socket.
	stepped := l.clock.Now()
	l.out.lockstep.observe(id, rxAt, arrival)
	paced := l.sim.Paced
	waited := l.sim.Hold(id)
	if l.sim.Paced != paced {
		l.stats.Pacing.Observe(l.sim.LastError)
	}
	sentAt := stepped
	if waited > 0 {
		sentAt = l.clock.Now()
	}
	if err := l.sock.send(reply); err != nil {
		l.log.Warn("reply failed", "err", err)
		return
	}

	// Counted: BeamNG has this reply now.
	l.out.sent()
	l.out.lockstep.replied(id, sentAt)
	l.stats.inc(Replies)
	if !computed {
		l.stats.inc(NeutralReplies)
	}
	l.stats.Turnaround.Observe(l.clock.Now().Sub(arrival) - waited)
	if l.opt.OnMessage != nil {
		l.opt.OnMessage(l.index, id, replyID)
	}
}

// observed hands the message's step to whatever watches the run: the
// recording and the scope. They show what the reply carries, value for
// value, as it was encoded: this vehicle's controls from the reply
// (clamped, or neutral, "keep" as BeamNG gets it), the other vehicles' as
// the model wrote them in this step, and the model's own variables as the
// step left them, but for those that are BeamNG's port elements (a
// system's connectors of BeamNG's), which are the message's and the
// reply's values; their time is BeamNG's simulation time of the message.
// Under the stage's lock, in the step, so no other vehicle's step comes
// in between.
func (l *Link) observed(st *stage, id float64) {
	o := l.opt
	if o.Record == nil && o.Scope == nil {
		return
	}
	st.sample()
	ins := l.out.wireInputs(l.plan, st, l.index)
	st.carry(ins)
	if o.Record != nil {
		e := &l.entry
		*e = recording.Entry{Time: l.simTime, LocalTime: l.sim.Local(), Vehicle: l.index, Status: int(l.status.now()),
			ID: id, ReplyID: l.out.reply[0], Reloads: st.stats.Get(Reloads),
			Outputs: st.outs, Inputs: ins, Setpoints: st.loops.set, Model: st.modelVals, VariablesPending: st.vars.pending()}
		o.Record.Row(e)
	}
	if o.Scope != nil {
		o.Scope.Push(l.simTime, st.outs, ins, st.loops.group, st.modelGroup)
	}
}

// quiet is a read that waited its bound and got nothing: a held message's
// time may have come, BeamNG may have gone silent, contracts may be
// overdue, and while connecting the model is stepped so it sees the status.
func (l *Link) quiet(now time.Time) {
	if l.in.heldDue(now) || l.in.checkGuess(now) {
		return
	}
	l.diag.noMessages(now)
	if l.status.state == ports.Connected && now.Sub(l.in.lastArrival) > l.opt.Silence {
		l.stats.inc(Silences)
		l.in.silent = true
		l.log.Warn("BeamNG went silent: its coupling stopped, it paused, or it is lost",
			"for", now.Sub(l.in.lastArrival).Round(time.Millisecond), "last_id", l.in.lastID)
		l.status.set(ports.Connecting)
	}
	st := l.enter()
	l.incoming.overdue(l.sim.IdleTime())
	if l.status.state == ports.Connecting {
		st.idle()
	}
	st.leave()
	l.status.report() // another vehicle's step may have faulted or healed the model
}

// enter takes the stage for link l, moving l to the plan in force.
func (l *Link) enter() *stage {
	st := l.stage
	st.enter()
	if l.plan != st.plan {
		l.rebind(st.plan) // a reload came in between two messages
	}
	return st
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

// connect binds the local address, or takes over the session before's
// socket (Handover). On failure the status is Error and the loop tries
// again after a backoff, for as long as the directive asks for a
// connection.
func (l *Link) connect() error {
	if l.sock.t != nil {
		return nil
	}
	l.in.connecting() // the first message will say where BeamNG sends from
	if !l.takeOver() {
		t, err := l.sock.listen(l.sock.local)
		if err != nil {
			err = l.sock.failed(err)
			l.status.set(ports.Error)
			return err
		}
		l.sock.t = t
	}
	l.sock.bound()
	l.diag.bound(l.clock.Now())
	l.status.set(ports.Connecting)
	l.log.Debug("bound", "addr", l.sock.local)
	return nil
}

// socketFailed closes a socket that failed for good and binds again later.
func (l *Link) socketFailed(err error) {
	wait := l.sock.retryLater()
	l.log.Error("socket failed; binding again", "err", err, "retry_in", wait)
	l.sock.close()
	l.status.set(ports.Error)
}

// disconnect sends neutral controls (pedals released, wheel torques 0,
// drive mode back to pedals), releases the port, or with keep hands it
// over (Handover), and goes unconnected.
func (l *Link) disconnect(keep bool) {
	l.status.set(ports.Disconnecting)
	if l.sock.t != nil && l.stats.Get(Messages) > 0 {
		l.sock.send(l.out.neutralReply())
	}
	if keep {
		l.handing = l.handOver()
	}
	l.sock.close()
	l.status.set(ports.Unconnected)
}

// finish notes how the run ended for this vehicle and leaves BeamNG with
// neutral controls, not the last ones. stopped says the run was stopped
// (Ctrl-C, SIGTERM: its context cancelled) rather than ended by its
// duration.
func (l *Link) finish(stopped bool) {
	now := l.clock.Now()
	l.in.endGuess(now)
	l.stats.endLink.Store(int32(l.status.state))
	if l.in.silent {
		// A silence the run's end cut short: say how long it lasted rather
		// than calling it longer than BeamNG's 2 s timeout. BeamNG waits 2 s
		// only for a reply it has not had: with every message answered, its
		// silence was its stop (or a pause, or its loss: a run that ends by
		// its duration expected it to send throughout).
		gap := now.Sub(l.in.lastArrival)
		l.stats.endSilence.Store(int64(gap))
		waiting := l.out.owed && gap < stallGap
		l.stats.endWaiting.Store(waiting)
		switch {
		case waiting:
			l.stats.inc(stallSilences)
		case stopped:
			l.stats.inc(stopSilences) // BeamNG stopped, then beamconnect was: a clean stop
		}
	}
	if l.status.state == ports.Connected || l.status.state == ports.Connecting {
		l.disconnect(l.opt.HandOver)
	}
	l.resume.Close() // never bound: the directive never asked for a connection
	l.resume = nil
	l.out.lockstep.end(now)
}

// status is a link's connection status: the state its loop's state
// machine is in (owned by the loop), and what is reported of it (the
// state, or 4 error while the model is faulted), read by any goroutine.
// A change is logged, recorded and called back (Options.OnStatus).
type status struct {
	state    ports.Status
	reported atomic.Int32
	log      *slog.Logger
	rec      *Recorder // nil: no recording
	vehicle  int
	name     string // the event's prefix with several vehicles ("" for one)
	faulted  *atomic.Bool
	time     *float64 // the link's latest message's recording time
	onStatus func(vehicle int, s ports.Status)
}

func (s *status) init(log *slog.Logger, rec *Recorder, vehicle int, name string, several bool, faulted *atomic.Bool, time *float64, onStatus func(int, ports.Status)) {
	s.log, s.rec, s.vehicle, s.faulted, s.time, s.onStatus = log, rec, vehicle, faulted, time, onStatus
	if several && name != "" {
		s.name = name + " "
	}
	s.reported.Store(int32(ports.Unknown))
}

// get is the status reported.
func (s *status) get() ports.Status { return ports.Status(s.reported.Load()) }

// set moves the connection state machine.
func (s *status) set(to ports.Status) {
	s.state = to
	s.report()
}

// now is the status to report: the connection state, 4 error while the
// model is faulted.
func (s *status) now() ports.Status {
	if st := s.state; !s.faulted.Load() || st != ports.Connecting && st != ports.Connected {
		return st
	}
	return ports.Error
}

// report publishes the status, logging and recording a change. Only the
// link's loop calls it: after every step, since a step may fault or heal
// the model; unchanged, it costs two atomic loads.
func (s *status) report() {
	now := s.now()
	if s.get() == now {
		return
	}
	was := ports.Status(s.reported.Swap(int32(now)))
	s.log.Info("connection status", "status", int(now), "is", now.String(), "was", was.String())
	if s.rec != nil {
		s.rec.Event(recording.Event{Time: *s.time, Vehicle: s.vehicle, Kind: recording.StatusChange,
			Name: s.name + "status " + now.String(), Text: fmt.Sprintf("connection status %d (%s), was %s", now, now, was)})
	}
	if s.onStatus != nil {
		s.onStatus(s.vehicle, now)
	}
}

// Package coupling runs one tight coupling with BeamNG: it owns the socket,
// decodes each BeamNG message, updates the contracts and port vectors,
// steps the model, and replies, with the connection status machine and
// reply-id policy of design.md around it.
//
// It fails safe. Datagrams that are not BeamNG's (another host, another
// port once BeamNG's is latched, an implausible id) are dropped and
// reported; a model that dies, hangs or panics is answered for with
// neutral controls; a bind that fails is retried with backoff; and a
// watchdog reports, and where the protocol allows repairs, a BeamNG that
// is no longer in lockstep. Every fault is logged when it happens and
// listed by Faults at the end.
package coupling

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/contracts"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/rawudp"
	"beamconnect/scope"
	"beamconnect/timesync"
)

// Status is VS Connect's connection status, port 0 of the outputs.
type Status int32

const (
	Unknown       Status = 0
	Unconnected   Status = 1 // directive 0: not trying
	Connecting    Status = 2 // bound, waiting for BeamNG, or BeamNG went silent
	Connected     Status = 3
	Error         Status = 4 // bind or socket failure (retried with backoff), or a model fault
	Disconnecting Status = 5 // directive went 0: neutral controls sent, port being released
)

func (s Status) String() string {
	switch s {
	case Unconnected:
		return "unconnected"
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Error:
		return "error"
	case Disconnecting:
		return "disconnecting"
	}
	return "unknown"
}

// stallGap bounds a silence that is BeamNG's own 2 s blocking timeout
// (reported as a stall) rather than BeamNG lost.
const stallGap = 2300 * time.Millisecond

// RebaseGap is how long BeamNG may be silent before beamconnect assumes its
// controller timed out (2.0 s) and reset its window: reply ids then restart
// so BeamNG goes back to lockstep instead of keeping a standing backlog
// (spec §4). A reply later than this is not sent: BeamNG gave up on it.
const RebaseGap = 1900 * time.Millisecond

// idleStep is how often the model is stepped while no messages come, so it
// sees the status and can change the directive.
const idleStep = 50 * time.Millisecond

// Options set up a coupling.
type Options struct {
	Plan  *ports.Plan
	Model models.Model
	Log   *slog.Logger
	// Local and Remote override the plan's first vehicle's addresses (the
	// in-process emulator uses free ports).
	Local, Remote netip.AddrPort
	// Silence is how long BeamNG may send nothing before the status drops
	// from connected to connecting. Default 1 s, or 3 periods if longer.
	Silence time.Duration
	// Record, when set, receives a row per message.
	Record *Recorder
	// OnStatus, when set, is called on every change of a vehicle's reported
	// status (vehicle 0 for a one-vehicle run), on its loop.
	OnStatus func(vehicle int, s Status)
	// Scope, when set, receives a sample per message (decimated as the ring
	// says): time, status, every output, the directive and every input. It
	// never blocks the loop.
	Scope *scope.Ring
	// OnMessage, when set, is called after each reply with the BeamNG
	// message id and the reply id (for tests).
	OnMessage func(id, replyID float64)
	// Clock paces master time sync; nil is the real clock.
	Clock timesync.Clock
	// BusyPoll reads the socket in a loop without blocking, on a locked
	// OS thread (Linux; elsewhere it falls back with a warning): no
	// netpoller wake-up on the per-message path, for the lowest latency,
	// at the cost of a CPU core. The plan's beamng.busyPoll sets it too.
	BusyPoll bool
}

// Coupling is one running coupling. Create it with New, then Run it.
type Coupling struct {
	opt    Options
	plan   *ports.Plan
	model  models.Model
	log    *slog.Logger
	local  netip.AddrPort
	remote netip.AddrPort
	conn   *net.UDPConn
	// rxTimes says the socket reports when each datagram arrived (Linux:
	// SO_TIMESTAMPNS), which the lockstep watchdog needs.
	rxTimes bool
	oob     []byte
	// sock is the socket out of the netpoller (Linux; conn is nil then),
	// read by blocking recvmsg or, busy polling (Options.BusyPoll), by
	// non-blocking ones in a loop.
	busy         bool
	sock         *rawudp.Socket
	readDeadline time.Time // the socket's read deadline, as last set

	// link is the connection state machine, owned by the loop. status is
	// what is reported (port 0, the status line): the link's state, or
	// Error while the model is faulted.
	link   Status
	status atomic.Int32

	outs    [][]float64 // output port vectors; outs[0][0] is the status
	ins     [][]float64 // input port vectors; ins[0][0] is the directive
	msg     []float64
	reply   []float64
	neutral []float64 // the reply sent instead while the model is faulted
	rx, tx  []byte

	// Gen 2 (CSV-defined) couplings: BeamNG has no NaN filter, so a reply
	// never carries a non-finite value; "keep" means resending the last.
	gen2       bool
	stateBytes int       // the length of BeamNG's message the layout says
	lastSent   []float64 // the last reply's values
	hungMu     sync.Mutex
	hungReply  []float64            // neutral controls for the hung-step watchdog, "keep" resolved
	in         []contracts.Incoming // by plan contract index (incoming ones used)
	sync       *timesync.Engine

	// Reply ids.
	base        float64 // BeamNG id that reply ids count from (after a reset)
	counter     float64
	lastID      float64
	lastReplyID float64
	maxReplyID  float64 // the highest reply id ever sent
	lastArrival time.Time
	firstID     float64
	firstAt     time.Time
	// interArrival is the time between the last two BeamNG messages
	// (ping_results[1]).
	interArrival time.Duration
	fresh        bool // the next message is the first since (re)connecting
	neutralReply bool // the reply Handle built carries neutral controls
	silent       bool // BeamNG went silent while connected, and has not sent since

	// Several vehicles: this coupling is vehicle's link, and shares the
	// model and the port vectors with the other vehicles' links (nil for a
	// single vehicle).
	vehicle int
	sh      *shared

	src   sourceState
	bind  bindState
	fault faultState
	lock  lockstep

	stats Stats

	// Reloads: Reload parks a checked plan in pending; the loop swaps it in
	// between two messages. latest is the newest accepted plan (what the
	// next reload is compared with), active the one replies use.
	reloadMu sync.Mutex
	pending  atomic.Pointer[ports.Plan]
	latest   atomic.Pointer[ports.Plan]
	active   atomic.Pointer[ports.Plan]
}

// Stats are the coupling's counters, safe to read while it runs.
type Stats struct {
	Messages        atomic.Int64 // BeamNG messages handled
	Replies         atomic.Int64
	Foreign         atomic.Int64 // datagrams from another host, or another port than BeamNG's: dropped
	WrongSize       atomic.Int64 // datagrams of the wrong length: dropped
	ShortMessages   atomic.Int64 // Gen 2: BeamNG's message shorter than the CSV says (rows it could not resolve); missing slots read as invalid
	LongMessages    atomic.Int64 // Gen 2: longer than the CSV says; the extra values are ignored
	NonFinite       atomic.Int64 // Gen 2: NaN or Inf values the model wrote, replaced by the last value sent
	Malformed       atomic.Int64 // right length, but the id is not a whole number ≥ 0
	Duplicates      atomic.Int64 // an id already answered
	IDJumps         atomic.Int64 // ids that jumped further than BeamNG could have sent: dropped
	Drained         atomic.Int64 // stale messages skipped after a (re)connect or a pause
	StallsRecovered atomic.Int64 // BeamNG 2 s timeouts after which reply ids were re-based
	Late            atomic.Int64 // replies not sent because BeamNG had given up on them
	Restarts        atomic.Int64 // BeamNG controller reloads seen (ids from 0 again)
	SourceChanges   atomic.Int64 // BeamNG's sending address latched anew (reload, or after silence)
	Silences        atomic.Int64 // BeamNG went silent while connected (lost, or its coupling stopped)
	BindFailures    atomic.Int64 // failed binds of the local address (each retried)
	Connects        atomic.Int64 // times BeamNG's messages started coming (0: never connected)
	Overdue         atomic.Int64 // incoming contracts blocked right now
	Reloads         atomic.Int64 // config reloads applied
	ReloadErrors    atomic.Int64 // config reloads refused (invalid, or restart-only changes)
	ModelFaults     atomic.Int64 // times the model died, hung, panicked or stopped answering
	NeutralReplies  atomic.Int64 // replies sent with neutral controls because of a model fault
	LockstepLost    atomic.Int64 // times BeamNG was seen running ahead of the replies
	OutOfLockstep   atomic.Int64 // nanoseconds BeamNG spent out of lockstep, closed episodes
	Turnaround      Histogram    // message read → reply written, less any master-sync hold
	Pacing          Histogram    // master time sync: how late each reply went out against its schedule
	LocalTime       atomic.Uint64
	LastArrival     atomic.Int64 // unix nanoseconds of the latest BeamNG message

	lockstepSince atomic.Int64 // unix ns the open episode began; 0 in lockstep
	openAtEnd     atomic.Bool  // the run ended out of lockstep
	stallSilences atomic.Int64 // silences that were BeamNG's own 2 s timeout
	endLink       atomic.Int32 // the link's state when the run was asked to stop
	endSilence    atomic.Int64 // ns BeamNG had been silent when the run was asked to stop, if it was
}

// LockstepLostNow reports whether BeamNG is out of lockstep right now, and
// since when.
func (s *Stats) LockstepLostNow() (bool, time.Time) {
	ns := s.lockstepSince.Load()
	return ns != 0, time.Unix(0, ns)
}

// OutOfLockstepTotal is the time BeamNG spent out of lockstep, the open
// episode included.
func (s *Stats) OutOfLockstepTotal() time.Duration {
	d := time.Duration(s.OutOfLockstep.Load())
	if lost, since := s.LockstepLostNow(); lost {
		d += time.Since(since)
	}
	return d
}

// EndedOutOfLockstep reports whether the run ended with BeamNG out of lockstep.
func (s *Stats) EndedOutOfLockstep() bool { return s.openAtEnd.Load() }

// New prepares a coupling of a single vehicle; it binds nothing yet. A
// config with several vehicles runs as a Fleet.
func New(opt Options) (*Coupling, error) {
	p := opt.Plan
	if p == nil || opt.Model == nil {
		return nil, errors.New("coupling: a plan and a model are needed")
	}
	if len(p.Vehicles) != 1 {
		return nil, fmt.Errorf("coupling: the config couples %d vehicles: run them as a Fleet", len(p.Vehicles))
	}
	return newLink(opt, 0, nil), nil
}

// newLink prepares the coupling of vehicle v of the plan.
func newLink(opt Options, v int, sh *shared) *Coupling {
	p := opt.Plan
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Silence <= 0 {
		opt.Silence = max(time.Second, 3*time.Duration(p.Period*float64(time.Second)))
	}
	l := p.Vehicles[v].Layout
	c := &Coupling{
		opt: opt, plan: p, model: opt.Model, log: opt.Log,
		local: p.Vehicles[v].Local, remote: p.Vehicles[v].Remote, vehicle: v, sh: sh,
		msg: make([]float64, l.Len(beamng.FromBeamNG)), reply: make([]float64, l.Len(beamng.ToBeamNG)),
		neutral: neutralReply(l),
		rx:      make([]byte, beamng.MaxDatagram+1), tx: make([]byte, 8*l.Len(beamng.ToBeamNG)),
		gen2: l.Protocol == beamng.Gen2, stateBytes: 8 * l.Len(beamng.FromBeamNG),
		busy: opt.BusyPoll || p.BusyPoll,
		oob:  make([]byte, 128),
		in:   make([]contracts.Incoming, len(p.Contracts)),
	}
	if c.gen2 {
		c.lastSent = slices.Clone(p.Vehicles[v].Template)
		c.hungReply = slices.Clone(p.Vehicles[v].Template)
	}
	if opt.Local.IsValid() {
		c.local = opt.Local
	}
	if opt.Remote.IsValid() {
		c.remote = opt.Remote
	}
	if sh != nil {
		c.outs, c.ins = sh.outs, sh.ins // one set of port vectors for every vehicle
	} else {
		for _, pt := range p.Outputs {
			c.outs = append(c.outs, initial(pt))
		}
		for _, pt := range p.Inputs {
			c.ins = append(c.ins, initial(pt))
		}
	}
	for i, ct := range p.Contracts {
		c.in[i] = contracts.Incoming{Schedule: ct.Schedule, Overdue: ct.Overdue}
	}
	c.status.Store(int32(Unknown))
	c.sync = timesync.NewEngine(p.TimeSync, p.TimeDilation, p.Period, opt.Clock)
	c.fault.init(c)
	c.lock.init(p.Unanswered)
	c.latest.Store(p)
	c.active.Store(p)
	return c
}

// Sync is the simulation clock. Read it from the model or after Run.
func (c *Coupling) Sync() *timesync.Engine { return c.sync }

// initial is a port vector holding its fields' initial values.
func initial(pt ports.Port) []float64 {
	v := make([]float64, pt.Width)
	for _, f := range pt.Fields {
		for k := range f.Width {
			v[f.Offset+k] = f.Initial
		}
	}
	return v
}

// Status is the reported connection status: the link's, or Error while the
// model is faulted.
func (c *Coupling) Status() Status { return Status(c.status.Load()) }

// Stats are the coupling's live counters.
func (c *Coupling) Stats() *Stats { return &c.stats }

// LocalAddr is the address bound (valid while connecting or connected).
func (c *Coupling) LocalAddr() netip.AddrPort { return c.local }

// setLink moves the connection state machine.
func (c *Coupling) setLink(s Status) {
	c.link = s
	c.report()
}

// report recomputes the reported status and logs a change.
func (c *Coupling) report() {
	s := c.link
	if c.fault.active() && (s == Connecting || s == Connected) {
		s = Error
	}
	old := Status(c.status.Swap(int32(s)))
	if c.sh == nil {
		c.outs[0][0] = float64(s)
	}
	if old == s {
		return
	}
	c.log.Info("connection status", "status", int(s), "is", s.String(), "was", old.String())
	if c.opt.OnStatus != nil {
		c.opt.OnStatus(c.vehicle, s)
	}
}

// Bind binds the local address now rather than when Run starts, so a
// caller can learn the port (Options.Local may name port 0) before BeamNG's
// side is started. Later reconnects bind the same port again.
func (c *Coupling) Bind() error {
	if err := c.connect(); err != nil {
		return err
	}
	return nil
}

// SetRemote sets BeamNG's address before Run (the in-process emulator's
// port is known only once it is bound).
func (c *Coupling) SetRemote(a netip.AddrPort) { c.remote = a }

// Run drives the coupling until ctx ends. The model is stepped once per
// BeamNG message, and every 50 ms while none come.
func (c *Coupling) Run(ctx context.Context) error {
	c.sync = timesync.NewEngine(c.plan.TimeSync, c.plan.TimeDilation, c.plan.Period, c.opt.Clock)
	defer c.closeConn()
	if c.busy {
		// One thread spins on the socket; locked, so the loop never waits
		// to be scheduled back onto one.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c.log.Info("busy polling: reading the socket in a loop, one CPU core kept busy")
	}
	for i := range c.in {
		c.in[i].Start(0)
	}
	stopWatchdog := c.fault.watch(ctx)
	defer stopWatchdog()
	if !c.bound() {
		c.setLink(Unconnected)
	} else {
		c.log.Info("waiting for BeamNG", "bound", c.local, "beamng", c.remote)
	}
	for ctx.Err() == nil {
		c.applyPending()
		directive := c.directive()
		switch c.link {
		case Unconnected:
			if directive {
				if c.connect() == nil {
					c.log.Info("waiting for BeamNG", "bound", c.local, "beamng", c.remote)
				}
				continue
			}
			c.idle(ctx)
		case Error:
			// VS Connect "perpetually attempts to reconnect": retry the bind
			// with backoff while the directive asks for a connection.
			if !directive {
				c.setLink(Unconnected)
				continue
			}
			if !time.Now().Before(c.bind.retryAt) {
				if c.connect() == nil {
					c.log.Info("bound after retrying; waiting for BeamNG", "bound", c.local, "beamng", c.remote)
				}
				continue
			}
			c.idle(ctx)
		case Connecting, Connected:
			if !directive {
				c.disconnect()
				continue
			}
			c.receive()
		}
		c.flushRecord(false)
	}
	c.stats.endLink.Store(int32(c.link))
	if c.silent {
		// A silence the run's end cut short: say how long it lasted rather
		// than calling it longer than BeamNG's 2 s timeout.
		gap := time.Since(c.lastArrival)
		c.stats.endSilence.Store(int64(gap))
		if gap < stallGap {
			c.stats.stallSilences.Add(1)
		}
	}
	if c.link == Connected || c.link == Connecting {
		c.disconnect() // leave BeamNG with neutral controls, not the last ones
	}
	c.lock.end(time.Now(), &c.stats)
	c.flushRecord(true)
	return nil
}

// idle steps the model with no new data, then waits a little.
func (c *Coupling) idle(ctx context.Context) {
	c.step(c.sync.IdleTime())
	select {
	case <-ctx.Done():
	case <-time.After(idleStep):
	}
}

func (c *Coupling) closeConn() {
	c.fault.conn.Store(nil)
	c.fault.sock.Store(nil)
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	if c.sock != nil {
		c.sock.Close()
		c.sock = nil
	}
}

// disconnect sends neutral controls (pedals released, wheel torques 0,
// drive mode back to pedals), releases the port and goes unconnected.
func (c *Coupling) disconnect() {
	c.setLink(Disconnecting)
	if c.bound() && c.stats.Messages.Load() > 0 {
		copy(c.reply, c.neutral)
		c.keepLast()
		c.reply[0] = c.lastReplyID + 1
		if b, err := beamng.Encode(c.tx, c.reply); err == nil {
			c.write(b)
		}
	}
	c.closeConn()
	c.setLink(Unconnected)
}

// receive waits for one datagram (or a short timeout) and handles it.
func (c *Coupling) receive() {
	if c.sock == nil {
		// The deadline bounds an idle wait; moving it is a timer change in
		// the runtime, so it moves only once half of it has passed, not on
		// every message (a raw socket keeps its own bound).
		if now := time.Now(); c.readDeadline.Sub(now) < idleStep/2 {
			c.readDeadline = now.Add(idleStep)
			c.conn.SetReadDeadline(c.readDeadline)
		}
	}
	n, from, sent, err := c.read()
	now := time.Now()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if c.link == Connected && now.Sub(c.lastArrival) > c.opt.Silence {
				c.stats.Silences.Add(1)
				c.silent = true
				c.log.Warn("BeamNG went silent: its coupling stopped, it paused, or it is lost",
					"for", now.Sub(c.lastArrival).Round(time.Millisecond), "last_id", c.lastID)
				c.setLink(Connecting)
			}
			c.checkOverdue(c.sync.IdleTime())
			if c.link == Connecting {
				c.lockShared()
				c.outs[0][0] = float64(c.portStatus())
				c.step(c.sync.IdleTime())
				c.unlockShared()
			}
			return
		}
		c.socketFailed(err)
		return
	}
	if c.fresh || now.Sub(c.lastArrival) >= RebaseGap && c.stats.Messages.Load() > 0 {
		n, from = c.drain(n, from)
		now, sent = time.Now(), 0
	}
	b, ok := c.Handle(c.rx[:n], from, now)
	if !ok {
		return
	}
	if c.fault.answeredByWatchdog() {
		// The model's step ran past the model timeout and the watchdog has
		// already answered this message with neutral controls.
		c.stats.Late.Add(1)
		return
	}
	if time.Since(now) >= RebaseGap {
		// The model took so long that BeamNG has timed out and moved on.
		c.stats.Late.Add(1)
		return
	}
	c.lock.observe(c, sent, now)
	// Master time sync: the reply waits for its time, so BeamNG, which
	// blocks when its window is full, cannot run ahead of the local clock.
	paced := c.sync.Paced
	held := c.sync.Hold(c.msg[0])
	if c.sync.Paced != paced {
		c.stats.Pacing.Observe(c.sync.LastError)
	}
	writeAt := time.Now()
	if err := c.write(b); err != nil {
		c.log.Warn("reply failed", "err", err)
		return
	}
	c.lock.replied(c.msg[0], writeAt)
	c.stats.Replies.Add(1)
	if c.neutralReply {
		c.stats.NeutralReplies.Add(1)
	}
	c.stats.Turnaround.Observe(time.Since(now) - held)
	if c.opt.Record != nil || c.opt.Scope != nil {
		c.lockShared()
		t := c.sync.Local()
		if c.opt.Record != nil {
			c.opt.Record.Row(t, c.vehicle, c.Status(), c.msg[0], c.reply[0], c.stats.Reloads.Load(), c.outs, c.ins)
		}
		if c.opt.Scope != nil {
			c.opt.Scope.Push(t, c.outs, c.ins)
		}
		c.unlockShared()
	}
	if c.opt.OnMessage != nil {
		c.opt.OnMessage(c.msg[0], c.reply[0])
	}
}

// flushRecord hands the recorder's rows to its writer every 250 ms, on
// the loop (it never blocks: a slow disk gets the rows late, or counts
// them lost), so a crash or a BeamNG silence loses at most that much.
func (c *Coupling) flushRecord(final bool) {
	if c.opt.Record == nil {
		return
	}
	if final {
		c.opt.Record.Close()
		return
	}
	c.opt.Record.FlushEvery(time.Now(), 250*time.Millisecond)
}

// drain reads whatever else is already queued and keeps BeamNG's newest
// message (the highest id: the network may deliver them out of order):
// after a (re)connect or a pause of our own, older messages are stale, and
// answering only the newest is what puts BeamNG back in lockstep.
func (c *Coupling) drain(n int, from netip.AddrPort) (int, netip.AddrPort) {
	keep := make([]byte, 0, beamng.MaxDatagram) // rare path: may allocate
	keep = append(keep, c.rx[:n]...)
	for {
		var m int
		var f netip.AddrPort
		var err error
		if c.sock != nil {
			// What is queued is there now: stop at the first empty read
			// instead of waiting out a deadline.
			m, _, f, err = c.sock.Poll(c.rx, nil)
		} else {
			c.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
			m, f, err = c.conn.ReadFromUDPAddrPort(c.rx)
		}
		if err != nil {
			break
		}
		switch {
		case !c.fromBeamNG(f):
			c.src.foreign(c, f, m)
		case !c.usable(m):
			c.stats.WrongSize.Add(1)
		default:
			c.stats.Drained.Add(1)
			if !c.usable(len(keep)) || messageID(c.rx) > messageID(keep) {
				keep, from = append(keep[:0], c.rx[:m]...), f
			}
		}
	}
	c.readDeadline = time.Time{} // drain moved it: receive sets it again
	copy(c.rx, keep)
	return len(keep), from
}

// usable reports whether a datagram of n bytes can be BeamNG's message: the
// layout's length for Gen 1; for Gen 2 any whole number of doubles, since
// a CSV row BeamNG cannot resolve shortens or pads what it sends (§3.3).
func (c *Coupling) usable(n int) bool {
	if c.gen2 {
		return n >= 8 && n%8 == 0
	}
	return n == c.stateBytes
}

// decode reads BeamNG's message into c.msg. A Gen 2 message of another
// length than the CSV says is taken as far as it goes, the missing slots
// NaN (so their fields read their invalidValue), and counted.
func (c *Coupling) decode(datagram []byte) bool {
	if !c.gen2 || len(datagram) == c.stateBytes {
		return beamng.Decode(c.msg, datagram) == nil
	}
	if !c.usable(len(datagram)) {
		return false
	}
	n := min(len(datagram), c.stateBytes)
	if beamng.Decode(c.msg[:n/8], datagram[:n]) != nil {
		return false
	}
	for i := n / 8; i < len(c.msg); i++ {
		c.msg[i] = math.NaN()
	}
	if len(datagram) < c.stateBytes {
		c.stats.ShortMessages.Add(1)
	} else {
		c.stats.LongMessages.Add(1)
	}
	return true
}

// messageID reads the id of an encoded message (NaN for a short one).
func messageID(b []byte) float64 {
	if len(b) < 8 {
		return math.NaN()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// Handle is the per-message path: check the datagram, decode it, update
// contracts and output ports, step the model, and build the reply. It
// returns the reply datagram (valid until the next call), or false when the
// datagram is dropped. It allocates nothing.
func (c *Coupling) Handle(datagram []byte, from netip.AddrPort, arrival time.Time) ([]byte, bool) {
	if from.Addr().Unmap() != c.remote.Addr().Unmap() {
		c.src.foreign(c, from, len(datagram))
		return nil, false
	}
	other := c.src.latched.IsValid() && from != c.src.latched
	if !c.decode(datagram) {
		if other {
			c.src.foreign(c, from, len(datagram))
		} else {
			c.stats.WrongSize.Add(1)
		}
		return nil, false
	}
	id := c.msg[0]
	if !(id >= 0 && id <= 1<<53 && id == math.Trunc(id)) {
		if other {
			c.src.foreign(c, from, len(datagram))
		} else {
			c.stats.Malformed.Add(1)
		}
		return nil, false
	}
	if other && !c.src.accept(c, from, id, arrival) {
		return nil, false
	}
	switch {
	case c.fresh:
		// The first message since connecting: BeamNG may have been cycling
		// through 2 s timeouts with nobody answering; count from here.
		c.src.latch(from)
		c.rebase(id)
		c.fresh = false
		c.stats.Connects.Add(1)
	case arrival.Sub(c.lastArrival) >= RebaseGap:
		c.stats.StallsRecovered.Add(1)
		if arrival.Sub(c.lastArrival) < stallGap && c.silent {
			c.stats.stallSilences.Add(1) // the silence was BeamNG's own 2 s timeout
		}
		c.log.Warn("BeamNG waited 2 s for a reply and reset its window: re-basing reply ids",
			"gap", arrival.Sub(c.lastArrival).Round(time.Millisecond), "id", id)
		c.rebase(id)
	case id == 0 && c.lastID > 0:
		c.stats.Restarts.Add(1)
		c.log.Warn("BeamNG's controller restarted (ids from 0 again)", "from", from)
		c.rebase(id)
	case id <= c.lastID:
		c.stats.Duplicates.Add(1)
		return nil, false
	case !c.src.plausible(c, id, arrival):
		return nil, false
	}
	if c.link != Connected {
		c.setLink(Connected)
	}
	c.silent = false
	c.interArrival = arrival.Sub(c.lastArrival)
	c.lastID, c.lastArrival = id, arrival
	if c.stats.Messages.Add(1) == 1 {
		c.firstID, c.firstAt = id, arrival
	}
	t := c.sync.Message(id, arrival)
	c.stats.LocalTime.Store(math.Float64bits(t))
	c.stats.LastArrival.Store(arrival.UnixNano())

	// Incoming contracts: fill the output ports that are due. With several
	// vehicles the port vectors and the model are shared: one vehicle's
	// message at a time fills its fields, steps the model and reads its
	// controls.
	c.lockShared()
	defer c.unlockShared()
	if c.sh != nil {
		c.sh.capture(c.vehicle, c.msg)
	}
	remote := id * c.plan.Period
	for ci := range c.plan.Contracts {
		ct := &c.plan.Contracts[ci]
		if ct.Dir != beamng.FromBeamNG {
			continue
		}
		if !ct.CommData && ct.Schedule.Due(uint64(id)) {
			c.in[ci].Update(id, remote, t)
		}
		if !ct.CommData && !ct.Schedule.Due(uint64(id)) {
			continue
		}
		for _, pn := range ct.Ports {
			c.fill(&c.plan.Outputs[pn], c.outs[pn], &c.in[ci])
		}
	}
	c.checkOverdue(t)
	c.outs[0][0] = float64(c.portStatus())

	replyID := c.replyID(id)
	c.fault.pending(replyID)
	faulted := c.step(t)
	c.fault.pending(math.NaN())

	c.neutralReply = faulted
	if faulted {
		// The model is dead, hung or answering badly: BeamNG gets neutral
		// controls, never the last ones the model wrote.
		copy(c.reply, c.neutral)
	} else {
		c.fillReply(id)
	}
	c.keepLast()
	c.reply[0] = replyID
	c.lastReplyID = replyID
	c.maxReplyID = max(c.maxReplyID, replyID)
	b, _ := beamng.Encode(c.tx, c.reply) // tx is sized for the reply
	return b, true
}

// keepLast makes a Gen 2 reply safe: BeamNG's Gen 2 controller has no NaN
// filter (one NaN poisons every control for good, spec §3.5), so "keep"
// (NaN) is resolved to the last value sent, and the watchdog's neutral
// reply is refreshed to match. Gen 1 replies are left alone: BeamNG skips
// their NaNs.
func (c *Coupling) keepLast() {
	if !c.gen2 {
		return
	}
	for i := 1; i < len(c.reply); i++ {
		if v := c.reply[i]; v-v != 0 { // NaN or ±Inf
			c.reply[i] = c.lastSent[i]
		}
	}
	copy(c.lastSent, c.reply)
	c.hungMu.Lock()
	for i := 1; i < len(c.hungReply); i++ {
		if v := c.neutral[i]; v-v == 0 {
			c.hungReply[i] = v
		} else {
			c.hungReply[i] = c.reply[i]
		}
	}
	c.hungMu.Unlock()
}

// fillReply writes the outgoing contracts that are due into the reply:
// their fields' port values, and NaN elsewhere, which BeamNG reads as
// "keep the previous value".
func (c *Coupling) fillReply(id float64) {
	copy(c.reply, c.plan.Vehicles[c.vehicle].Template)
	for ci := range c.plan.Contracts {
		ct := &c.plan.Contracts[ci]
		if ct.Dir != beamng.ToBeamNG {
			continue
		}
		due := ct.Schedule.Due(uint64(id - c.base))
		for _, pn := range ct.Ports {
			port := &c.plan.Inputs[pn]
			for fi := range port.Fields {
				f := &port.Fields[fi]
				if f.Vehicle != c.vehicle {
					continue // another vehicle's control
				}
				for k := range f.Width {
					if due {
						v := c.ins[pn][f.Offset+k]
						if c.gen2 && v-v != 0 {
							// A model's NaN or Inf must not reach a Gen 2
							// BeamNG: keepLast sends the last value instead.
							c.stats.NonFinite.Add(1)
							c.src.nonFinite(c, f.Name)
						}
						c.reply[f.Slot+k] = v
					} else {
						c.reply[f.Slot+k] = math.NaN()
					}
				}
			}
		}
	}
}

// fill writes one output port from the message and the contract's meta
// values.
func (c *Coupling) fill(port *ports.Port, v []float64, ct *contracts.Incoming) {
	for fi := range port.Fields {
		f := &port.Fields[fi]
		if f.Vehicle != c.vehicle {
			continue // another vehicle's data: its own link fills it
		}
		switch f.Source {
		case ports.Slot:
			for k := range f.Width {
				x := c.msg[f.Slot+k]
				if math.IsNaN(x) || math.IsInf(x, 0) {
					x = f.Invalid
				}
				v[f.Offset+k] = x
			}
		case ports.Relative:
			v[f.Offset] = c.sh.relative(f)
		case ports.Meta:
			switch f.Meta {
			case contracts.Time:
				v[f.Offset] = ct.RemoteTime
			case contracts.ReceiveTimeOffset:
				v[f.Offset] = ct.ReceiveTimeOffset()
			case contracts.SerialNumber:
				v[f.Offset] = ct.Serial
			case contracts.PingResults:
				c.pingResults(v[f.Offset : f.Offset+f.Width])
			}
		}
	}
}

// PingResultsLayout documents the ping_results commData port.
const PingResultsLayout = `ping_results (a commData meta field; arraySize up to 8, in this order):
  [0] turnaround of the previous message: read to reply written, s
  [1] time between the last two BeamNG messages, s
  [2] BeamNG messages handled
  [3] replies sent
  [4] datagrams dropped (foreign host or port, wrong size, malformed, duplicate, id jump)
  [5] BeamNG 2 s stalls recovered (reply ids re-based)
  [6] turnaround median so far, s
  [7] turnaround 99th percentile so far, s
Elements past 8 stay NaN.`

func (c *Coupling) pingResults(v []float64) {
	s := &c.stats
	vals := [8]float64{
		s.Turnaround.Last().Seconds(),
		c.interArrival.Seconds(),
		float64(s.Messages.Load()),
		float64(s.Replies.Load()),
		float64(s.Dropped()),
		float64(s.StallsRecovered.Load()),
		s.Turnaround.Quantile(0.5).Seconds(),
		s.Turnaround.Quantile(0.99).Seconds(),
	}
	for i := range v {
		if i < len(vals) {
			v[i] = vals[i]
		} else {
			v[i] = math.NaN()
		}
	}
}

// Dropped counts every datagram dropped as not BeamNG's or not usable.
func (s *Stats) Dropped() int64 {
	return s.Foreign.Load() + s.WrongSize.Load() + s.Malformed.Load() + s.Duplicates.Load() + s.IDJumps.Load()
}

// checkOverdue rolls the incoming contracts' blocked states up.
func (c *Coupling) checkOverdue(t float64) {
	var n int64
	for ci := range c.plan.Contracts {
		ct := &c.plan.Contracts[ci]
		if ct.Dir == beamng.FromBeamNG && !ct.CommData && c.in[ci].Check(t) {
			n++
		}
	}
	c.stats.Overdue.Store(n)
}

// Blocked is VS Connect's roll-up: the node (and its one link) is blocked
// when any incoming contract is.
func (c *Coupling) Blocked() bool { return c.stats.Overdue.Load() > 0 }

// rebase restarts the reply ids at BeamNG message id, so they track the
// window counter BeamNG just restarted, and restarts the master schedule
// there, so the stall is not followed by a burst.
func (c *Coupling) rebase(id float64) {
	c.base, c.counter = id, 0
	c.sync.Anchor(id, time.Now())
	c.lock.rebased(c, time.Now())
}

// SimTime is the remote simulation time the run covered: from BeamNG's
// first message to its latest.
func (c *Coupling) SimTime() float64 {
	if c.stats.Messages.Load() == 0 {
		return 0
	}
	return c.sync.Remote(c.lastID) - c.sync.Remote(c.firstID)
}

// replyID is the id of the reply to message id, by policy: "next" is the
// messages answered since the base, counting from 1 (id + 1 from a fresh
// start); "counter" counts replies from 1; "echo" is the received id, as
// the S-function sends it. Echo is for compatibility and never re-based:
// an echoed id one below BeamNG's restarted window counter would be
// rejected, stalling BeamNG again every 2 s. While the lockstep watchdog
// repairs BeamNG's window, it adjusts next and counter ids (lockstep.go).
func (c *Coupling) replyID(id float64) float64 {
	var r float64
	switch c.plan.ReplyID {
	case config.ReplyEcho:
		return id
	case config.ReplyCounter:
		c.counter++
		r = c.counter
	default:
		r = id - c.base + 1
	}
	return c.lock.adjust(r, c.lastReplyID)
}

// Package emulator is BeamNG.tech's side of the Gen 1 tight coupling: the
// vehicleSystemsCoupling controller's per-physics-step algorithm, quirks
// included (spec §4), a vehicle to close loops on, BeamNG's debug logs, and
// faults to inject. It lets a controller, a Simulink model or beamconnect
// itself be tested without BeamNG.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
)

// BlockingTimeout is how long BeamNG's controller blocks in receive() when
// its window is full (blockingTimeoutLength = 2.0 s).
const BlockingTimeout = 2 * time.Second

// maxSteps bounds simulinkTime and pingTime in physics steps (a day of
// steps): past it BeamNG's step arithmetic would overflow.
const maxSteps = 2e8

// maxStepsPerFrame is one frame at BeamNG's 20 FPS floor: a frame never
// catches up more than that; beyond it BeamNG runs in slow motion.
const maxStepsPerFrame = 100

// Config sets up an emulated coupling, as BeamNG's startCoupling(config) and
// the simulation around it would.
type Config struct {
	SimulinkTime float64 // s; BeamNG's default 0.005
	PingTime     float64 // s; BeamNG's default 1e-5
	PhysicsDt    float64 // s; 0.0005

	// Steps stops the run after this many physics steps; 0 runs until the
	// context ends.
	Steps int64
	// FreeRunning steps as fast as the coupling allows, ignoring the wall
	// clock. Otherwise steps are paced like BeamNG's: at each graphics frame
	// a batch of steps brings simulated time up to the next frame's wall
	// time (ahead of the clock), then the physics thread idles.
	FreeRunning bool
	FPS         float64 // graphics frames per second when paced; default 60
	// RealTimeFactor scales simulated time against wall time when paced:
	// 2 runs twice as fast as real time. Default 1.
	RealTimeFactor float64
	// StepCost is wall time spent on each physics step, emulating BeamNG's
	// own physics work. Tests on a fake clock use it to place steps in time;
	// on a real clock it is a sleep, so only whole milliseconds mean much.
	StepCost time.Duration

	// StartStep is the physics step at which the controller loads: until
	// then the vehicle drives on but sends nothing. Vehicles loaded in
	// different frames send on different steps of the period (spec §4a).
	StartStep int64

	// CSV, when set, makes this a Gen 2 (cosimulationCoupling) coupling laid
	// out by that CSV: its computation and ping times replace SimulinkTime
	// and PingTime, decoded as BeamNG's controller decodes them (§3.5).
	CSV *cosim.File

	Vehicle VehicleParams
	Faults  Faults
	// DebugLogs, when set, is the directory where BeamNG's three debug CSVs
	// are written (debugFile=true).
	DebugLogs string
	// Trace, when set, is called after every physics step with a record the
	// emulator reuses: copy what you keep.
	Trace func(*StepRecord)
}

func (c *Config) defaults() error {
	if c.SimulinkTime == 0 {
		c.SimulinkTime = 0.005
	}
	if c.PingTime == 0 {
		c.PingTime = 1e-5
	}
	if c.PhysicsDt == 0 {
		c.PhysicsDt = beamng.PhysicsDt
	}
	if c.FPS == 0 {
		c.FPS = 60
	}
	if c.RealTimeFactor == 0 {
		c.RealTimeFactor = 1
	}
	if c.Vehicle.Mass == 0 {
		c.Vehicle = DefaultVehicle()
	}
	switch {
	case c.SimulinkTime < 0 || c.PingTime < 0 || c.PhysicsDt <= 0:
		return errors.New("emulator: simulinkTime, pingTime and physicsDt must be positive")
	case c.FPS < 0 || c.RealTimeFactor < 0:
		return errors.New("emulator: FPS and real-time factor must be positive")
	case c.StepCost < 0 || c.Steps < 0:
		return errors.New("emulator: step cost and step count cannot be negative")
	case c.SimulinkTime/c.PhysicsDt > maxSteps || c.PingTime/c.SimulinkTime > maxSteps:
		// BeamNG's ceil would not fit an integer; no coupling runs so slowly.
		return fmt.Errorf("emulator: simulinkTime %v s and pingTime %v s must stay within %.0g physics steps", c.SimulinkTime, c.PingTime, float64(maxSteps))
	case c.FPS > 10000 || c.RealTimeFactor > 10000:
		return errors.New("emulator: FPS and real-time factor must be at most 10000")
	}
	return nil
}

// StepRecord is what one physics step did, for traces and tests.
type StepRecord struct {
	Step      int64     // 0-based physics step
	Start     time.Time // wall clock at the step's start
	SendStep  bool      // stepsSinceLastSend ≥ sendSkips
	Blocking  bool      // the window was full: a blocking receive (branch 1b)
	Waited    time.Duration
	TimedOut  bool    // the blocking receive timed out after 2 s
	Got       bool    // a datagram was consumed this step
	GotID     float64 // its id
	Accepted  bool    // its id exceeded maxRecvId: its values were applied
	Sent      bool
	SentID    float64
	SendCtr   float64 // after the step
	MaxRecvID float64 // after the step
}

// Summary is a run's tally.
type Summary struct {
	Steps          int64   `json:"steps"`
	Sent           int64   `json:"sent"`
	Received       int64   `json:"received"` // datagrams consumed (at most one per step)
	Accepted       int64   `json:"accepted"` // replies whose values were applied
	Rejected       int64   `json:"rejected"` // id not above the highest applied: dropped silently
	Malformed      int64   `json:"malformed"`
	BlockingWaits  int64   `json:"blocking_waits"` // blocking receives (window full)
	Stalls         int64   `json:"stalls"`         // blocking receives that timed out after 2 s
	SendErrors     int64   `json:"send_errors"`
	Pauses         int64   `json:"pauses"`
	Stops          int64   `json:"stops,omitempty"`
	Restarts       int64   `json:"restarts"`
	LongestStep    float64 `json:"longest_step_s"`
	SimS           float64 `json:"sim_s"`
	WallS          float64 `json:"wall_s"`
	RealtimeFactor float64 `json:"realtime_factor"`
	// The controller's window at the end (spec §4): the next id it will
	// send, the sends since its last 2 s timeout, and the highest reply id
	// it applied. A client that keeps replying with ids far above sendCtr
	// after a timeout leaves BeamNG free-running with a standing backlog.
	NextID     float64 `json:"next_id"`
	SendCtr    float64 `json:"send_ctr"`
	MaxRecvID  float64 `json:"max_recv_id"`
	SendSkips  int     `json:"send_skips"`
	Unanswered int     `json:"unanswered"`
	// Gen 2 only: replies shorter than the CSV says, each of which raised a
	// Lua error in BeamNG's controller (nothing applied, the step cut
	// short); and applied control values that were NaN (one NaN poisons
	// every control without a freeze row for good, §3.5).
	LuaErrors  int64 `json:"lua_errors,omitempty"`
	NaNApplied int64 `json:"nan_applied,omitempty"`
	// Injected counts the faults inflicted (with --fault).
	Injected *Injected `json:"injected,omitempty"`
}

// controller is vehicleSystemsCoupling.lua's coupling state (spec §4).
type controller struct {
	id                 float64 // next outgoing id; never reset while loaded
	sendCtr            float64
	maxRecvID          float64
	stepsSinceLastSend int
	sendSkips          int
	unanswered         int
}

// Emulator is one emulated vehicle coupling.
type Emulator struct {
	cfg   Config
	link  Transport
	ctl   controller
	veh   *Vehicle
	out   []float64 // state message
	in    []float64 // decoded reply
	txBuf []byte
	rxBuf []byte
	rec   StepRecord
	sum   Summary
	stop  <-chan struct{} // the run's context: ends a blocking receive early
	logs  *debugLogs
	start time.Time
	side  side // what the controller's generation decides: layout, message, reply

	pauseDone, restartDone bool
	stopped, stopDone      bool        // the controller is unloaded (stop fault)
	attached               []*Emulator // other vehicles stepped in this one's physics loop
	luaError               bool        // Gen 2: the current step's update() raised a Lua error
}

// New prepares an emulator that talks through link.
func New(cfg Config, link Transport) (*Emulator, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := cfg.Faults.check(); err != nil {
		return nil, err
	}
	e := &Emulator{
		cfg:   cfg,
		link:  link,
		veh:   NewVehicle(cfg.Vehicle),
		rxBuf: make([]byte, beamng.MaxDatagram),
		side:  newSide(&cfg),
	}
	if cfg.Faults.active() {
		e.link = newFaulty(link, cfg.Faults)
	}
	e.out = make([]float64, e.side.sendLen())
	e.in = make([]float64, e.side.layout().Len(beamng.ToBeamNG))
	e.txBuf = make([]byte, 8*len(e.out))
	e.ctl.sendSkips, e.ctl.unanswered = e.side.timing(&cfg)
	e.side.reset(e.veh)
	e.sum.SendSkips, e.sum.Unanswered = e.ctl.sendSkips, e.ctl.unanswered
	return e, nil
}

// Vehicle is the emulated vehicle. Read it only between runs or from Trace.
func (e *Emulator) Vehicle() *Vehicle { return e.veh }

// Run steps the coupling until the context ends or Config.Steps are done,
// and returns the tally. The debug logs, if asked for, are written as it
// goes and closed at the end, as BeamNG writes them when the coupling stops.
func (e *Emulator) Run(ctx context.Context) (Summary, error) {
	all := append([]*Emulator{e}, e.attached...)
	for _, x := range all {
		// Every vehicle's controller writes its own logs.
		if x.cfg.DebugLogs == "" {
			continue
		}
		l, err := openDebugLogs(x.cfg.DebugLogs, x.side.layout())
		if err != nil {
			closeDebugLogs(all)
			return e.sum, err
		}
		x.logs = l
	}
	e.start = time.Now()
	e.stop = ctx.Done()
	for _, o := range e.attached {
		o.start, o.stop = e.start, e.stop
	}
	var runErr error
	if e.cfg.FreeRunning {
		for !e.finished(ctx) {
			e.step()
		}
	} else {
		runErr = e.paced(ctx)
	}
	for _, x := range all {
		x.finish()
	}
	return e.sum, errors.Join(runErr, closeDebugLogs(all))
}

// closeDebugLogs closes the vehicles' debug logs that are open.
func closeDebugLogs(all []*Emulator) error {
	var errs []error
	for _, x := range all {
		if x.logs != nil {
			errs = append(errs, x.logs.close())
			x.logs = nil
		}
	}
	return errors.Join(errs...)
}

// finish completes the summary at the end of a run.
func (e *Emulator) finish() {
	e.sum.WallS = time.Since(e.start).Seconds()
	e.sum.SimS = float64(e.sum.Steps) * e.cfg.PhysicsDt
	if e.sum.WallS > 0 {
		e.sum.RealtimeFactor = e.sum.SimS / e.sum.WallS
	}
	e.sum.NextID, e.sum.SendCtr, e.sum.MaxRecvID = e.ctl.id, e.ctl.sendCtr, e.ctl.maxRecvID
	if f, ok := e.link.(*faulty); ok {
		f.flush() // messages still held back by a delay fault go out now
		n := f.n
		e.sum.Injected = &n
	}
}

// Attach makes other vehicles step in this emulator's physics loop, after
// it, one physics step at a time, as BeamNG steps every vehicle of a scene
// together: a blocking receive in one holds them all. Run the first one
// only; each attached emulator's Summary is filled when Run returns. The
// first one's pacing, Steps and FreeRunning apply to all.
func (e *Emulator) Attach(others ...*Emulator) { e.attached = append(e.attached, others...) }

// Summary is the tally of an attached emulator after the run.
func (e *Emulator) Summary() Summary { return e.sum }

func (e *Emulator) finished(ctx context.Context) bool {
	if e.cfg.Steps > 0 && e.sum.Steps >= e.cfg.Steps {
		return true
	}
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// paced runs steps in per-frame batches, ahead of the wall clock, the way
// BeamNG does: Go timers cannot pace single 0.5 ms steps (go-notes §3), but
// a frame is 16 ms.
func (e *Emulator) paced(ctx context.Context) error {
	frame := time.Duration(float64(time.Second) / e.cfg.FPS)
	stepWall := e.cfg.PhysicsDt / e.cfg.RealTimeFactor // wall seconds per step
	origin := e.start                                  // wall time of simulated time 0
	idle := time.NewTimer(time.Hour)                   // one timer for every frame: no allocation per frame
	defer idle.Stop()
	for !e.finished(ctx) {
		frameStart := time.Now()
		// Simulate up to where the wall clock will be at the next frame.
		target := int64(frameStart.Add(frame).Sub(origin).Seconds() / stepWall)
		n := target - e.sum.Steps
		if n > maxStepsPerFrame {
			// Too far behind (blocking receives, a slow client): BeamNG does
			// not catch up, it goes into slow motion. Forget the backlog.
			n = maxStepsPerFrame
			origin = frameStart.Add(frame).Add(-time.Duration(float64(e.sum.Steps+n) * stepWall * float64(time.Second)))
		}
		for i := int64(0); i < n && !e.finished(ctx); i++ {
			e.step()
		}
		if d := time.Until(frameStart.Add(frame)); d > 0 {
			idle.Reset(d)
			select {
			case <-ctx.Done():
			case <-idle.C:
			}
		}
	}
	return nil
}

// step is one physics step: the vehicle first, then the coupling, as in
// BeamNG's onPhysicsStep, where controller.update runs last (spec §3.4).
func (e *Emulator) step() {
	r := &e.rec
	*r = StepRecord{Step: e.sum.Steps, Start: time.Now()}
	e.faultsAt()
	if e.cfg.StepCost > 0 {
		time.Sleep(e.cfg.StepCost)
	}
	e.veh.Step(e.cfg.PhysicsDt)
	if e.logs != nil {
		e.logs.physicsStep(e.since(r.Start))
	}
	if e.sum.Steps >= e.cfg.StartStep && !e.stopped {
		e.couple()
	}
	r.SendCtr, r.MaxRecvID = e.ctl.sendCtr, e.ctl.maxRecvID
	e.sum.Steps++
	// Every vehicle in the same step, one after another: a blocking receive
	// in any of them holds all (spec §4a).
	for _, o := range e.attached {
		o.step()
	}
	if d := time.Since(r.Start).Seconds(); d > e.sum.LongestStep {
		e.sum.LongestStep = d
	}
	if e.cfg.Trace != nil {
		e.cfg.Trace(r)
	}
}

// couple is the controller's update(dt), line for line (spec §4).
func (e *Emulator) couple() {
	c, r := &e.ctl, &e.rec
	e.luaError = false
	if c.stepsSinceLastSend < c.sendSkips {
		// 2. A skip step: one non-blocking receive.
		if n, ok := e.link.Recv(e.rxBuf, 0, nil); ok {
			e.handle(n)
		}
		if e.luaError {
			return // the error ended update() before stepsSinceLastSend + 1
		}
		c.stepsSinceLastSend++
		return
	}
	r.SendStep = true
	if c.sendCtr-c.maxRecvID < float64(c.unanswered) {
		// 1a. Room in the window: try one non-blocking receive, then send.
		if n, ok := e.link.Recv(e.rxBuf, 0, nil); ok {
			e.handle(n)
		}
		if e.luaError {
			return
		}
		e.send()
		return
	}
	// 1b. The window is full: one blocking receive, up to 2 s.
	r.Blocking = true
	e.sum.BlockingWaits++
	t0 := time.Now()
	n, ok := e.link.Recv(e.rxBuf, BlockingTimeout, e.stop)
	r.Waited = time.Since(t0)
	if !ok {
		select {
		case <-e.stop:
			return // the run was stopped during the wait: not a BeamNG timeout
		default:
		}
		// Timed out: the window counters reset, the id and the step counter
		// do not, so the next step is a send step again (branch 1a).
		r.TimedOut = true
		e.sum.Stalls++
		c.sendCtr, c.maxRecvID = 0, 0
		return
	}
	if e.handle(n) || c.maxRecvID == 0 && !e.luaError {
		e.send()
	}
}

// handle decodes and applies one reply, returning whether it was accepted.
func (e *Emulator) handle(n int) bool {
	r := &e.rec
	e.sum.Received++
	r.Got = true
	// LuaSocket hands over the bytes; the decoder ignores a ragged tail and
	// Lua reads missing elements as nil, which the NaN test passes over.
	count := min(n/8, len(e.in))
	if e.logs != nil {
		// Stamped when the datagram arrived, as BeamNG stamps its log: in a
		// blocking receive that is well after the step started.
		e.logs.received(e.since(time.Now()), e.rxBuf[:8*(n/8)])
	}
	if count == 0 {
		e.sum.Malformed++
		r.GotID = math.NaN()
		return false
	}
	msg := e.in[:count]
	_ = beamng.Decode(msg, e.rxBuf[:8*count]) // the length matches by construction
	r.GotID = msg[0]
	// "redundant or a ghost message": an id not above the highest applied
	// one is dropped. NaN compares false and is dropped too.
	if !(msg[0] > e.ctl.maxRecvID) {
		e.sum.Rejected++
		return false
	}
	e.ctl.maxRecvID = msg[0]
	nans, luaError := e.side.apply(e.veh, msg)
	if luaError {
		// The controller raised a Lua error: maxRecvId is already updated,
		// nothing is applied, the step ends here.
		e.sum.LuaErrors++
		e.luaError = true
		return false
	}
	e.sum.Accepted++
	e.sum.NaNApplied += int64(nans)
	r.Accepted = true
	return true
}

func clamp(x, lo, hi float64) float64 { return math.Min(hi, math.Max(lo, x)) }

// send builds the state message, sends it and advances the window.
func (e *Emulator) send() {
	c, r := &e.ctl, &e.rec
	e.out[0] = c.id
	e.side.fill(e.veh, e.out)
	b, _ := beamng.Encode(e.txBuf, e.out) // txBuf is sized for the message
	if err := e.link.Send(b); err != nil {
		e.sum.SendErrors++
	}
	if e.logs != nil {
		e.logs.sent(e.since(time.Now()), e.out)
	}
	r.Sent, r.SentID = true, c.id
	c.id++
	c.sendCtr++
	c.stepsSinceLastSend = 0
	e.sum.Sent++
}

// since is a debug-log timestamp: wall seconds since the run started, as
// BeamNG stamps its logs with os.clockhp().
func (e *Emulator) since(t time.Time) float64 { return t.Sub(e.start).Seconds() }

// faultsAt fires the scheduled faults of the physics thread itself.
func (e *Emulator) faultsAt() {
	f := &e.cfg.Faults
	sim := float64(e.sum.Steps) * e.cfg.PhysicsDt
	if f.PauseFor > 0 && !e.pauseDone && sim >= f.PauseAt.Seconds() {
		e.pauseDone = true
		e.sum.Pauses++
		time.Sleep(f.PauseFor)
	}
	if f.StopFor > 0 && !e.stopDone {
		switch {
		case !e.stopped && sim >= f.StopAt.Seconds():
			// Unloaded: nothing is sent or read; what the client sends
			// meanwhile is lost with the old sockets at the reload.
			e.stopped = true
			e.sum.Stops++
		case e.stopped && sim >= (f.StopAt+f.StopFor).Seconds():
			e.stopped, e.stopDone = false, true
			if err := e.Restart(); err != nil {
				e.sum.SendErrors++
			}
		}
	}
	if f.Restart && !e.restartDone && sim >= f.RestartAt.Seconds() {
		e.restartDone = true
		e.sum.Restarts++
		if err := e.Restart(); err != nil {
			e.sum.SendErrors++ // the controller cannot talk any more: every send fails
		}
	}
}

// Restart reloads the controller, as a vehicle reset does through the
// extension API: fresh module state, so ids start at 0 again, the window is
// empty and the inputs are back to pedals at rest; and new sockets (spec
// §2.1: stopCoupling closes both, the reloaded controller binds again), so
// replies queued for the old controller are lost and messages come from a
// new port. The vehicle keeps moving.
func (e *Emulator) Restart() error {
	skips, window := e.ctl.sendSkips, e.ctl.unanswered
	e.ctl = controller{sendSkips: skips, unanswered: window}
	v := e.veh
	v.Throttle, v.Brake, v.Steering, v.TorqueMode = 0, 0, 0, false
	v.Propulsion, v.DesiredBraking = [4]float64{}, [4]float64{}
	e.side.reset(v)
	if r, ok := e.link.(Reopener); ok {
		return r.Reopen()
	}
	return nil
}

func (s Summary) String() string {
	return fmt.Sprintf("%d steps (%.3f s simulated in %.3f s, %.2f× real time), sent %d, received %d, accepted %d, rejected %d, malformed %d, blocking waits %d, stalls %d, longest step %.4f s",
		s.Steps, s.SimS, s.WallS, s.RealtimeFactor, s.Sent, s.Received, s.Accepted, s.Rejected, s.Malformed, s.BlockingWaits, s.Stalls, s.LongestStep)
}

package coupling

import (
	"context"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

type harness struct {
	plan     *ports.Plan
	model    models.Model
	c        *Coupling
	em       *emulator.Emulator
	link     *emulator.UDP
	emSum    emulator.Summary
	statuses []Status
	mu       sync.Mutex
	samples  []emulator.Vehicle // the emulated car every simulated second
}

// newHarness couples a config (and a model) to an in-process emulator over
// real loopback sockets, both on free ports.
func newHarness(t *testing.T, file string, model func(*ports.Plan) models.Model, emCfg emulator.Config) *harness {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessPlan(t, cfg, model, emCfg)
}

func newHarnessPlan(t *testing.T, cfg *config.Config, model func(*ports.Plan) models.Model, emCfg emulator.Config) *harness {
	t.Helper()
	return newHarnessAll(t, cfg, model, emCfg, nil)
}

// newHarnessPlanWrap lets a test stand between BeamNG's side and its socket.
func newHarnessPlanWrap(t testing.TB, cfg *config.Config, emCfg emulator.Config, wrap func(emulator.Transport) emulator.Transport) *harness {
	t.Helper()
	return newHarnessAll(t, cfg, nil, emCfg, wrap)
}

func newHarnessAll(t testing.TB, cfg *config.Config, model func(*ports.Plan) models.Model, emCfg emulator.Config, wrap func(emulator.Transport) emulator.Transport) *harness {
	t.Helper()
	plan, err := ports.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{plan: plan}
	var m models.Model
	if model != nil {
		m = model(plan)
	} else if m, err = models.New(plan.Model, plan.ModelParams, plan, nil); err != nil {
		t.Fatal(err)
	}
	h.model = m
	h.c, err = New(Options{Plan: plan, Model: m, Local: loopback, BusyPoll: testBusyPoll, OnStatus: func(_ int, s Status) {
		h.mu.Lock()
		h.statuses = append(h.statuses, s)
		h.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Bind(); err != nil {
		t.Fatal(err)
	}
	h.link, err = emulator.ListenUDP(loopback, h.c.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.link.Close() })
	h.c.SetRemote(h.link.LocalAddr())
	emCfg.SimulinkTime = plan.Period
	emCfg.PingTime = plan.PingTime
	if emCfg.CSV == nil {
		emCfg.CSV = plan.Vehicles[0].CSV // a Gen 2 config: BeamNG's side from the same CSV
	}
	// Free-running unless the test asks for BeamNG's pacing by giving an FPS.
	emCfg.FreeRunning = emCfg.FPS == 0
	trace := emCfg.Trace
	emCfg.Trace = func(r *emulator.StepRecord) {
		if r.Step%2000 == 0 {
			h.samples = append(h.samples, *h.em.Vehicle())
		}
		if trace != nil {
			trace(r)
		}
	}
	var link emulator.Transport = h.link
	if wrap != nil {
		link = wrap(link)
	}
	h.em, err = emulator.New(emCfg, link)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs both sides until the emulator has done its steps.
func (h *harness) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		h.c.Run(ctx)
		close(done)
	}()
	h.emSum, _ = h.em.Run(ctx)
	cancel()
	<-done
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatal("timed out")
	}
}

func TestCruisePedals(t *testing.T) {
	h := newHarness(t, "../examples/cruise-pedals.json", nil, emulator.Config{Steps: 60000})
	h.run(t)
	set := h.plan.ModelParams["setSpeed"].(float64)
	checkHeld(t, h, set, func(v emulator.Vehicle) float64 { return v.V }, 0.05*set, "speed")
	if h.emSum.Stalls != 0 || h.emSum.Accepted < h.emSum.Sent-1 {
		t.Errorf("emulator: %v", h.emSum)
	}
}

func TestCruiseTorque(t *testing.T) {
	h := newHarness(t, "../examples/cruise-torque.json", nil, emulator.Config{Steps: 60000})
	h.run(t)
	set := h.plan.ModelParams["setSpeed"].(float64)
	checkHeld(t, h, set, func(v emulator.Vehicle) float64 { return v.V }, 0.05*set, "speed")
	if v := h.em.Vehicle(); !v.TorqueMode {
		t.Error("the torque rig left BeamNG in pedal mode")
	}
}

func TestHeadingHold(t *testing.T) {
	h := newHarness(t, "../examples/heading-hold.json", nil, emulator.Config{Steps: 60000})
	h.run(t)
	want := h.plan.ModelParams["headingDeg"].(float64) * math.Pi / 180
	checkHeld(t, h, want, func(v emulator.Vehicle) float64 { return v.Yaw }, 2*math.Pi/180, "heading")
}

// checkHeld: over the last third of the run the value stays within tol.
func checkHeld(t *testing.T, h *harness, want float64, get func(emulator.Vehicle) float64, tol float64, what string) {
	t.Helper()
	if len(h.samples) < 10 {
		t.Fatalf("only %d samples", len(h.samples))
	}
	for i, s := range h.samples[len(h.samples)*2/3:] {
		if got := get(s); math.Abs(got-want) > tol {
			t.Errorf("%s %.3f at sample %d of the last third, want %.3f ± %.3f", what, got, i, want, tol)
		}
	}
}

// The default reply policy never stalls BeamNG at start-up; the
// S-function's echo policy costs one 2 s stall.
func TestReplyPolicyStartup(t *testing.T) {
	for _, tt := range []struct {
		policy config.ReplyID
		stalls int64
	}{{config.ReplyNext, 0}, {config.ReplyCounter, 0}, {config.ReplyEcho, 1}} {
		cfg, err := config.Load("../examples/cruise-pedals.json")
		if err != nil {
			t.Fatal(err)
		}
		cfg.ReplyID = tt.policy
		// Echo's stall needs its first reply to land in a skip step, as it
		// does with BeamNG's physics work between steps: a millisecond per
		// step here. A free-running in-process emulator may instead find it
		// only in its blocking receive, which sends on (spec §4, the table's
		// third column), and the stall would depend on thread scheduling.
		h := newHarnessPlan(t, cfg, nil, emulator.Config{Steps: 300, StepCost: time.Millisecond})
		h.run(t)
		if got := h.emSum.Stalls; got != tt.stalls {
			t.Errorf("%s: %d stalls, want %d: %v", tt.policy, got, tt.stalls, h.emSum)
		}
	}
}

// pauser wraps a model and sleeps once, as a client stopped in a debugger.
type pauser struct {
	models.Model
	at    int
	pause time.Duration
	n     int
}

func (p *pauser) Step(t float64, out, in [][]float64) {
	if out[0][0] == float64(Connected) {
		p.n++
		if p.n == p.at {
			time.Sleep(p.pause)
		}
	}
	p.Model.Step(t, out, in)
}

// After a 2.5 s pause of the client, BeamNG times out once; beamconnect
// re-bases its reply ids and BeamNG is back in lockstep within 20 messages,
// with no standing backlog.
func TestPauseRecovery(t *testing.T) {
	var sends []emulator.StepRecord
	h := newHarness(t, "../examples/cruise-pedals.json", func(p *ports.Plan) models.Model {
		m, _ := models.New("cruise-pedals", p.ModelParams, p, nil)
		return &pauser{Model: m, at: 50, pause: 2500 * time.Millisecond}
	}, emulator.Config{Steps: 6000, Trace: func(r *emulator.StepRecord) {
		if r.Sent || r.TimedOut {
			sends = append(sends, *r)
		}
	}})
	h.run(t)
	if h.emSum.Stalls != 1 || h.c.Stats().StallsRecovered.Load() != 1 {
		t.Fatalf("emulator stalls %d, recovered %d: %v", h.emSum.Stalls, h.c.Stats().StallsRecovered.Load(), h.emSum)
	}
	// From the stall on: the first send after which BeamNG never again has
	// more than one message in flight.
	stall := -1
	for i, s := range sends {
		if s.TimedOut {
			stall = i
		}
	}
	settled := -1
	for i := len(sends) - 1; i > stall; i-- {
		if sends[i].SendCtr-sends[i].MaxRecvID > 1 {
			settled = i
			break
		}
	}
	if settled < 0 {
		settled = stall
	}
	if n := settled - stall; n > 20 {
		t.Errorf("lockstep came back %d messages after the stall, want within 20", n)
	}
	if d := h.emSum.SendCtr - h.emSum.MaxRecvID; d < 0 || d > 1 {
		t.Errorf("at the end sendCtr %v, maxRecvId %v: a standing backlog", h.emSum.SendCtr, h.emSum.MaxRecvID)
	}
}

// toggler drops the directive at message 100 and raises it again three
// idle steps later.
type toggler struct {
	models.Model
	n, idle int
}

func (m *toggler) Step(t float64, out, in [][]float64) {
	switch Status(out[0][0]) {
	case Connected:
		m.n++
		if m.n == 100 {
			in[0][0] = 0
		}
	case Unconnected:
		m.idle++
		if m.idle == 3 {
			in[0][0] = 1
		}
	}
	m.Model.Step(t, out, in)
}

// The directive walks the status through 3 → 5 → 1 → 2 → 3.
func TestDirective(t *testing.T) {
	var h *harness
	h = newHarness(t, "../examples/cruise-pedals.json", func(p *ports.Plan) models.Model {
		m, _ := models.New("hold", nil, p, nil)
		return &toggler{Model: m}
	}, emulator.Config{Steps: 20000})
	h.run(t)
	want := []Status{Connecting, Connected, Disconnecting, Unconnected, Connecting, Connected}
	h.mu.Lock()
	got := h.statuses
	h.mu.Unlock()
	if len(got) < len(want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
	// Disconnecting sent neutral controls: BeamNG holds throttle 0, brake 0, pedal mode.
	if v := h.samples[len(h.samples)-1]; v.TorqueMode {
		t.Error("drive mode left in torque mode")
	}
}

// Datagrams from another host, and from BeamNG's host but another port
// than the one BeamNG sends from, are counted and change nothing else.
func TestJunkDatagrams(t *testing.T) {
	h := newHarness(t, "../examples/cruise-pedals.json", nil, emulator.Config{Steps: 400000})
	foreign, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.2:0")))
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	defer foreign.Close()
	local, _ := net.ListenUDP("udp", net.UDPAddrFromAddrPort(loopback))
	defer local.Close()
	go func() {
		time.Sleep(20 * time.Millisecond)
		for i := range 30 {
			full := make([]byte, 888)
			foreign.WriteToUDPAddrPort(full, h.c.LocalAddr())                   // right size, wrong host
			local.WriteToUDPAddrPort([]byte{1, 2, 3, byte(i)}, h.c.LocalAddr()) // short garbage, BeamNG's host, another port
			time.Sleep(2 * time.Millisecond)
		}
	}()
	h.run(t)
	st := h.c.Stats()
	if st.Foreign.Load() != 60 || st.WrongSize.Load() != 0 {
		t.Errorf("foreign %d, wrong size %d, want 60 and 0", st.Foreign.Load(), st.WrongSize.Load())
	}
	if h.emSum.Stalls != 0 || h.emSum.Accepted < h.emSum.Sent-1 || st.Replies.Load() != st.Messages.Load() {
		t.Errorf("the junk disturbed the coupling: %v, messages %d replies %d", h.emSum, st.Messages.Load(), st.Replies.Load())
	}
	if f := h.c.Faults(); len(f) != 1 || !strings.Contains(f[0], "60 datagrams that were not BeamNG's") {
		t.Errorf("faults %q", f)
	}
}

// A bind that fails is status 4 and is retried with backoff while the
// directive asks for a connection (VS Connect "perpetually attempts to
// reconnect"), each failure logged with its cause and a hint; the port
// coming free ends it.
func TestBindRetry(t *testing.T) {
	busy, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(loopback))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := config.Load("../examples/logging.json")
	plan, _ := ports.Compile(cfg)
	var mu sync.Mutex
	var seen []Status
	log := &logBuffer{}
	c, err := New(Options{Plan: plan, Model: models.Hold{}, Log: log.Logger(), Local: busy.LocalAddr().(*net.UDPAddr).AddrPort(), OnStatus: func(_ int, s Status) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(600 * time.Millisecond) // two or three failed tries
		busy.Close()
		for c.Status() != Connecting && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	c.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	want := []Status{Unconnected, Error, Connecting}
	if len(seen) < len(want) {
		t.Fatalf("statuses %v, want %v…", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("statuses %v, want %v…", seen, want)
		}
	}
	if n := c.Stats().BindFailures.Load(); n < 2 || n > 4 {
		t.Errorf("%d bind failures in 0.6 s, want 2–4 (backoff from 250 ms)", n)
	}
	if !log.Has("cannot bind the local address; retrying") || !log.Has("another program has") {
		t.Errorf("the log lacks the failure and its hint:\n%s", log)
	}
	// It connected to no BeamNG: a fault.
	if f := c.Faults(); len(f) == 0 || !strings.Contains(f[0], "never connected") {
		t.Errorf("faults %q", f)
	}
}

// With the directive at 0, a failed bind is not retried: the status goes
// to unconnected.
func TestBindErrorDirectiveOff(t *testing.T) {
	busy, _ := net.ListenUDP("udp", net.UDPAddrFromAddrPort(loopback))
	defer busy.Close()
	cfg, _ := config.Load("../examples/logging.json")
	plan, _ := ports.Compile(cfg)
	m := &directiveOff{}
	c, _ := New(Options{Plan: plan, Model: m, Local: busy.LocalAddr().(*net.UDPAddr).AddrPort()})
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	c.Run(ctx)
	if c.Stats().BindFailures.Load() != 1 || c.Status() != Unconnected {
		t.Errorf("bind failures %d, status %v: want 1 and unconnected", c.Stats().BindFailures.Load(), c.Status())
	}
}

// directiveOff asks to disconnect as soon as it sees the error.
type directiveOff struct{}

func (directiveOff) Step(t float64, out, in [][]float64) {
	if Status(out[0][0]) == Error {
		in[0][0] = 0
	}
}

// While BeamNG's physics thread hangs, an incoming contract with an overdue
// timeout counts as blocked; when data comes again it is not.
func TestOverdueWhileBeamNGHangs(t *testing.T) {
	cfg, err := config.Parse("rig.json", []byte(`{"version": 2,
		"outputs": [{"overdueDataTimeoutMs": 50, "ports": [[{"propertyName": "groundspeed"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
		"beamng": {"model": "cruise-pedals"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var f emulator.Faults
	emulator.ParseFault("pause=500ms@1s", &f)
	// Whether the coupling was blocked when BeamNG got each reply: the last
	// one says whether data coming back unblocked it. (After the run, the
	// coupling's idle wait may see the data go overdue again, rightly.)
	var h *harness
	var blockedAtReply atomic.Bool
	h = newHarnessPlan(t, cfg, nil, emulator.Config{Steps: 4000, Faults: f, Trace: func(r *emulator.StepRecord) {
		if r.Got {
			blockedAtReply.Store(h.c.Blocked())
		}
	}})
	var maxOverdue atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				if n := h.c.Stats().Overdue.Load(); n > maxOverdue.Load() {
					maxOverdue.Store(n)
				}
			}
		}
	}()
	h.run(t)
	close(stop)
	if maxOverdue.Load() != 1 {
		t.Errorf("overdue contracts during a 0.5 s hang: %d, want 1", maxOverdue.Load())
	}
	if blockedAtReply.Load() {
		t.Error("still blocked after data came back")
	}
}

// Meta values, initial and invalid values, and ping_results at the level
// of one message.
func TestHandleValues(t *testing.T) {
	cfg, err := config.Parse("rig.json", []byte(`{"version": 2,
		"outputs": [
			{"updatePeriodMs": 5, "ports": [[{"propertyName": "groundspeed", "initialValue": -1, "invalidValue": -2},
			            {"propertyName": "time", "propertyType": "meta"},
			            {"propertyName": "serial_number", "propertyType": "meta"},
			            {"propertyName": "receive_time_offset", "propertyType": "meta"}]]},
			{"updatePeriodMs": 20, "ports": [[{"propertyName": "rpm"}]]},
			{"groupType": "commData", "ports": [[{"propertyName": "ping_results", "arraySize": 9}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle", "initialValue": 0.25}]]},
		           {"updatePeriodMs": 10, "ports": [[{"propertyName": "steering", "initialValue": 0.5}]]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := ports.Compile(cfg)
	c, _ := New(Options{Plan: plan, Model: models.Hold{}})
	c.fresh = true
	if c.outs[1][0] != -1 || c.ins[1][0] != 0.25 {
		t.Fatalf("initial values: %v %v", c.outs[1], c.ins[1])
	}
	from := netip.AddrPortFrom(c.remote.Addr(), 40000)
	msg := make([]float64, 111)
	reply := make([]float64, 64)
	send := func(id, speed, rpm float64, at time.Time) {
		msg[0], msg[17], msg[33] = id, speed, rpm
		b, _ := beamngEncode(msg)
		out, ok := c.Handle(b, from, at)
		if !ok {
			t.Fatalf("message %v dropped", id)
		}
		beamngDecode(reply, out)
	}
	t0 := time.Now().Add(time.Second) // the engine started at New
	send(0, 5, 1000, t0)
	if c.outs[1][0] != 5 || c.outs[1][1] != 0 || c.outs[1][2] != 0 || c.outs[2][0] != 1000 {
		t.Errorf("first message: %v %v", c.outs[1], c.outs[2])
	}
	if reply[0] != 1 || reply[1] != 0.25 || reply[3] != 0.5 || !math.IsNaN(reply[2]) {
		t.Errorf("first reply %v", reply[:4])
	}
	send(1, math.NaN(), 2000, t0.Add(5*time.Millisecond))
	if c.outs[1][0] != -2 || c.outs[1][1] != 0.005 || c.outs[1][2] != 1 {
		t.Errorf("NaN speed must read invalidValue; time 0.005, serial 1: %v", c.outs[1])
	}
	// time + receive_time_offset is the engine's local time at the message:
	// about 1.005 s here (received 1.005 s after the start, real time).
	if off := c.outs[1][3]; math.Abs(c.outs[1][1]+off-c.Sync().Local()) > 1e-12 || math.Abs(off-1.0) > 0.01 {
		t.Errorf("receive_time_offset %v with time %v, engine local %v", off, c.outs[1][1], c.Sync().Local())
	}
	// rpm's contract is every 4th message: unchanged at id 1; steering's
	// every 2nd: NaN in the reply to id 1.
	if c.outs[2][0] != 1000 || !math.IsNaN(reply[3]) || reply[1] != 0.25 {
		t.Errorf("slower contracts: rpm %v, reply steering %v throttle %v", c.outs[2][0], reply[3], reply[1])
	}
	ping := c.outs[3]
	if ping[2] != 2 || ping[4] != 0 || math.Abs(ping[1]-0.005) > 1e-9 || !math.IsNaN(ping[8]) {
		t.Errorf("ping_results %v", ping)
	}
}

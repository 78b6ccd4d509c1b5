package coupling

import (
	"context"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"beamconnect/beamng/cosim"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/internal/logtest"
	"beamconnect/internal/memnet"
	"beamconnect/models"
	"beamconnect/models/kinds"
	"beamconnect/ports"
	"beamconnect/timesync"
)

// logBuffer is the log a test reads while the coupling writes it.
type logBuffer = logtest.Buffer

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

// testBusyPoll runs the real-socket tests' couplings by busy polling:
// BEAMCONNECT_TEST_BUSY_POLL=1 go test ./coupling runs them in that mode
// (.ci/run runs the coupling tests both ways).
var testBusyPoll = os.Getenv("BEAMCONNECT_TEST_BUSY_POLL") == "1"

// skipInBusyPoll skips a test on the in-memory network when the tests run
// by busy polling: it reads no socket, so it ran as it runs the first time
// (and the busy-polling run, one test at a time, takes minutes less).
func skipInBusyPoll(t testing.TB) {
	if testBusyPoll {
		t.Skip("on the in-memory network: busy polling reads real sockets only")
	}
}

// skipModelInBusyPoll skips a real-socket test about a model's fault or
// timing when the tests run by busy polling: how the socket is read
// changes nothing of it, and the first run judged it (the busy-polling
// run keeps what is about BeamNG's side and the wire, one test at a time).
func skipModelInBusyPoll(t testing.TB) {
	if testBusyPoll {
		t.Skip("about the model: judged in the first run, not again by busy polling")
	}
}

// rig is a coupling to test against emulated BeamNG vehicles: the config,
// the model, BeamNG's side, and whatever the test changes in the session's
// options.
type rig struct {
	cfg    *config.Config
	model  func(*ports.Plan) models.Model // nil: the config's own
	em     emulator.Config                // every vehicle's, Steps and pacing from the first
	starts []int64                        // vehicle v's controller loads at step starts[v]
	place  [][3]float64                   // vehicle v starts at X, Y, yaw
	faults map[int]emulator.Faults        // by vehicle; em.Faults is vehicle 0's
	wrap   func(v int, t emulator.Transport) emulator.Transport
	opts   func(h *harness, o *Options)
	noBind bool // the session binds when it runs (a test of binding)
	// BeamNG's side speaks another protocol than the config: a CSV of its
	// own (csv), or Gen 1 (gen1).
	csv  *cosim.File
	gen1 bool
	// debugLogs, when set, is where each vehicle's BeamNG side writes its
	// debug logs: a folder per vehicle, named by its index.
	debugLogs string
}

// harness is a rig being run: the session, BeamNG's side, and what the
// test watches of it.
type harness struct {
	plan  *ports.Plan
	model models.Model
	s     *Session
	c     *Link // vehicle 0's link
	log   *logBuffer
	net   *memnet.Network // nil over real UDP
	ems   []*emulator.Emulator
	em    *emulator.Emulator // vehicle 0's
	udp   []*emulator.UDP
	emSum emulator.Summary // vehicle 0's
	sums  []emulator.Summary
	// linger is how long the session runs on after BeamNG's side has
	// stopped, before it is stopped (cancelled, as Ctrl-C stops run).
	linger time.Duration

	mu       sync.Mutex
	statuses []ports.Status     // vehicle 0's reported statuses, in order
	samples  []emulator.Vehicle // vehicle 0's car every simulated second

	// For waitMessages: replied is closed at the next reply (nil while
	// nobody waits), ended when BeamNG's side has done its steps.
	wakeMu  sync.Mutex
	replied chan struct{}
	ended   chan struct{}
}

// waitMessages waits until vehicle 0's link has counted n messages,
// looking again at each reply rather than on a timer. It reports false
// when the run ended first. Any goroutine may call it.
func (h *harness) waitMessages(n int64) bool {
	for {
		h.wakeMu.Lock()
		if h.replied == nil {
			h.replied = make(chan struct{})
		}
		next := h.replied // before looking, so a reply meanwhile is not missed
		h.wakeMu.Unlock()
		if h.c.Stats().Get(Messages) >= n {
			return true
		}
		select {
		case <-next:
		case <-h.ended:
			return h.c.Stats().Get(Messages) >= n
		}
	}
}

// wake wakes the waitMessages waiting, at a reply.
func (h *harness) wake() {
	h.wakeMu.Lock()
	if h.replied != nil {
		close(h.replied)
		h.replied = nil
	}
	h.wakeMu.Unlock()
}

// memListen binds links on the in-memory network n, read as a socket with
// a receive timeout of the loop's idle step.
func memListen(n *memnet.Network) Listen {
	return func(local netip.AddrPort) (Transport, error) {
		s, err := n.Timed(local, idleStep)
		if err != nil {
			return nil, err // not a nil *memnet.Socket in an interface
		}
		return s, nil
	}
}

// reloadConfig reloads s from the config text data of path, as run's
// watcher does: parsed and compiled here, refused and counted if it fails.
func reloadConfig(s *Session, path string, data []byte) (ports.Changes, error) {
	p, err := config.ParsePlan(path, data)
	if err != nil {
		s.RefuseReload()
		return ports.Changes{}, err
	}
	return s.Reload(p)
}

// load reads an example config.
func load(t testing.TB, file string) *config.Config {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// sim builds the rig in memory (package memnet). Call it inside
// synctest.Test: every wait of both sides runs on the fake clock. BeamNG's
// side is paced as BeamNG paces itself, in frames of physics steps, unless
// the test says otherwise.
func (r rig) sim(t testing.TB) *harness {
	t.Helper()
	skipInBusyPoll(t)
	h := &harness{net: memnet.New()}
	clock := timesync.SleepClock{}
	return r.build(t, h, memListen(h.net), clock)
}

// udp builds the rig over real loopback sockets, on free ports, read as
// run reads them (busy polling with BEAMCONNECT_TEST_BUSY_POLL=1).
func (r rig) udp(t testing.TB) *harness {
	t.Helper()
	if r.em.FPS == 0 && r.em.StepCost == 0 {
		r.em.FreeRunning = true
	}
	return r.build(t, &harness{}, nil, nil)
}

func (r rig) build(t testing.TB, h *harness, listen Listen, clock timesync.Clock) *harness {
	t.Helper()
	plan, err := config.Compile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.plan, h.log = plan, &logBuffer{}
	if r.model != nil {
		h.model = r.model(plan)
	} else if h.model, err = kinds.New(plan.Model, plan.ModelParams, plan, h.log.Logger()); err != nil {
		t.Fatal(err)
	}
	opt := Options{Plan: plan, Model: h.model, Params: kinds.Parameters(plan.Model), Log: h.log.Logger(), Local: loopback, Listen: listen, Clock: clock,
		BusyPoll: listen == nil && testBusyPoll,
		OnStatus: func(v int, s ports.Status) {
			if v == 0 {
				h.mu.Lock()
				h.statuses = append(h.statuses, s)
				h.mu.Unlock()
			}
		}}
	if r.opts != nil {
		r.opts(h, &opt)
	}
	h.ended = make(chan struct{})
	onMessage := opt.OnMessage
	opt.OnMessage = func(v int, id, replyID float64) {
		if onMessage != nil {
			onMessage(v, id, replyID)
		}
		h.wake()
	}
	if h.s, err = New(opt); err != nil {
		t.Fatal(err)
	}
	h.c = h.s.Link(0)
	if !r.noBind {
		if err := h.s.Bind(); err != nil {
			t.Fatal(err)
		}
	}
	for v, l := range h.s.Links() {
		var tr emulator.Transport
		if h.net != nil {
			m, err := emulator.ListenMem(h.net, netip.MustParseAddrPort("127.0.0.1:0"), l.LocalAddr(), 0)
			if err != nil {
				t.Fatal(err)
			}
			l.SetRemote(m.LocalAddr())
			tr = m
		} else {
			u, err := emulator.ListenUDP(loopback, l.LocalAddr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { u.Close() })
			h.udp = append(h.udp, u)
			l.SetRemote(u.LocalAddr())
			tr = u
		}
		if r.wrap != nil {
			tr = r.wrap(v, tr)
		}
		cfg := r.em
		cfg.SimulinkTime, cfg.PingTime, cfg.CSV = plan.Period, plan.PingTime, plan.Vehicles[v].CSV
		switch {
		case r.gen1:
			cfg.CSV = nil
		case r.csv != nil:
			cfg.CSV = r.csv
		}
		if v > 0 {
			cfg.Faults, cfg.Trace = emulator.Faults{}, nil
		}
		if f, ok := r.faults[v]; ok {
			cfg.Faults = f
		}
		if v < len(r.starts) {
			cfg.StartStep = r.starts[v]
		}
		if r.debugLogs != "" {
			cfg.DebugLogs = filepath.Join(r.debugLogs, strconv.Itoa(v))
		}
		if v < len(r.place) {
			cfg.Vehicle = emulator.DefaultVehicle()
			cfg.Vehicle.Start = r.place[v]
		}
		if v == 0 {
			trace := cfg.Trace
			cfg.Trace = func(s *emulator.StepRecord) {
				if s.Step%2000 == 0 {
					h.mu.Lock()
					h.samples = append(h.samples, *h.em.Vehicle())
					h.mu.Unlock()
				}
				if trace != nil {
					trace(s)
				}
			}
		}
		em, err := emulator.New(cfg, tr)
		if err != nil {
			t.Fatal(err)
		}
		h.ems = append(h.ems, em)
	}
	h.em = h.ems[0]
	h.em.Attach(h.ems[1:]...)
	return h
}

// run runs both sides until BeamNG's side has done its steps; during, when
// set, runs alongside (it ends with the run's context).
func (h *harness) run(t testing.TB, during ...func(ctx context.Context)) {
	t.Helper()
	limit := 60 * time.Second
	if h.net != nil {
		limit = time.Hour // fake time
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { h.s.Run(ctx) })
	for _, d := range during {
		wg.Go(func() { d(ctx) })
	}
	h.emSum, _ = h.em.Run(ctx)
	h.sums = []emulator.Summary{h.emSum}
	for _, em := range h.ems[1:] {
		h.sums = append(h.sums, em.Summary())
	}
	close(h.ended)
	if h.linger > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(h.linger): // the user stops beamconnect this long after BeamNG
		}
	}
	timedOut := ctx.Err() == context.DeadlineExceeded
	cancel()
	wg.Wait()
	if timedOut {
		t.Fatal("timed out")
	}
}

// statusList is vehicle 0's reported statuses so far.
func (h *harness) statusList() []ports.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.statuses)
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

// holdsSpeed checks the cruise rigs: the set speed held over the last
// third, BeamNG never stalled, every reply applied.
func holdsSpeed(t *testing.T, h *harness) {
	t.Helper()
	set := h.plan.ModelParams["setSpeed"].(float64)
	checkHeld(t, h, set, func(v emulator.Vehicle) float64 { return v.V }, 0.05*set, "speed")
	if s := h.emSum; s.Stalls != 0 || s.Accepted < s.Sent-1 {
		t.Errorf("BeamNG's side: %v", s)
	}
	// The controller's own report agrees: settled, small errors since.
	if q := figures(h); !(q["speed error RMS after settling"] < 0.05*set) || !(q["speed settled after"] < 20) {
		t.Errorf("the model reports %v", h.s.Control())
	}
}

// figures is the model's quality report by name.
func figures(h *harness) map[string]float64 {
	q := map[string]float64{}
	for _, r := range h.s.Control() {
		q[r.Name+" error now"] = r.Error
		q[r.Name+" error RMS after settling"] = r.RMS
		q[r.Name+" settled after"] = r.SettledAfter
		for _, f := range r.Extra {
			q[f.Name] = f.Value
		}
	}
	return q
}

func containsAll(lines []string, subs ...string) bool {
	for _, sub := range subs {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, sub) }) {
			return false
		}
	}
	return true
}

// ref2 is a port element a test model writes.
type ref2 struct{ port, elem int }

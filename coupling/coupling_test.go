package coupling

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/internal/memnet"
	"beamconnect/models"
	"beamconnect/models/kinds"
	"beamconnect/ports"
)

// The example rigs hold what they are set to against the emulated car, 30 s
// of simulated time on the fake clock.
func TestExampleRigs(t *testing.T) {
	for _, tt := range []struct {
		file  string
		check func(t *testing.T, h *harness)
	}{
		{"../examples/cruise-pedals.json", holdsSpeed},
		{"../examples/cruise-torque.json", func(t *testing.T, h *harness) {
			holdsSpeed(t, h)
			if !h.em.Vehicle().TorqueMode {
				t.Error("the torque rig left BeamNG in pedal mode")
			}
		}},
		{"../examples/heading-hold.json", func(t *testing.T, h *harness) {
			want := h.plan.ModelParams["headingDeg"].(float64) * math.Pi / 180
			checkHeld(t, h, want, func(v emulator.Vehicle) float64 { return v.Yaw }, 2*math.Pi/180, "heading")
			if q := figures(h); !(math.Abs(q["heading error now"]) < 2) || !(q["heading error RMS after settling"] < 2) {
				t.Errorf("the model reports %v", h.s.Control())
			}
		}},
		{"../examples/gen2-cruise.json", func(t *testing.T, h *harness) {
			holdsSpeed(t, h)
			if s := h.emSum; s.LuaErrors != 0 || s.NaNApplied != 0 {
				t.Errorf("BeamNG's Gen 2 side: lua errors %d, NaN applied %d", s.LuaErrors, s.NaNApplied)
			}
		}},
	} {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(tt.file, "../examples/"), ".json"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := rig{cfg: load(t, tt.file), em: emulator.Config{Steps: 60000}}.sim(t)
				h.run(t)
				tt.check(t, h)
				if f := h.s.Faults(); len(f) != 0 {
					t.Errorf("faults %q", f)
				}
			})
		})
	}
}

// The default reply policy never stalls BeamNG at start-up; the
// S-function's echo policy costs one 2 s stall.
func TestReplyPolicyStartup(t *testing.T) {
	for _, tt := range []struct {
		policy ports.ReplyID
		stalls int64
	}{{ports.ReplyNext, 0}, {ports.ReplyCounter, 0}, {ports.ReplyEcho, 1}} {
		t.Run(string(tt.policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := load(t, "../examples/cruise-pedals.json")
				cfg.ReplyID = tt.policy
				// Echo's stall needs its first reply to land in a skip step, as it
				// does with BeamNG's physics work between steps: a millisecond per
				// step here.
				h := rig{cfg: cfg, em: emulator.Config{Steps: 300, FreeRunning: true, StepCost: time.Millisecond}}.sim(t)
				h.run(t)
				if got := h.emSum.Stalls; got != tt.stalls {
					t.Errorf("%s: %d stalls, want %d: %v", tt.policy, got, tt.stalls, h.emSum)
				}
			})
		})
	}
}

// pauser wraps a model and sleeps once, as a client stopped in a debugger.
type pauser struct {
	models.Model
	at    int
	pause time.Duration
	n     int
}

func (p *pauser) Step(t float64, out, in [][]float64) bool {
	if out[0][0] == float64(ports.Connected) {
		p.n++
		if p.n == p.at {
			time.Sleep(p.pause)
		}
	}
	p.Model.Step(t, out, in)
	return true
}

// After a 2.5 s pause of the client, BeamNG times out once; beamconnect
// re-bases its reply ids and BeamNG is back in lockstep within 20 messages,
// with no standing backlog.
func TestPauseRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sends []emulator.StepRecord
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"),
			model: func(p *ports.Plan) models.Model {
				m, _ := kinds.New("cruise-pedals", p.ModelParams, p, nil)
				return &pauser{Model: m, at: 50, pause: 2500 * time.Millisecond}
			},
			em: emulator.Config{Steps: 12000, Trace: func(r *emulator.StepRecord) {
				if r.Sent || r.TimedOut {
					sends = append(sends, *r)
				}
			}}}.sim(t)
		h.run(t)
		if h.emSum.Stalls != 1 || h.c.Stats().Get(StallsRecovered) != 1 {
			t.Fatalf("emulator stalls %d, recovered %d: %v", h.emSum.Stalls, h.c.Stats().Get(StallsRecovered), h.emSum)
		}
		// From the stall on: the first send after which BeamNG never again
		// has more than one message in flight.
		stall := -1
		for i, s := range sends {
			if s.TimedOut {
				stall = i
			}
		}
		settled := stall
		for i := len(sends) - 1; i > stall; i-- {
			if sends[i].SendCtr-sends[i].MaxRecvID > 1 {
				settled = i
				break
			}
		}
		if n := settled - stall; n > 20 {
			t.Errorf("lockstep came back %d messages after the stall, want within 20", n)
		}
		if d := h.emSum.SendCtr - h.emSum.MaxRecvID; d < 0 || d > 1 {
			t.Errorf("at the end sendCtr %v, maxRecvId %v: a standing backlog", h.emSum.SendCtr, h.emSum.MaxRecvID)
		}
	})
}

// toggler drops the directive at message 100 and raises it again three
// idle steps later.
type toggler struct {
	models.Model
	n, idle int
}

func (m *toggler) Step(t float64, out, in [][]float64) bool {
	if m.n++; m.n == 100 {
		in[0][0] = 0
	}
	return m.Model.Step(t, out, in)
}

func (m *toggler) Idle(t float64, out, in [][]float64) {
	if ports.Status(out[0][0]) == ports.Unconnected {
		if m.idle++; m.idle == 3 {
			in[0][0] = 1
		}
	}
}

// The directive walks the status through 3 → 5 → 1 → 2 → 3, and
// disconnecting leaves BeamNG with neutral controls.
func TestDirective(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// When BeamNG's drive mode changed, and when the status did, on the
		// fake clock: the link changes the status on its own goroutine and
		// BeamNG steps on its own, so which of them looks first at one
		// instant is the scheduler's choice; the instants are not.
		type change struct {
			at     time.Time
			torque bool // the drive mode BeamNG went to
		}
		type status struct {
			at time.Time
			is ports.Status
		}
		var mu sync.Mutex
		var modes []change
		var statuses []status
		var h *harness
		torque := false // BeamNG's start: pedals
		h = rig{cfg: load(t, "../examples/cruise-torque.json"), model: func(p *ports.Plan) models.Model {
			m, _ := kinds.New("cruise-torque", p.ModelParams, p, nil)
			return &toggler{Model: m}
		}, em: emulator.Config{Steps: 20000, Trace: func(*emulator.StepRecord) {
			if v := h.em.Vehicle().TorqueMode; v != torque {
				torque = v
				mu.Lock()
				modes = append(modes, change{time.Now(), v})
				mu.Unlock()
			}
		}}, opts: func(_ *harness, o *Options) {
			report := o.OnStatus
			o.OnStatus = func(v int, s ports.Status) {
				report(v, s)
				mu.Lock()
				statuses = append(statuses, status{time.Now(), s})
				mu.Unlock()
			}
		}}.sim(t)
		h.run(t)
		want := []ports.Status{ports.Connecting, ports.Connected, ports.Disconnecting, ports.Unconnected, ports.Connecting, ports.Connected}
		got := h.statusList()
		if len(got) < len(want) {
			t.Fatalf("statuses %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("statuses %v, want %v", got, want)
			}
		}
		// From disconnecting until connecting again nobody answers BeamNG:
		// the neutral reply that disconnecting sent must have put it back
		// to pedals by the time the coupling connects again.
		let, again := statuses[2].at, statuses[4].at
		before := func(at time.Time) (last change) {
			for _, c := range modes {
				if !c.at.Before(at) {
					break
				}
				last = c
			}
			return last
		}
		start := statuses[0].at
		said := func() string {
			var b strings.Builder
			for _, c := range modes {
				fmt.Fprintf(&b, " torque=%v at %v;", c.torque, c.at.Sub(start))
			}
			return fmt.Sprintf("BeamNG's drive mode changes:%s the coupling let go at %v and connected again at %v", b.String(), let.Sub(start), again.Sub(start))
		}
		if m := before(let); !m.torque {
			t.Fatalf("BeamNG was not in torque mode when the coupling let go, the test shows nothing: %s", said())
		}
		if m := before(again); m.torque {
			t.Errorf("disconnecting left BeamNG in torque mode: the neutral reply did not reach it before the coupling connected again: %s", said())
		}
	})
}

// Datagrams from another host, and from BeamNG's host but another port
// than the one BeamNG sends from, are counted and change nothing else.
func TestJunkDatagrams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 20000}}.sim(t)
		other, _ := h.net.Listen(netip.MustParseAddrPort("127.0.0.2:0"), 0)
		local, _ := h.net.Listen(loopback, 0)
		h.run(t, func(ctx context.Context) {
			time.Sleep(20 * time.Millisecond)
			for i := range 30 {
				other.WriteTo(make([]byte, 888), h.c.LocalAddr())        // right size, wrong host
				local.WriteTo([]byte{1, 2, 3, byte(i)}, h.c.LocalAddr()) // short garbage, BeamNG's host, another port
				time.Sleep(2 * time.Millisecond)
			}
		})
		st := h.c.Stats()
		if st.Get(Foreign) != 60 || st.Get(WrongSize) != 0 {
			t.Errorf("foreign %d, wrong size %d, want 60 and 0", st.Get(Foreign), st.Get(WrongSize))
		}
		if h.emSum.Stalls != 0 || h.emSum.Accepted < h.emSum.Sent-1 || st.Get(Replies) != st.Get(Messages) {
			t.Errorf("the junk disturbed the coupling: %v, messages %d replies %d", h.emSum, st.Get(Messages), st.Get(Replies))
		}
		if f := h.s.Faults(); len(f) != 1 || !strings.Contains(f[0], "60 datagrams that were not BeamNG's") {
			t.Errorf("faults %q", f)
		}
	})
}

// A bind that fails is status 4 and is retried with backoff while the
// directive asks for a connection (VS Connect "perpetually attempts to
// reconnect"), each failure logged with its cause and a hint; the port
// coming free ends it.
func TestBindRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		plan, _ := config.Compile(load(t, "../examples/logging.json"))
		busy, _ := n.Listen(netip.MustParseAddrPort("127.0.0.1:6000"), 0) // another program has the port
		log := &logBuffer{}
		var seen []ports.Status
		s, err := New(Options{Plan: plan, Model: models.Hold{}, Log: log.Logger(), Listen: memListen(n),
			Local: busy.LocalAddr(), OnStatus: func(_ int, st ports.Status) { seen = append(seen, st) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		go func() {
			time.Sleep(600 * time.Millisecond)
			busy.Close()
			for s.Status() != ports.Connecting && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		s.Run(ctx)
		if want := []ports.Status{ports.Unconnected, ports.Error, ports.Connecting}; !slices.Equal(seen[:min(3, len(seen))], want) {
			t.Fatalf("statuses %v, want %v…", seen, want)
		}
		// Tries at 0 and 250 ms fail; the one at 750 ms (backing off to
		// 500 ms) finds the port free.
		if n := s.Link(0).Stats().Get(BindFailures); n != 2 {
			t.Errorf("%d bind failures, want 2", n)
		}
		if !log.Has("cannot bind the local address; retrying") || !log.Has("retry_in=500ms") {
			t.Errorf("the log lacks the failure and its backoff:\n%s", log)
		}
		// It connected to no BeamNG: a fault.
		if f := s.Faults(); len(f) == 0 || !strings.Contains(f[0], "never connected") {
			t.Errorf("faults %q", f)
		}
	})
}

// A port that stays busy is given up after the bind timeout: the run ends
// with the error, its cause and a hint, rather than waiting for ever; with
// a negative timeout it is retried for as long as the run goes on.
func TestBindGivesUp(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		ends    bool
	}{
		{"bounded", 2 * time.Second, true},
		{"for ever", -1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				plan, _ := config.Compile(load(t, "../examples/logging.json"))
				busy, _ := n.Listen(netip.MustParseAddrPort("127.0.0.1:6000"), 0)
				defer busy.Close()
				log := &logBuffer{}
				s, err := New(Options{Plan: plan, Model: models.Hold{}, Log: log.Logger(), Listen: memListen(n),
					Local: busy.LocalAddr(), BindTimeout: tt.timeout})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				start := time.Now()
				err = s.Run(ctx)
				took := time.Since(start)
				if !tt.ends {
					if err != nil || took < 30*time.Second || s.Link(0).Stats().Get(BindFailures) < 7 {
						t.Errorf("%v after %v, %d tries: want retries until the run ends", err, took, s.Link(0).Stats().Get(BindFailures))
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "could not bind 127.0.0.1:6000 for 2s (4 tries): memnet: listen 127.0.0.1:6000: address already in use; check") {
					t.Fatalf("the run ended with %v", err)
				}
				if took < 2*time.Second || took > 3*time.Second {
					t.Errorf("given up after %v, want the 2 s timeout", took)
				}
				if !log.Has("giving up: the local address could not be bound") {
					t.Errorf("the log:\n%s", log)
				}
			})
		})
	}
}

// With the directive at 0, a failed bind is not retried: the status goes
// to unconnected.
func TestBindErrorDirectiveOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		plan, _ := config.Compile(load(t, "../examples/logging.json"))
		busy, _ := n.Listen(netip.MustParseAddrPort("127.0.0.1:6000"), 0)
		s, _ := New(Options{Plan: plan, Model: directiveOff{}, Listen: memListen(n), Local: busy.LocalAddr()})
		ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
		defer cancel()
		s.Run(ctx)
		if n := s.Link(0).Stats().Get(BindFailures); n != 1 || s.Status() != ports.Unconnected {
			t.Errorf("bind failures %d, status %v: want 1 and unconnected", n, s.Status())
		}
	})
}

// directiveOff asks to disconnect as soon as it sees the error.
type directiveOff struct{}

func (directiveOff) Step(t float64, out, in [][]float64) bool { return true }

func (directiveOff) Idle(t float64, out, in [][]float64) {
	if ports.Status(out[0][0]) == ports.Error {
		in[0][0] = 0
	}
}

// While BeamNG's physics thread hangs, an incoming contract with an overdue
// timeout counts as blocked; when data comes again it is not.
func TestOverdueWhileBeamNGHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := config.Parse("rig.json", []byte(`{"version": 2,
		"outputs": [{"overdueDataTimeoutMs": 50, "ports": [[{"propertyName": "groundspeed"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
		"beamng": {"model": "cruise-pedals"}}`))
		if err != nil {
			t.Fatal(err)
		}
		var f emulator.Faults
		emulator.ParseFault("pause=500ms@1s", &f)
		var h *harness
		var blockedAtReply atomic.Bool
		h = rig{cfg: cfg, em: emulator.Config{Steps: 4000, Faults: f, Trace: func(r *emulator.StepRecord) {
			if r.Got {
				blockedAtReply.Store(h.c.Stats().Get(Overdue) > 0)
			}
		}}}.sim(t)
		var maxOverdue atomic.Int64
		h.run(t, func(ctx context.Context) {
			for ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
				maxOverdue.Store(max(maxOverdue.Load(), h.c.Stats().Get(Overdue)))
			}
		})
		if maxOverdue.Load() != 1 {
			t.Errorf("overdue contracts during a 0.5 s hang: %d, want 1", maxOverdue.Load())
		}
		if blockedAtReply.Load() {
			t.Error("still blocked after data came back")
		}
	})
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
	d := newDirect(t, cfg, models.Hold{}, nil)
	outs, ins := d.s.stage.outs, d.s.stage.ins
	if outs[1][0] != -1 || ins[1][0] != 0.25 {
		t.Fatalf("initial values: %v %v", outs[1], ins[1])
	}
	from := d.from(40000)
	send := func(id, speed, rpm float64, at time.Time) []float64 {
		d.msg[0], d.msg[17], d.msg[33] = id, speed, rpm
		reply, ok := d.send(from, at)
		if !ok {
			t.Fatalf("message %v dropped", id)
		}
		return reply
	}
	t0 := d.start().Add(time.Second)
	reply := send(0, 5, 1000, t0)
	if outs[1][0] != 5 || outs[1][1] != 0 || outs[1][2] != 0 || outs[2][0] != 1000 {
		t.Errorf("first message: %v %v", outs[1], outs[2])
	}
	if reply[0] != 1 || reply[1] != 0.25 || reply[3] != 0.5 || !math.IsNaN(reply[2]) {
		t.Errorf("first reply %v", reply[:4])
	}
	reply = send(1, math.NaN(), 2000, t0.Add(5*time.Millisecond))
	if outs[1][0] != -2 || outs[1][1] != 0.005 || outs[1][2] != 1 {
		t.Errorf("NaN speed must read invalidValue; time 0.005, serial 1: %v", outs[1])
	}
	// time + receive_time_offset is the engine's local time at the message:
	// 1.005 s here (received 1.005 s after the start).
	if off := outs[1][3]; math.Abs(outs[1][1]+off-d.l.Sync().Local()) > 1e-12 || math.Abs(off-1.0) > 1e-9 {
		t.Errorf("receive_time_offset %v with time %v, engine local %v", off, outs[1][1], d.l.Sync().Local())
	}
	// rpm's contract is every 4th message: unchanged at id 1; steering's
	// every 2nd: NaN in the reply to id 1.
	if outs[2][0] != 1000 || !math.IsNaN(reply[3]) || reply[1] != 0.25 {
		t.Errorf("slower contracts: rpm %v, reply steering %v throttle %v", outs[2][0], reply[3], reply[1])
	}
	ping := outs[3]
	if ping[2] != 2 || ping[4] != 0 || math.Abs(ping[1]-0.005) > 1e-9 || !math.IsNaN(ping[8]) {
		t.Errorf("ping_results %v", ping)
	}
}

// The per-message path (decode → contracts → built-in model → encode →
// the socket) allocates nothing, for every example rig.
func TestHandleAllocs(t *testing.T) {
	for _, file := range []string{"../examples/cruise-pedals.json", "../examples/cruise-torque.json",
		"../examples/heading-hold.json", "../examples/logging.json", "../examples/gen2-cruise.json"} {
		d := newDirect(t, load(t, file), nil, nil)
		d.msg[1], d.msg[min(17, len(d.msg)-1)] = 12, 12
		from, now := d.from(50000), d.start()
		step := func() {
			d.msg[0]++
			now = now.Add(5 * time.Millisecond)
			if _, ok := d.send(from, now); !ok {
				t.Fatal("message dropped")
			}
		}
		for range 10 {
			step()
		}
		if a := testing.AllocsPerRun(1000, step); a != 0 {
			t.Errorf("%s: %v allocations per message", file, a)
		}
	}
}

// benchConfigs are the configs both per-message benchmarks run.
var benchConfigs = []struct{ name, file string }{
	{"cruise-pedals", "../examples/cruise-pedals.json"},
	{"logging-all-111", "../examples/logging.json"},
	{"gen2-cruise", "../examples/gen2-cruise.json"},
}

// BenchmarkHandle is the in-process turnaround: one BeamNG message checked,
// decoded, spread over the contracts, a built-in model stepped, the reply
// encoded and handed to an in-memory socket.
func BenchmarkHandle(b *testing.B) {
	for _, bm := range benchConfigs {
		b.Run(bm.name, func(b *testing.B) {
			d := newDirect(b, load(b, bm.file), nil, nil)
			d.msg[1] = 12
			from, now := d.from(50000), d.start()
			b.ReportAllocs()
			for b.Loop() {
				d.msg[0]++
				now = now.Add(5 * time.Millisecond)
				d.send(from, now)
			}
		})
	}
}

// discard is a socket that sends nowhere: what BenchmarkStep measures is
// the coupling's own work on a message, not a transport's.
type discard struct{ Transport }

func (discard) Send([]byte, netip.AddrPort) error { return nil }

// BenchmarkStep is one BeamNG message through the coupling's own work:
// source and id checks, decode, contracts, the model, fault check, encode;
// the reply handed to a socket that discards it. Compare with the codec's
// own cost (package beamng's Codec benchmark).
func BenchmarkStep(b *testing.B) {
	for _, bm := range benchConfigs {
		b.Run(bm.name, func(b *testing.B) {
			d := newDirect(b, load(b, bm.file), nil, nil)
			d.tr.Transport = discard{d.tr.Transport}
			d.msg[1] = 12
			from, now := d.from(50000), d.start()
			datagram, _ := beamngEncode(make([]byte, 8*len(d.msg)), d.msg)
			b.ReportAllocs()
			for b.Loop() {
				d.msg[0]++
				beamngEncode(datagram[:8], d.msg[:1]) // the id
				now = now.Add(5 * time.Millisecond)
				d.clock.now = now
				d.tr.next, d.tr.from = datagram, from
				d.l.receive()
			}
		})
	}
}

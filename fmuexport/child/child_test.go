package child

import (
	"context"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/fmuexport"
	"beamconnect/fmuexport/shim"
	"beamconnect/internal/memnet"
	"beamconnect/ports"
	"beamconnect/recording"
	"beamconnect/recording/mdf"
	"beamconnect/recording/recordingtest"
)

// TestMain registers the MDF recording format, as beamconnect's main
// does for the child.
func TestMain(m *testing.M) {
	recording.Register(mdf.Format)
	os.Exit(m.Run())
}

// rig is a child's server as the shim drives it, coupled to an emulated
// BeamNG on an in-memory network: inside testing/synctest every wait of
// both sides (BeamNG's frames, its 2 s timeout, the silence timeout) is on
// the fake clock.
type rig struct {
	s      *server
	net    *memnet.Network
	plan   *ports.Plan
	iface  *fmuexport.Interface
	logs   string // BeamNG's debug logs
	faults emulator.Faults
	em     *emulator.Emulator
	emDone chan emulator.Summary
	cancel context.CancelFunc
}

// resources lays out the FMU's resources folder for config: the config as
// config.json, its CSVs beside it.
func resources(t *testing.T, file string) string {
	t.Helper()
	dir := t.TempDir()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, fmuexport.ConfigName), text, 0o644)
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.CSVPaths() {
		data, _ := os.ReadFile(p)
		os.WriteFile(filepath.Join(dir, filepath.Base(p)), data, 0o644)
	}
	return dir
}

// open opens the FMU of config as the shim does.
func open(t *testing.T, file string) *rig {
	t.Helper()
	res := resources(t, file)
	plan, in, err := fmuexport.Load(res)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{net: memnet.New(), plan: plan, iface: in, logs: t.TempDir()}
	r.s = newServer(256<<10, func(local netip.AddrPort) (coupling.Transport, error) {
		s, err := r.net.Timed(local, 50*time.Millisecond) // the coupling's idle step
		if err != nil {
			return nil, err
		}
		return s, nil
	})
	w := writer{}
	w.u8(reqOpen)
	w.u32(fmuexport.Protocol)
	w.u32(2)
	w.str("rig")
	w.str(in.Token)
	w.str(res)
	w.u8(1)
	if a := r.ask(t, w.b); a.result != statusOK {
		t.Fatalf("open: %v", a)
	}
	return r
}

// answer is a decoded answer.
type answer struct {
	result  uint8
	logs    []record
	time    float64
	outputs []float64
}

// number is the value of key=N in the log line that says what.
func (a answer) number(what, key string) int {
	for _, l := range a.logs {
		if !strings.Contains(l.msg, what) {
			continue
		}
		_, v, ok := strings.Cut(l.msg, " "+key+"=")
		if !ok {
			break
		}
		v, _, _ = strings.Cut(v, " ")
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return -1
}

func (a answer) said(sub string) bool {
	for _, l := range a.logs {
		if strings.Contains(l.msg, sub) {
			return true
		}
	}
	return false
}

// ask sends a request and reads the answer, going on while it says more
// is to come, with every log line of the way.
func (r *rig) ask(t *testing.T, req []byte) answer {
	t.Helper()
	var a answer
	typ := req[0]
	for {
		p := r.s.handle(req)
		rd := reader{b: p}
		a.result = rd.u8()
		for range rd.u32() {
			a.logs = append(a.logs, record{status: rd.u8(), category: rd.str(), msg: rd.str()})
		}
		if a.result != resultPending {
			if (typ == reqInit || typ == reqStep) && a.result == statusOK {
				a.time = rd.f64()
				a.outputs = make([]float64, rd.u32())
				for i := range a.outputs {
					a.outputs[i] = rd.f64()
				}
			}
			if rd.bad {
				t.Fatalf("an answer the shim cannot read: %x…", p[:min(len(p), 64)])
			}
			return a
		}
		req = []byte{reqContinue}
	}
}

// initialize initializes the FMU at start with parameters (by name) and
// starts BeamNG's side once the coupling waits for it.
func (r *rig) initialize(t *testing.T, start float64, params map[string]any) answer {
	t.Helper()
	return r.initializeUntil(t, start, -1, params)
}

// initializeUntil is initialize with a stop time (none when negative).
func (r *rig) initializeUntil(t *testing.T, start, stop float64, params map[string]any) answer {
	t.Helper()
	w := writer{}
	w.u8(reqInit)
	w.f64(start)
	if stop >= 0 {
		w.u8(1)
	} else {
		w.u8(0)
	}
	w.f64(stop)
	w.u32(uint32(len(params)))
	for name, val := range params {
		v, ok := r.iface.Variable(name)
		if !ok {
			t.Fatalf("no variable %s", name)
		}
		w.u32(v.VR)
		if s, ok := val.(string); ok {
			w.str(s)
		} else {
			w.f64(val.(float64))
		}
	}
	done := make(chan answer, 1)
	go func() { done <- r.ask(t, w.b) }()
	synctest.Wait() // bound, waiting for BeamNG's first message
	if len(done) == 0 {
		r.startBeamNG(t)
	}
	return <-done
}

// startBeamNG starts the emulated vehicles, each sending to its link.
func (r *rig) startBeamNG(t *testing.T) {
	t.Helper()
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	r.emDone = make(chan emulator.Summary, 1)
	var ems []*emulator.Emulator
	for v, l := range r.s.current().sess.Links() {
		m, err := emulator.ListenMem(r.net, r.plan.Vehicles[v].Remote, l.LocalAddr(), 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := emulator.Config{SimulinkTime: r.plan.Period, PingTime: r.plan.PingTime, PhysicsDt: r.plan.PhysicsDt, CSV: r.plan.Vehicles[v].CSV}
		if v == 0 {
			cfg.Faults, cfg.DebugLogs = r.faults, r.logs
		}
		cfg.Vehicle = emulator.DefaultVehicle()
		cfg.Vehicle.Start = [3]float64{40 * float64(v), 0, 0}
		em, err := emulator.New(cfg, m)
		if err != nil {
			t.Fatal(err)
		}
		ems = append(ems, em)
	}
	r.em = ems[0]
	r.em.Attach(ems[1:]...)
	go func() {
		s, _ := r.em.Run(ctx)
		r.emDone <- s
	}()
}

// step asks for doStep(t, h) with the inputs by name (others 0).
func (r *rig) step(t *testing.T, tm, h float64, inputs map[string]float64) answer {
	t.Helper()
	w := writer{}
	w.u8(reqStep)
	w.f64(tm)
	w.f64(h)
	w.u32(uint32(len(r.s.ins)))
	for _, vr := range r.s.ins {
		w.f64(inputs[r.iface.Vars[vr].Name])
	}
	return r.ask(t, w.b)
}

func (r *rig) terminate(t *testing.T) answer {
	t.Helper()
	return r.ask(t, []byte{reqTerminate})
}

// stopBeamNG stops the emulated BeamNG and returns its summary; its debug
// logs are written then. BeamNG reads what was sent to it at its next
// physics step, so a frame's time passes first (the bubble's clock: at
// once): a reply sent as the master's last step returned was, now and
// then, still queued when BeamNG was stopped at once, and missing from
// its receive log (TestShortLastStep under the race detector).
func (r *rig) stopBeamNG() emulator.Summary {
	time.Sleep(100 * time.Millisecond)
	synctest.Wait()
	r.cancel()
	return <-r.emDone
}

// output is an output's value in an answer.
func (r *rig) output(t *testing.T, a answer, name string) float64 {
	t.Helper()
	for i, vr := range r.s.outs {
		if r.iface.Vars[vr].Name == name {
			return a.outputs[i]
		}
	}
	t.Fatalf("no output %s", name)
	return 0
}

// replies are BeamNG's received log: the value of column col by the id of
// the message each reply answered (reply ids: next).
func (r *rig) replies(t *testing.T, col string) map[int]float64 {
	t.Helper()
	out := map[int]float64{}
	for _, rp := range r.received(t, col) {
		out[rp.id-1] = rp.value
	}
	return out
}

// receivedReply is a reply as BeamNG's receive log has it: its id and one
// column's value.
type receivedReply struct {
	id    int
	value float64
}

// received is every reply BeamNG received, in order, with column col.
func (r *rig) received(t *testing.T, col string) []receivedReply {
	t.Helper()
	recs := recordingtest.Read(t, filepath.Join(r.logs, emulator.ReceiveLogName))
	at := -1
	for i, h := range recs[0] {
		if h == col {
			at = i
		}
	}
	var out []receivedReply
	for _, rec := range recs[1:] {
		var rp receivedReply
		rp.id, _ = strconv.Atoi(rec[1])
		rp.value, _ = strconv.ParseFloat(rec[at], 64)
		out = append(out, rp)
	}
	return out
}

const pedals = "../../examples/cruise-pedals.json"

// A step of h couples BeamNG's messages of [t, t+h): each gets the
// master's inputs of that step, held over it; the outputs at t+h are
// BeamNG's message of t+h, whose reply waits for the next step. The
// master's time starts at its own start time, whatever BeamNG's.
func TestStepsCoupleTheirMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		const start, p = 100.0, 0.005
		a := r.initialize(t, start, nil)
		if a.result != statusOK || a.time != start || r.output(t, a, "out4.time") != 0 {
			t.Fatalf("initialize: %+v", a)
		}
		// Steps of 3, 1 and 2 periods, each with its own throttle.
		at, n := start, 0
		throttle := []float64{0.1, 0.2, 0.3, 0.4}
		for i, m := range []int{3, 1, 2, 3} {
			h := float64(m) * p
			a = r.step(t, at, h, map[string]float64{"in1.throttle": throttle[i]})
			n += m
			at = start + float64(n)*p
			if a.result != statusOK || math.Abs(a.time-at) > 1e-9 {
				t.Fatalf("step %d: %+v", i, a)
			}
			if got := r.output(t, a, "out4.time"); math.Abs(got-float64(n)*p) > 1e-12 {
				t.Errorf("step %d ends at BeamNG's message of %v s, want %v s", i, got, float64(n)*p)
			}
		}
		if a := r.terminate(t); a.result != statusOK || !a.said("healthy") {
			t.Errorf("terminate: %+v", a)
		}
		r.stopBeamNG()
		got := r.replies(t, "A1")
		want := []float64{0.1, 0.1, 0.1, 0.2, 0.3, 0.3, 0.4, 0.4, 0.4}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("message %d: BeamNG got throttle %v, want %v (the input of its step)", id, got[id], w)
			}
		}
		if got[9] != 0 {
			t.Errorf("the message after the last step got throttle %v: want neutral controls once the master terminated", got[9])
		}
	})
}

// A step that no BeamNG message fits (not a whole number of BeamNG's
// periods and not the last, of no length, infinite, not a number, beyond
// any message BeamNG sends, past the stop time), or that does not start
// where the last ended, is refused with the reason; so are a step before
// initialization, a start time no BeamNG time can be, and bad parameters.
func TestRefusals(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name   string
		params map[string]any
		step   [2]float64
		want   string
	}{
		{"h not whole periods", nil, [2]float64{0, 0.0075}, "h must be a whole number of BeamNG's 5 ms periods"},
		{"h of 0", nil, [2]float64{0, 0}, "a step of h = 0 s: a step is longer than 0"},
		{"h negative", nil, [2]float64{0, -0.005}, "a step of h = -0.005 s: a step is longer than 0"},
		{"h infinite", nil, [2]float64{0, inf}, "a step of h = +Inf s: a step is a whole number of BeamNG's 5 ms periods"},
		{"h not a number", nil, [2]float64{0, nan}, "a step of h = NaN s: a step is a whole number"},
		{"h of 1e17 s", nil, [2]float64{0, 1e17}, "a step of h = 1e+17 s from t = 0 s ends past 1000000000 s (about 31 years), further than any BeamNG message"},
		{"h of 1e300 s", nil, [2]float64{0, 1e300}, "a step of h = 1e+300 s from t = 0 s ends past"},
		{"t infinite", nil, [2]float64{inf, 0.005}, "a step from t = +Inf s, but the FMU is at 0 s"},
		{"t not a number", nil, [2]float64{nan, 0.005}, "a step from t = NaN s, but the FMU is at 0 s"},
		{"not contiguous", nil, [2]float64{0.01, 0.005}, "a step from t = 0.01 s, but the FMU is at 0 s"},
		{"a bad address", map[string]any{"localIP": "beamng.local"}, [2]float64{}, `parameter localIP "beamng.local": expected an IPv4 address`},
		{"a bad port", map[string]any{"remotePort": 70000.0}, [2]float64{}, "parameter remotePort 70000: expected a port from 0 to 65535"},
		{"a bad timeout", map[string]any{"silenceTimeout": -1.0}, [2]float64{}, "parameter silenceTimeout -1"},
		{"a process timeout under a second", map[string]any{"processTimeout": 0.5}, [2]float64{}, "parameter processTimeout 0.5: expected 0 (for ever) or at least 1 s"},
		{"a recording over the config", map[string]any{"recordFile": "RES/config.json"}, [2]float64{}, "parameter recordFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := open(t, pedals)
				if f, ok := tc.params["recordFile"].(string); ok {
					tc.params["recordFile"] = strings.Replace(f, "RES", r.s.resources, 1)
				}
				a := r.initializeUntil(t, 0, 10, tc.params) // a stop time: a shorter step is not the last
				if tc.params != nil {
					if a.result != statusError || !a.said(tc.want) {
						t.Fatalf("initialize: %+v, want an error saying %q", a, tc.want)
					}
					return
				}
				a = r.step(t, tc.step[0], tc.step[1], nil)
				if a.result != statusError || !a.said(tc.want) {
					t.Errorf("step: %+v, want an error saying %q", a, tc.want)
				}
				if a := r.step(t, 0, 0.005, nil); a.result != statusError || !a.said("failed before") {
					t.Errorf("a step after the refusal: %+v", a)
				}
				r.terminate(t)
				r.stopBeamNG()
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		if a := r.step(t, 0, 0.005, nil); a.result != statusError || !a.said("a step before initialization") {
			t.Errorf("a step before initialization: %+v", a)
		}
	})
}

// BeamNG lost in the middle of a step: the step fails after
// silenceTimeout with the reason, and when BeamNG sends again its
// messages get neutral controls, never the master's last inputs. Every
// log line reaches the master while the step waits.
func TestLostBeamNG(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		if err := emulator.ParseFault("pause=15s@1s", &r.faults); err != nil {
			t.Fatal(err)
		}
		r.initialize(t, 0, nil)
		var a answer
		at := 0.0
		for n := 0; n < 400; n++ {
			began := time.Now()
			a = r.step(t, at, 0.005, map[string]float64{"in1.throttle": 0.5})
			if a.result != statusOK {
				if waited := time.Since(began); waited < 10*time.Second || waited > 11*time.Second {
					t.Errorf("the step failed after %v, want the silence timeout, 10 s", waited)
				}
				break
			}
			at = a.time
		}
		if a.result != statusError || !a.said("BeamNG lost: BeamNG sent no message for 10s (parameter silenceTimeout)") || !a.said("BeamNG went silent") {
			t.Fatalf("the step during BeamNG's pause: %+v", a)
		}
		time.Sleep(10 * time.Second) // BeamNG's pause ends; it sends again
		end := r.terminate(t)
		if end.result != statusWarning || !end.said("not healthy") {
			t.Errorf("terminate after BeamNG was lost: %+v", end)
		}
		r.stopBeamNG()
		got := r.replies(t, "A1")
		lost := int(math.Round(at/0.005)) + 1
		after := 0
		for id, v := range got {
			if id > lost && v != 0 {
				t.Errorf("message %d, after BeamNG was lost: throttle %v, want neutral", id, v)
			}
			if id > lost {
				after++
			}
		}
		if after == 0 {
			t.Error("BeamNG sent nothing after its pause")
		}
	})
}

// BeamNG starting its coupling again (its ids from 0, a new port): the
// FMU's time goes on, the step completes with the new coupling's
// messages, and it is said.
func TestBeamNGRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		if err := emulator.ParseFault("restart@1s", &r.faults); err != nil {
			t.Fatal(err)
		}
		r.initialize(t, 0, nil)
		at, restarted := 0.0, false
		for n := 0; n < 400; n++ {
			a := r.step(t, at, 0.005, map[string]float64{"in1.throttle": 0.2})
			if a.result != statusOK {
				t.Fatalf("step %d: %+v", n, a)
			}
			restarted = restarted || a.said("BeamNG started its coupling again")
			if math.Abs(a.time-(at+0.005)) > 1e-9 {
				t.Fatalf("step %d ended at %v, want %v", n, a.time, at+0.005)
			}
			at = a.time
		}
		if !restarted {
			t.Error("BeamNG's restart was not said")
		}
		r.terminate(t)
		if s := r.stopBeamNG(); s.Stalls != 0 || s.Restarts != 1 {
			t.Errorf("BeamNG's side: %d stalls, %d restarts", s.Stalls, s.Restarts)
		}
	})
}

// A master shortens its last step to land on a stop time that is not a
// whole number of periods after the start (fmusim and FMPy do): the step
// is accepted, couples BeamNG's messages within it (the message of its
// start when it is shorter than a period), says so once, and the FMU's
// time is the stop time; its outputs are the last of those messages'.
// Without a stop time from the master (fmusim gives it only when asked),
// a shorter step is taken for the last. A step after it, a short step
// that does not end at the stop time given, or one past it, is refused,
// saying why.
func TestShortLastStep(t *testing.T) {
	const p = 0.005
	for _, tc := range []struct {
		name     string
		stop     float64
		steps    [][2]float64 // t, h
		throttle []float64    // each step's
		ends     float64      // BeamNG's time of the outputs at the stop time
		want     []float64    // the throttle BeamNG got for each message, then neutral
		said     string
	}{
		{"shorter than a period", 0.0275, [][2]float64{{0, 0.025}, {0.025, 0.0025}}, []float64{0.1, 0.2}, 0.025,
			[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0},
			"the last step, from t = 0.025 s to the stop time 0.0275 s, is shorter than BeamNG's 5 ms period: it coupled BeamNG's message of 0.025 s only"},
		{"a period and a half", 0.0275, [][2]float64{{0, 0.02}, {0.02, 0.0075}}, []float64{0.1, 0.3}, 0.025,
			[]float64{0.1, 0.1, 0.1, 0.1, 0.3, 0.3, 0},
			"it coupled BeamNG's messages of 0.02 s to 0.025 s"},
		{"no stop time given", -1, [][2]float64{{0, 0.025}, {0.025, 0.0025}}, []float64{0.1, 0.2}, 0.025,
			[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0},
			"the last step, from t = 0.025 s to the stop time 0.0275 s, is shorter than BeamNG's 5 ms period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := open(t, pedals)
				r.initializeUntil(t, 0, tc.stop, nil)
				var a answer
				for i, s := range tc.steps {
					a = r.step(t, s[0], s[1], map[string]float64{"in1.throttle": tc.throttle[i]})
					if a.result != statusOK {
						t.Fatalf("step %v: %+v", s, a)
					}
				}
				if a.time != 0.0275 || r.output(t, a, "out4.time") != tc.ends || !a.said(tc.said) {
					t.Errorf("the last step: time %v, outputs of BeamNG's %v s, want 0.0275 s and %v s, saying %q: %+v",
						a.time, r.output(t, a, "out4.time"), tc.ends, tc.said, a)
				}
				if a := r.terminate(t); a.result != statusOK || !a.said("healthy") {
					t.Errorf("terminate: %+v", a)
				}
				r.stopBeamNG()
				got := r.replies(t, "A1")
				for id, w := range tc.want {
					if got[id] != w {
						t.Errorf("message %d: BeamNG got throttle %v, want %v", id, got[id], w)
					}
				}
			})
		})
	}
	for _, tc := range []struct {
		name  string
		steps [][2]float64
		want  string
	}{
		{"a short step not the last", [][2]float64{{0, 0.0025}}, "h must be a whole number of BeamNG's 5 ms periods (0.005 s, 0.01 s, 0.02 s…): set the master's communication step size so; only the last step, which ends at the stop time (0.0275 s), may be shorter"},
		{"past the stop time", [][2]float64{{0, 0.03}}, "a step of h = 0.03 s from t = 0 s ends at 0.03 s, past the stop time 0.0275 s the master set"},
		{"a step after the last", [][2]float64{{0, 0.0275}, {0.0275, 0.005}}, "a step from t = 0.0275 s, but the FMU reached the stop time 0.0275 s with the last step: no step goes past it"},
		{"a step after a short one, with no stop time", [][2]float64{{0, 0.0025}, {0.0025, 0.005}}, "a step from t = 0.0025 s, but the step before ended at 0.0025 s, between BeamNG's messages (not a whole number of BeamNG's 5 ms periods), which only the last step may"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := open(t, pedals)
				stop := 0.0275
				if strings.Contains(tc.name, "no stop time") {
					stop = -1
				}
				r.initializeUntil(t, 0, stop, nil)
				var a answer
				for _, s := range tc.steps {
					a = r.step(t, s[0], s[1], nil)
				}
				if a.result != statusError || !a.said(tc.want) {
					t.Errorf("%+v, want an error saying %q", a, tc.want)
				}
				r.terminate(t)
				r.stopBeamNG()
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		for _, c := range [][2]float64{{math.NaN(), 1}, {2e9, 3e9}, {1, 0.5}} {
			if a := r.initializeUntil(t, c[0], c[1], nil); a.result != statusError || !a.said("time") {
				t.Errorf("start %v, stop %v: %+v", c[0], c[1], a)
			}
			r = open(t, pedals)
		}
	})
}

// A master slower than BeamNG's 2 s wait: BeamNG stalls and goes on, the
// coupling re-bases its reply ids and carries on stepping, and the run is
// not healthy. A master slower than a period but within 2 s only slows
// BeamNG down (lockstep): healthy.
func TestSlowMaster(t *testing.T) {
	for _, tc := range []struct {
		pause   time.Duration
		healthy bool
	}{{1500 * time.Millisecond, true}, {3 * time.Second, false}} {
		t.Run(tc.pause.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := open(t, pedals)
				r.initialize(t, 0, nil)
				at := 0.0
				for n := range 400 {
					if n == 200 {
						time.Sleep(tc.pause) // the master busy between two steps
					}
					a := r.step(t, at, 0.005, map[string]float64{"in1.throttle": 0.3})
					if a.result != statusOK {
						t.Fatalf("step %d: %+v", n, a)
					}
					at = a.time
				}
				end := r.terminate(t)
				s := r.stopBeamNG()
				if tc.healthy {
					if end.result != statusOK || s.Stalls != 0 {
						t.Errorf("terminate %+v, BeamNG's stalls %d: want a healthy run", end, s.Stalls)
					}
					return
				}
				if end.result != statusWarning || !end.said("BeamNG stalled 1 times") || s.Stalls != 1 {
					t.Errorf("terminate %+v, BeamNG's stalls %d: want one stall, said", end, s.Stalls)
				}
			})
		})
	}
}

// A reset ends the coupling as a terminate does (neutral controls); the
// FMU is then initialized again, BeamNG's next message its new start.
// BeamNG ran on in between, its window with it, and applies only a reply
// whose id is above the highest it applied: the new run goes on where the
// reset let go (the socket, where BeamNG's next message waited, and the
// reply ids), so BeamNG applies its first reply, never waits 2 s, and no
// reply id is used twice for different controls.
func TestReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		r.initialize(t, 0, nil)
		at := 0.0
		for range 100 {
			at = r.step(t, at, 0.005, map[string]float64{"in1.throttle": 0.4}).time
		}
		if a := r.ask(t, []byte{reqReset}); a.result != statusOK || !a.said("the master reset the FMU") {
			t.Fatalf("reset: %+v", a)
		}
		w := writer{}
		w.u8(reqInit)
		w.f64(0)
		w.u8(0)
		w.f64(0)
		w.u32(0)
		a := r.ask(t, w.b) // BeamNG still runs: its next message comes
		if a.result != statusOK || a.time != 0 {
			t.Fatalf("initialized again: %+v", a)
		}
		begun := r.output(t, a, "out4.time")
		for range 100 {
			a = r.step(t, a.time, 0.005, map[string]float64{"in1.throttle": 0.2})
			if a.result != statusOK {
				t.Fatalf("%+v", a)
			}
		}
		if got := r.output(t, a, "out4.time"); math.Abs(got-begun-0.5) > 1e-9 {
			t.Errorf("100 steps after the reset BeamNG is at %v s, want %v s", got, begun+0.5)
		}
		r.terminate(t)
		sum := r.stopBeamNG()
		if sum.Stalls != 0 {
			t.Errorf("BeamNG waited 2 s for a reply %d times: want none, the new run answering its next message", sum.Stalls)
		}
		// The reply ids go on: each the one before or the next. The same
		// id twice is the neutral reply sent again as the coupling let go,
		// which BeamNG drops (it applied the first), and nothing else.
		recv := r.received(t, "A1")
		repeats := 0
		for i := 1; i < len(recv); i++ {
			prev, rp := recv[i-1], recv[i]
			switch {
			case rp.id == prev.id && rp.value == prev.value && rp.value == 0:
				repeats++
			case rp.id != prev.id+1:
				t.Fatalf("BeamNG got reply id %d (throttle %v) after %d (throttle %v): want the ids to go on by one across the reset", rp.id, rp.value, prev.id, prev.value)
			}
		}
		if sum.Rejected != int64(repeats) {
			t.Errorf("BeamNG dropped %d replies: want only the %d neutral ones sent again", sum.Rejected, repeats)
		}
		got := r.replies(t, "A1")
		if got[99] != 0.4 || got[100] != 0 {
			t.Errorf("around the reset BeamNG got throttle %v, %v: want the master's, then neutral", got[99], got[100])
		}
		// After the neutral replies, the new run's first inputs.
		i := slices.IndexFunc(recv, func(rp receivedReply) bool { return rp.id > 101 && rp.value != 0 })
		switch {
		case i < 0:
			t.Error("BeamNG got no reply of the new run")
		case recv[i].value != 0.2 || recv[i-1].value != 0:
			t.Errorf("the first reply after the reset's neutral ones: %+v after %+v, want the master's new inputs right after them", recv[i], recv[i-1])
		}
	})
}

// Initialization waits for BeamNG's first message up to connectTimeout,
// then fails, saying how to start BeamNG's side.
func TestConnectTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		w := writer{}
		w.u8(reqInit)
		w.f64(0)
		w.u8(0)
		w.f64(0)
		v, _ := r.iface.Variable("connectTimeout")
		w.u32(1)
		w.u32(v.VR)
		w.f64(5)
		began := time.Now()
		a := r.ask(t, w.b) // no BeamNG
		if a.result != statusError || !a.said("BeamNG sent no message in 5s (parameter connectTimeout)") || !a.said("tech_vehicleSystemsCoupling.startCoupling") {
			t.Errorf("%+v", a)
		}
		if waited := time.Since(began); waited != 5*time.Second {
			t.Errorf("waited %v, want 5 s", waited)
		}
		r.terminate(t)
	})
}

// A call that waits (for BeamNG's first message, for a step's messages)
// beats at least every beatEvery, from its start to its end, however long
// it waits: the shim tells a child that waits for BeamNG from one that
// does not run. Ending a run beats too. The answer to open names the
// parameter processTimeout, which bounds the shim's waits.
func TestBeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		var beats []time.Time
		r.s.beat = func() { beats = append(beats, time.Now()) }
		// gaps checks the beats of a call that began at from and answered
		// at to: none more than beatEvery apart.
		gaps := func(what string, from, to time.Time) {
			t.Helper()
			last := from
			for _, b := range append(beats, to) {
				if b.Sub(last) > beatEvery {
					t.Errorf("%s: no beat from %v to %v after its start", what, last.Sub(from), b.Sub(from))
				}
				last = b
			}
			beats = nil
		}
		if err := emulator.ParseFault("pause=15s@0.5s", &r.faults); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		a := r.initialize(t, 0, map[string]any{"connectTimeout": 3.0, "silenceTimeout": 2.0})
		gaps("initialization", began, time.Now())
		if a.result != statusOK {
			t.Fatalf("initialize: %+v", a)
		}
		at := 0.0
		for n := 0; n < 200; n++ {
			began = time.Now()
			if a = r.step(t, at, 0.005, nil); a.result != statusOK {
				break
			}
			beats = nil
			at = a.time
		}
		// BeamNG paused: the step waited 2 s for it, beating.
		if !a.said("parameter silenceTimeout") || time.Since(began) < 2*time.Second {
			t.Fatalf("the step during BeamNG's pause: %+v", a)
		}
		gaps("a step BeamNG's pause held", began, time.Now())
		began = time.Now()
		r.terminate(t)
		gaps("terminate", began, time.Now())
		r.stopBeamNG()
	})
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		w := writer{}
		w.u8(reqOpen)
		w.u32(fmuexport.Protocol)
		w.u32(2)
		w.str("rig")
		w.str(r.iface.Token)
		w.str(r.s.resources)
		w.u8(0)
		rd := reader{b: r.s.handle(w.b)}
		rd.u8()
		for range rd.u32() {
			rd.u8()
			rd.str()
			rd.str()
		}
		if vr, v := rd.u32(), r.iface.Vars[0]; int(vr) >= len(r.iface.Vars) || r.iface.Vars[vr].Name != "processTimeout" {
			t.Errorf("open names value reference %d as processTimeout's (%s is 0)", vr, v.Name)
		}
	})
}

// A call the shim gave up on (interrupted while initialization waits for
// a BeamNG that never comes, connectTimeout 0) is dropped within a beat
// of the shim's next request, which is then served: it used to wait on
// until the coupling logged something.
func TestSupersededCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		var gaveUp atomic.Bool
		r.s.superseded = gaveUp.Load
		v, _ := r.iface.Variable("connectTimeout")
		w := writer{}
		w.u8(reqInit)
		w.f64(0)
		w.u8(0)
		w.f64(0)
		w.u32(1)
		w.u32(v.VR)
		w.f64(0)
		done := make(chan []byte, 1)
		go func() {
			a := r.s.handle(w.b)
			for a != nil && a[0] == resultPending { // its log lines, as the shim takes them
				a = r.s.handle([]byte{reqContinue})
			}
			done <- a
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("initialization ended without BeamNG")
		}
		gaveUp.Store(true)
		began := time.Now()
		select {
		case a := <-done:
			if a != nil {
				t.Errorf("a call the shim gave up on answered %x", a)
			}
		case <-time.After(time.Hour):
			t.Fatal("the call went on for an hour after the shim gave up on it")
		}
		if took := time.Since(began); took > beatEvery {
			t.Errorf("the call was dropped %v after the shim gave up, want within %v", took, beatEvery)
		}
		gaveUp.Store(false)
		if a := r.terminate(t); a.result == statusError || !a.said("the coupling ended") {
			t.Errorf("terminate after it: %+v", a)
		}
	})
}

// A Gen 2 BeamNG against a Gen 1 FMU: the coupling diagnoses the wrong
// message size at BeamNG's first message, and initialization fails with
// that diagnosis within a second of it, not after connectTimeout (60 s).
func TestProtocolMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		gen2, _, err := fmuexport.Load(resources(t, "../../examples/gen2-cruise.json"))
		if err != nil {
			t.Fatal(err)
		}
		r.plan.Vehicles[0].CSV = gen2.Vehicles[0].CSV // BeamNG runs the Gen 2 coupling
		done := make(chan answer, 1)
		go func() {
			done <- r.ask(t, []byte{reqInit, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		}()
		synctest.Wait()
		began := time.Now()
		r.startBeamNG(t)
		a := <-done
		if waited := time.Since(began); waited > time.Second {
			t.Errorf("initialization failed %v after BeamNG's first message, want within a second", waited)
		}
		if a.result != statusError || !a.said("BeamNG speaks another protocol than the FMU's config: dropped datagrams from BeamNG's address of a length this coupling does not send") ||
			!a.said("BeamNG runs the Gen 2 co-simulation coupling") {
			t.Errorf("%+v", a)
		}
		r.terminate(t)
		r.stopBeamNG()
	})
}

// Several vehicles: every vehicle's outputs, each vehicle's controls to
// its own BeamNG.
func TestSeveralVehicles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, "../../examples/follow.json")
		r.initialize(t, 0, nil)
		var a answer
		at := 0.0
		for range 200 {
			a = r.step(t, at, 0.01, map[string]float64{"ego.throttle": 0.6, "lead.throttle": 0})
			if a.result != statusOK {
				t.Fatalf("%+v", a)
			}
			at = a.time
		}
		if ego, lead := r.output(t, a, "ego.groundspeed"), r.output(t, a, "lead.groundspeed"); ego < 1 || lead != 0 {
			t.Errorf("after 2 s: the ego at %v m/s, the lead at %v m/s; want the ego moving, the lead at rest", ego, lead)
		}
		if gap := r.output(t, a, "ego.gap:lead"); !(gap > 0 && gap < 40) {
			t.Errorf("the gap %v m: want less than the 40 m they started apart", gap)
		}
		r.terminate(t)
		r.stopBeamNG()
	})
}

// The master's process ends without terminating: BeamNG gets neutral
// controls.
func TestMasterGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := open(t, pedals)
		gone := make(chan struct{})
		r.s.gone = gone
		r.initialize(t, 0, nil)
		at := 0.0
		for range 50 {
			at = r.step(t, at, 0.005, map[string]float64{"in1.throttle": 0.7}).time
		}
		close(gone)
		r.s.masterGone()
		time.Sleep(time.Second)
		r.stopBeamNG()
		got := r.replies(t, "A1")
		if last := got[50]; last != 0 {
			t.Errorf("the message the master never stepped past got throttle %v: want neutral", last)
		}
		if got[49] != 0.7 {
			t.Errorf("the last stepped message got %v, want the master's 0.7", got[49])
		}
	})
}

// The recording names a file: every message recorded, CSV or MDF 4 as the
// name says.
func TestRecording(t *testing.T) {
	for _, name := range []string{"rig.csv", "rig.mf4"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := open(t, pedals)
				file := filepath.Join(t.TempDir(), name)
				r.initialize(t, 0, map[string]any{"recordFile": file})
				at := 0.0
				for range 100 {
					at = r.step(t, at, 0.005, map[string]float64{"in1.throttle": 0.3}).time
				}
				a := r.terminate(t)
				r.stopBeamNG()
				// Messages 0 to 100 are the master's 100 steps; BeamNG's
				// messages after the end get neutral controls until the
				// coupling has stopped, which takes as long as it takes:
				// each is recorded too.
				n := a.number("the coupling ended", "messages")
				if n < 101 || !a.said("recorded file="+file+" rows="+strconv.Itoa(n)+" lost=0") {
					t.Errorf("want every one of at least 101 messages recorded: %+v", a)
				}
				if st, err := os.Stat(file); err != nil || st.Size() < 1000 {
					t.Errorf("the recording: %v", err)
				}
				if filepath.Ext(name) == ".csv" {
					checkThrottles(t, file, n)
				}
			})
		})
	}
}

// checkThrottles reads a CSV recording of n rows whose master held the
// throttle at 0.3 for 100 steps: BeamNG got 0.3 on messages 0 to 99, and
// neutral controls from the message that ended the last step on.
func checkThrottles(t *testing.T, file string, n int) {
	t.Helper()
	rows := recordingtest.Read(t, file)
	if len(rows) != n+1 {
		t.Fatalf("%s: %d rows; want a header and %d rows", file, len(rows), n)
	}
	col := slices.Index(rows[0], "in1.throttle")
	if col < 0 {
		t.Fatalf("%s: no column in1.throttle in %q", file, rows[0])
	}
	for i, row := range rows[1:] {
		want := "0.3"
		if i >= 100 {
			want = "0"
		}
		if row[col] != want {
			t.Errorf("row %d: in1.throttle %s, want %s", i, row[col], want)
		}
	}
}

// open refuses a library of another protocol, a token of another FMU, a
// resources folder without the config, each saying why.
func TestOpenRefusals(t *testing.T) {
	res := resources(t, pedals)
	_, in, err := fmuexport.Load(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		protocol, major  uint32
		token, resources string
		want             string
	}{
		{"another protocol", 99, 2, in.Token, res, "the FMU's library speaks protocol 99"},
		{"FMI 1", fmuexport.Protocol, 1, in.Token, res, "FMI 1: expected 2 or 3"},
		{"another FMU's token", fmuexport.Protocol, 2, "{x}", res, `with token "{x}", but its config makes`},
		{"no config", fmuexport.Protocol, 3, in.Token, t.TempDir(), "the config the FMU carries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(1<<16, nil)
			w := writer{}
			w.u8(reqOpen)
			w.u32(tc.protocol)
			w.u32(tc.major)
			w.str("rig")
			w.str(tc.token)
			w.str(tc.resources)
			w.u8(0)
			rd := reader{b: s.handle(w.b)}
			result := rd.u8()
			var msgs []string
			for range rd.u32() {
				rd.u8()
				rd.str()
				msgs = append(msgs, rd.str())
			}
			if result != statusError || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1], tc.want) {
				t.Errorf("result %d, %q: want an error saying %q", result, msgs, tc.want)
			}
		})
	}
}

// Requests the shim would never send are refused, never a crash: every
// decoder checks every length.
func FuzzRequests(f *testing.F) {
	w := writer{}
	w.u8(reqStep)
	w.f64(0)
	w.f64(0.005)
	w.u32(1)
	w.f64(0.5)
	f.Add(w.b)
	f.Add([]byte{reqOpen, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'})
	f.Add([]byte{reqInit, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) == 0 {
			return
		}
		body := p[1:]
		decodeOpen(body)
		decodeInit(body, func(vr uint32) (bool, bool) { return vr%3 == 0, vr < 10 })
		var q stepRequest
		decodeStep(body, int(p[0]%8), &q)
		s := newServer(1<<12, nil)
		if a := s.handle(p); len(a) < 5 {
			t.Fatalf("an answer of %d bytes", len(a))
		}
	})
}

// The coupling's per-message path allocates nothing: a message within a
// step gets the held inputs.
func TestStepAllocs(t *testing.T) {
	b := newBridge(0.005, []ports.Element{{Port: 1, Elem: 0}}, []ports.Element{{Port: 1, Elem: 0}}, nil)
	b.started, b.end = true, 1<<40
	outs, ins := [][]float64{{0}, {1}}, [][]float64{{1}, {0}}
	tm := 0.0
	if n := testing.AllocsPerRun(1000, func() {
		tm += 0.005
		b.Step(tm, outs, ins)
	}); n != 0 {
		t.Errorf("a message within a step allocates %v times", n)
	}
}

// The most inputs and outputs an export allows fit the shared memory the
// shim makes (its REQ_CAP and ANS_CAP): a step's request with every input,
// the initialize request with every input and the parameters (a
// recording's path of 4 KiB), and a step's answer with every output and
// room for its log lines: half the answer, less the answer's header.
func TestLimitsFitTheMailbox(t *testing.T) {
	src, err := shim.Sources.ReadFile("c/shim.c")
	if err != nil {
		t.Fatal(err)
	}
	capOf := func(name string) int {
		m := regexp.MustCompile(`#define ` + name + ` \((\d+)u \* (\d+)u\)`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("shim.c defines no %s as expected", name)
		}
		a, _ := strconv.Atoi(string(m[1]))
		b, _ := strconv.Atoi(string(m[2]))
		return a * b
	}
	req, ans := capOf("REQ_CAP"), capOf("ANS_CAP")
	in, out := fmuexport.MaxInputs, fmuexport.MaxOutputs
	step := 1 + 8 + 8 + 4 + 8*in
	params := 4 * (2*(4+4+15) + 2*(4+8)) // four vehicles' addresses and ports
	init := 1 + 8 + 1 + 8 + 4 + in*(4+8) + params + 3*(4+8) + 4 + 4 + 4096
	answer := 1 + 4 + 8 + 4 + 8*out
	if step > req || init > req || ans-answer < ans/2-32 {
		t.Errorf("step request %d, initialize %d bytes (of %d); step answer %d bytes (of %d)", step, init, req, answer, ans)
	}
}

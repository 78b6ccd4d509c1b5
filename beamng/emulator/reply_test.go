package emulator

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/beamngtest"
)

// scripted is a transport with no goroutines: it answers every message at
// once, with the reply a script builds for that message id. It is the
// fastest possible client, for unit tests and the step benchmark.
type scripted struct {
	reply   func(id float64, r []float64)
	msg     []float64
	r       []float64
	out     []byte
	pending int
	sent    [][]float64 // every message, when keep is set
	keep    bool
}

func newScripted(reply func(id float64, r []float64)) *scripted {
	return &scripted{reply: reply, msg: make([]float64, beamng.StateLen), r: make([]float64, beamng.ControlLen), out: make([]byte, 8*beamng.ControlLen)}
}

func (s *scripted) Send(b []byte) error {
	if beamng.Decode(s.msg, b) != nil {
		return nil
	}
	if s.keep {
		s.sent = append(s.sent, append([]float64(nil), s.msg...))
	}
	for i := range s.r {
		s.r[i] = math.NaN()
	}
	s.r[0] = s.msg[0] + 1
	if s.reply != nil {
		s.reply(s.msg[0], s.r)
	}
	b, _ = beamng.Encode(s.out, s.r)
	s.pending = len(b)
	return nil
}

func (s *scripted) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	if s.pending == 0 {
		return 0, false
	}
	n := copy(buf, s.out[:s.pending])
	s.pending = 0
	return n, true
}

func (s *scripted) Close() error { return nil }

func run(t *testing.T, cfg Config, link Transport) (*Emulator, Summary) {
	t.Helper()
	cfg.FreeRunning = true
	e, err := New(cfg, link)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e, sum
}

// Gen 1 reply handling (spec §2.3): NaN keeps the previous value, gear is
// ignored, drive mode ≥ 0.5 selects wheel torques, braking torque is stored
// negated, wheels in FL FR RL RR order.
func TestReplyHandling(t *testing.T) {
	link := newScripted(func(id float64, r []float64) {
		switch {
		case id < 5:
			r[1], r[2], r[3], r[4] = 0.6, 0.1, -0.25, 3 // throttle, brake, steering, gear
		case id < 10:
			// All NaN: everything stays.
		case id < 15:
			r[1] = 7 // out of range: clamped as BeamNG's input system does
			for w := range 4 {
				r[5+w] = -float64(100 * (w + 1)) // braking torque, sent negative
				r[9+w] = float64(10 * (w + 1))   // propulsion torque
			}
			r[13] = 0.5
		default:
			r[13] = 0.49
		}
	})
	e, _ := run(t, Config{SimulinkTime: 0.0005, Steps: 3}, link)
	v := e.Vehicle()
	if v.Throttle != 0.6 || v.Brake != 0.1 || v.Steering != -0.25 || v.TorqueMode {
		t.Fatalf("pedals not applied: %+v", v)
	}
	if v.Gear != 1 {
		t.Errorf("gear input shifted to %d; BeamNG ignores it", v.Gear)
	}
	e.cfg.Steps = 8
	e.Run(context.Background())
	if v.Throttle != 0.6 || v.Brake != 0.1 || v.Steering != -0.25 {
		t.Errorf("NaN fields changed values: %+v", v)
	}
	e.cfg.Steps = 13
	e.Run(context.Background())
	if !v.TorqueMode || v.Throttle != 1 {
		t.Errorf("drive mode 0.5 / clamped throttle: torque mode %v throttle %v", v.TorqueMode, v.Throttle)
	}
	if v.DesiredBraking != [4]float64{100, 200, 300, 400} || v.Propulsion != [4]float64{10, 20, 30, 40} {
		t.Errorf("wheel torques %v %v, want braking stored negated and FL FR RL RR order", v.DesiredBraking, v.Propulsion)
	}
	e.cfg.Steps = 20
	e.Run(context.Background())
	if v.TorqueMode {
		t.Error("drive mode 0.49 did not select pedals")
	}
}

// A reply whose id is not above the highest applied one is dropped whole,
// an id ≤ 0 is never applied, and after a blocking receive a rejected reply
// sends nothing (unless maxRecvId is still 0), so the next step blocks
// again. With sendSkips 0 and an instant client, step by step:
//
//	0: send id 0                          reply id 0
//	1: block, get 0: rejected, max 0: send id 1     reply -3
//	2: block, get -3: rejected, max 0: send id 2    reply 2
//	3: block, get 2: accepted (max 2): send id 3    reply 2
//	4: block, get 2: rejected, max 2: no send
//	5: block, nothing: 2 s timeout, sendCtr and maxRecvId reset
//	6: send id 4                          reply 1
//	7: block, get 1: accepted (max 1): send id 5
func TestReplyIDRule(t *testing.T) {
	link := newScripted(func(id float64, r []float64) {
		r[0] = map[float64]float64{0: 0, 1: -3, 2: 2, 3: 2, 4: 1, 5: math.NaN()}[id]
		r[1] = id / 10
	})
	e, sum := run(t, Config{SimulinkTime: 0.0005, Steps: 8}, link)
	if sum.Sent != 6 || sum.Received != 5 || sum.Accepted != 2 || sum.Rejected != 3 || sum.Stalls != 1 || sum.NextID != 6 {
		t.Errorf("%v", sum)
	}
	if th := e.Vehicle().Throttle; th != 0.4 {
		t.Errorf("throttle %v, want 0.4 from the last accepted reply", th)
	}
}

// Datagrams of odd sizes: a ragged tail is ignored, a short reply applies
// what it carries, less than one double is nothing at all.
func TestOddSizedReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bside, cside := Pipe(16)
		e, err := New(Config{SimulinkTime: 0.0005, FreeRunning: true, Steps: 4, StepCost: time.Millisecond}, bside)
		if err != nil {
			t.Fatal(err)
		}
		short := make([]byte, 8*2+3) // id 1, throttle 0.3, three stray bytes
		binary.LittleEndian.PutUint64(short[0:], math.Float64bits(1))
		binary.LittleEndian.PutUint64(short[8:], math.Float64bits(0.3))
		cside.Send([]byte{1, 2, 3})
		cside.Send(short)
		sum, _ := e.Run(context.Background())
		if sum.Malformed != 1 || sum.Accepted != 1 || e.Vehicle().Throttle != 0.3 {
			t.Errorf("malformed %d accepted %d throttle %v", sum.Malformed, sum.Accepted, e.Vehicle().Throttle)
		}
	})
}

func TestDebugLogs(t *testing.T) {
	dir := t.TempDir()
	_, sum := run(t, Config{SimulinkTime: 0.005, Steps: 100, DebugLogs: dir}, newScripted(nil))
	read := func(name string) [][]string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			rows = append(rows, strings.Split(l, ","))
		}
		return rows
	}
	steps, sends, recvs := read(StepsLogName), read(SendLogName), read(ReceiveLogName)
	if len(steps) != 101 || steps[0][0] != "time" {
		t.Errorf("steps log: %d rows, header %v", len(steps), steps[0])
	}
	if len(sends) != int(sum.Sent)+1 || len(sends[1]) != 1+beamng.StateLen || sends[0][1] != "id" || sends[0][111] != "H50" {
		t.Errorf("send log: %d rows of %d columns, header %v…", len(sends), len(sends[1]), sends[0][:3])
	}
	for i, row := range sends[1:] {
		if row[1] != strconv.Itoa(i) {
			t.Fatalf("send row %d has id %s", i+1, row[1])
		}
	}
	if len(recvs) != int(sum.Received)+1 || len(recvs[1]) != 1+beamng.ControlLen || recvs[0][15] != "B1" {
		t.Errorf("receive log: %d rows of %d columns", len(recvs), len(recvs[1]))
	}
}

// A restart reloads the controller: ids start at 0 again.
func TestRestartFault(t *testing.T) {
	link := newScripted(nil)
	link.keep = true
	var f Faults
	if err := ParseFault("restart@50ms", &f); err != nil {
		t.Fatal(err)
	}
	_, sum := run(t, Config{SimulinkTime: 0.005, Steps: 200, Faults: f}, link)
	var ids []float64
	for _, m := range link.sent {
		ids = append(ids, m[0])
	}
	if sum.Restarts != 1 || len(ids) != 20 || ids[9] != 9 || ids[10] != 0 || ids[19] != 9 {
		t.Errorf("restarts %d, ids %v", sum.Restarts, ids)
	}
}

// A pause stops the physics thread: one long step; with a 2.5 s pause the
// client's replies are answered after BeamNG wakes, no stall.
func TestPauseFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f Faults
		if err := ParseFault("pause=2.5s@100ms", &f); err != nil {
			t.Fatal(err)
		}
		e, err := New(Config{SimulinkTime: 0.005, Steps: 400, FreeRunning: true, Faults: f}, newScripted(nil))
		if err != nil {
			t.Fatal(err)
		}
		sum, _ := e.Run(context.Background())
		if sum.Pauses != 1 || sum.LongestStep != 2.5 || sum.Stalls != 0 || sum.WallS != 2.5 {
			t.Errorf("%v", sum)
		}
	})
}

// The datagram faults, each on its own, through the pipe with a +1 client.
func TestDatagramFaults(t *testing.T) {
	for _, tt := range []struct {
		spec  string
		check func(s Summary, got clientView) bool
	}{
		{"drop-replies=0.2", func(s Summary, _ clientView) bool { return s.Stalls > 0 && s.Accepted < s.Sent*9/10 }},
		{"drop-messages=0.2", func(s Summary, c clientView) bool { return s.Stalls > 0 && c.messages < int(s.Sent)*9/10 }},
		{"dup-replies=0.3", func(s Summary, _ clientView) bool { return s.Rejected > 5 && s.Stalls == 0 }},
		{"dup-messages=0.3", func(s Summary, c clientView) bool { return c.messages > int(s.Sent)+5 }},
		{"reorder-replies=0.3", func(s Summary, _ clientView) bool { return s.Rejected > 0 }},
		{"reorder-messages=0.3", func(s Summary, c clientView) bool { return c.outOfOrder > 0 }},
		{"truncate-replies=0.3", func(s Summary, _ clientView) bool { return s.Accepted < s.Sent && s.Received >= s.Sent-5 }},
		{"truncate-messages=0.3", func(s Summary, c clientView) bool { return c.wrongSize > 5 }},
		{"delay-replies=3ms", func(s Summary, _ clientView) bool {
			return s.BlockingWaits > 100 && s.Stalls == 0 && s.Accepted > s.Sent-3
		}},
		{"delay-messages=3ms:0.5", func(s Summary, c clientView) bool { return s.BlockingWaits > 50 && c.messages == int(s.Sent) }},
		{"garbage=0.3", func(s Summary, c clientView) bool { return c.wrongSize > 5 && c.messages == int(s.Sent) }},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			var f Faults
			if err := ParseFault(tt.spec, &f); err != nil {
				t.Fatal(err)
			}
			f.Seed = 7
			sum, view := faultRun(t, f)
			if !tt.check(sum, view) {
				t.Errorf("%v\nclient: %+v", sum, view)
			}
		})
	}
}

// clientView is what a +1 client saw of BeamNG's messages.
type clientView struct {
	messages, wrongSize, outOfOrder int
}

func faultRun(t *testing.T, f Faults) (Summary, clientView) {
	var sum Summary
	var view clientView
	synctest.Test(t, func(t *testing.T) {
		bside, cside := Pipe(1024)
		e, err := New(Config{SimulinkTime: 0.005, Steps: 4000, FreeRunning: true, StepCost: 50 * time.Microsecond, Faults: f}, bside)
		if err != nil {
			t.Fatal(err)
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			r := beamngtest.NewReplier()
			last := -1.0
			beamngtest.Each(cside, stop, func(d []byte) {
				b, ok := r.Reply(d, beamngtest.Next, nil)
				if !ok {
					view.wrongSize++
					return
				}
				view.messages++
				if r.Msg[0] < last {
					view.outOfOrder++
				}
				last = r.Msg[0]
				time.Sleep(100 * time.Microsecond)
				cside.Send(b)
			})
		}()
		sum, _ = e.Run(context.Background())
		close(stop)
		<-done
	})
	return sum, view
}

func TestParseFault(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want func(f Faults) bool
		err  string
	}{
		{"drop-replies=0.25", func(f Faults) bool { return f.Replies.Drop == 0.25 }, ""},
		{"dup-messages=1", func(f Faults) bool { return f.Messages.Duplicate == 1 }, ""},
		{"reorder-replies=0", func(f Faults) bool { return !f.active() }, ""},
		{"truncate-messages=0.5", func(f Faults) bool { return f.Messages.Truncate == 0.5 }, ""},
		{"delay-replies=2ms", func(f Faults) bool { return f.Replies.Delay == 2*time.Millisecond && f.Replies.DelayProb == 1 }, ""},
		{"delay-messages=1.5s:0.1", func(f Faults) bool { return f.Messages.Delay == 1500*time.Millisecond && f.Messages.DelayProb == 0.1 }, ""},
		{"garbage=0.01", func(f Faults) bool { return f.Garbage == 0.01 }, ""},
		{"pause=2.5s@10s", func(f Faults) bool { return f.PauseFor == 2500*time.Millisecond && f.PauseAt == 10*time.Second }, ""},
		{"restart@30s", func(f Faults) bool { return f.Restart && f.RestartAt == 30*time.Second }, ""},
		{"seed=42", func(f Faults) bool { return f.Seed == 42 }, ""},
		{"drop-replies=1.5", nil, `fault "drop-replies=1.5": expected a probability from 0 to 1, got "1.5"`},
		{"drop-replies=NaN", nil, `expected a probability from 0 to 1, got "NaN"`},
		{"drop-replies", nil, `fault "drop-replies": expected NAME=VALUE`},
		{"delay-replies=fast", nil, `expected a duration such as 2ms`},
		{"delay-replies=-2ms", nil, `cannot be negative`},
		{"delay-replies=2ms:7", nil, `expected a probability from 0 to 1 after ':', got "7"`},
		{"pause=2s", nil, `expected pause=DURATION@TIME`},
		{"pause=0s@1s", nil, `expected pause=DURATION@TIME`},
		{"restart@soon", nil, `expected restart@TIME`},
		{"seed=-1", nil, `expected a whole number`},
		{"explode=1", nil, "unknown fault; the faults are:\ndrop-replies=P"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			var f Faults
			err := ParseFault(tt.spec, &f)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("%s: %v", tt.spec, err)
			case tt.err == "" && !tt.want(f):
				t.Errorf("%s: %+v", tt.spec, f)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("%s: error %v, want %q", tt.spec, err, tt.err)
			}
		})
	}
}

func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"drop-replies=0.1", "delay-messages=2ms:0.5", "pause=1s@2s", "restart@1m", "seed=3", "=", "@", "restart@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		var fs Faults
		if err := ParseFault(spec, &fs); err != nil {
			if !strings.HasPrefix(err.Error(), "fault ") {
				t.Fatalf("error without the spec: %v", err)
			}
			return
		}
		if err := fs.check(); err != nil {
			t.Fatalf("ParseFault accepted %q but check refuses it: %v", spec, err)
		}
	})
}

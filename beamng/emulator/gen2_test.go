package emulator

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
)

// gen2CSV writes a coupling CSV: signalTo rows "Group,name", signalFrom rows
// "Group,name,kind", and the computation time as written.
func gen2CSV(t testing.TB, time string, to, from []string) *cosim.File {
	t.Helper()
	var b strings.Builder
	b.WriteString(strings.Join(cosim.Header, ","))
	for _, r := range to {
		g, n, _ := strings.Cut(r, ",")
		b.WriteString("\nsignalTo," + g + "," + n + ",,number,,,")
	}
	for _, r := range from {
		b.WriteString("\nsignalFrom," + r + ",number,,,")
	}
	b.WriteString("\nconnection,,3rd Party Computation Time," + time + ",number,,,")
	b.WriteString("\nconnection,,Ping Time,1e-05,number,,,")
	f, err := cosim.Parse("test.csv", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// gen2Scripted answers every Gen 2 message at once with a reply of n
// doubles that reply builds (id+1 and zeros unless it writes otherwise).
type gen2Scripted struct {
	n       int
	reply   func(k int, r []float64) // k: the message's index, from 0
	sentLen []int
	msgs    [][]float64
	out     []byte
	pending int
	k       int
}

func (s *gen2Scripted) Send(b []byte) error {
	s.sentLen = append(s.sentLen, len(b)/8)
	msg := make([]float64, len(b)/8)
	beamng.Decode(msg, b)
	s.msgs = append(s.msgs, msg)
	r := make([]float64, s.n)
	r[0] = msg[0] + 1
	if s.reply != nil {
		s.reply(s.k, r)
	}
	s.k++
	s.out, _ = beamng.Encode(make([]byte, 8*len(r)), r)
	s.pending = len(s.out)
	return nil
}

func (s *gen2Scripted) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	if s.pending == 0 {
		return 0, false
	}
	n := copy(buf, s.out[:s.pending])
	s.pending = 0
	return n, true
}

func (s *gen2Scripted) Close() error { return nil }

func rows(group string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = group + "," + n
	}
	return out
}

// Spec §3.5: message sizes are 1 + rows each way, in file order, every
// multiply/add/freeze row its own slot — for CSVs shaped like BeamNG's own
// three (default_interface 44/18, throttle_example 3/3, torques_example 3/10).
func TestGen2MessageSizes(t *testing.T) {
	var wheelsTo, wheelsFrom []string
	for _, w := range []string{"RR", "RL", "FR", "FL"} {
		wheelsTo = append(wheelsTo, rows("Wheels", "wheelSpeed"+w, "angularVelocity"+w, "downforce"+w)...)
		wheelsFrom = append(wheelsFrom, rows("Wheels", "brakingTorque"+w+",value", "propulsionTorque"+w+",value", "frictionTorque"+w+",value")...)
	}
	var defTo []string
	defTo = append(defTo, rows("Kinematics", "vehiclePositionX", "vehiclePositionY", "vehiclePositionZ", "vehicleVelocityX", "vehicleVelocityY",
		"vehicleVelocityZ", "vehicleAccelerationX", "vehicleAccelerationY", "vehicleAccelerationZ", "vehicleRollRate", "vehiclePitchRate",
		"vehicleYawRate", "vehicleGroundSpeed", "vehicleAltitude")...)
	defTo = append(defTo, rows("Driver", "throttleInput", "brakeInput", "clutchInput", "parkingBrakeInput", "steeringWheelPositionInput")...)
	defTo = append(defTo, wheelsTo...)
	defTo = append(defTo, rows("Electrics", "wheelspeed", "engineLoad", "maxrpm", "ignitionLevel", "gearIndex", "rpm", "fuel", "reverse",
		"signal_R", "highbeam", "signal_L", "lowbeam")...)
	defFrom := append(rows("Driver", "throttle,value", "brake,value", "clutch,value", "parkingBrake,value", "steeringWheelPosition,value"), wheelsFrom...)
	torquesFrom := rows("Driver", "steeringWheelPosition,value")
	for _, w := range []string{"RR", "RL", "FR", "FL"} {
		torquesFrom = append(torquesFrom, rows("Wheels", "brakingTorque"+w+",value", "propulsionTorque"+w+",value")...)
	}
	for _, tt := range []struct {
		name     string
		to, from []string
		out, in  int
	}{
		{"default_interface", defTo, defFrom, 44, 18},
		{"throttle_example", rows("Kinematics", "vehicleYaw", "vehicleGroundSpeed"), rows("Driver", "throttle,value", "steeringWheelPosition,value"), 3, 3},
		{"torques_example", rows("Kinematics", "vehicleYaw", "vehicleGroundSpeed"), torquesFrom, 3, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := gen2CSV(t, "0.0005", tt.to, tt.from)
			link := &gen2Scripted{n: tt.in}
			_, sum := run(t, Config{CSV: f, Steps: 200}, link)
			if link.sentLen[0] != tt.out || f.Layout().Len(beamng.ToBeamNG) != tt.in {
				t.Errorf("%s: sends %d doubles, reads %d; want %d and %d", tt.name, link.sentLen[0], f.Layout().Len(beamng.ToBeamNG), tt.out, tt.in)
			}
			if sum.Accepted < sum.Sent-1 || sum.LuaErrors != 0 { // the last message ends the run unanswered
				t.Errorf("%s: a full-size reply must be accepted every time: %v, lua errors %d", tt.name, sum, sum.LuaErrors)
			}
		})
	}
}

// Spec §3.5: the period is what lpack makes of the CSV's text, then ceil.
func TestGen2Period(t *testing.T) {
	for _, tt := range []struct {
		time  string
		every int // physics steps between sends
	}{
		{"0.0005", 2},              // 0.00050000000000000012: a send every 1 ms
		{"0.00050000002374873", 2}, // the editor's float32
		{"0.005", 11},              // 0.005000000000000001: 5.5 ms, not 5
		{"0.0049999999999999", 10}, // what `beamconnect csv` writes for 5 ms
		{"0.00049999999999999", 1}, // and for 0.5 ms
		{"1e-3", 3},                // csvlib keeps only the number: "0.001" again, 0.0010000000000000002
	} {
		t.Run(tt.time, func(t *testing.T) {
			f := gen2CSV(t, tt.time, rows("Kinematics", "vehicleGroundSpeed"), rows("Driver", "throttle,value"))
			link := &gen2Scripted{n: 2}
			_, sum := run(t, Config{CSV: f, Steps: int64(100 * tt.every)}, link)
			if sum.SendSkips != tt.every-1 || sum.Sent != 100 {
				t.Errorf("time %s: sendSkips %d, %d sends in %d steps; want a send every %d steps", tt.time, sum.SendSkips, sum.Sent, 100*tt.every, tt.every)
			}
		})
	}
}

// Spec §3.5: echo reply ids stall BeamNG exactly once (2 s); next and
// counter never.
func TestGen2EchoStall(t *testing.T) {
	f := gen2CSV(t, "0.0005", rows("Kinematics", "vehicleGroundSpeed"), rows("Driver", "throttle,value"))
	for _, tt := range []struct {
		policy string
		stalls int64
	}{{"echo", 1}, {"next", 0}, {"counter", 0}} {
		t.Run(tt.policy, func(t *testing.T) {
			cfg := Config{CSV: f, Steps: 20000, StepCost: 20 * time.Microsecond}
			sum, _ := couple(t, cfg, &responder{policy: tt.policy, compute: 50 * time.Microsecond, layout: f.Layout(), values: map[int]float64{1: 0.1}})
			if sum.Stalls != tt.stalls {
				t.Errorf("%s: %d stalls, want %d (%v)", tt.policy, sum.Stalls, tt.stalls, sum)
			}
			// Echo loses the few replies around its stall; next and counter none.
			if lost := sum.Sent - sum.Accepted; sum.Rejected > 1 || tt.policy == "echo" && lost > 5 || tt.policy != "echo" && lost > 1 {
				t.Errorf("%s: not every reply applied: %v", tt.policy, sum)
			}
		})
	}
}

// Spec §3.4/§3.5: value × multiply + add, each row its own slot; freeze
// holds the last output while non-zero, from a held value that starts at 0;
// wheel torques listed in From are forced (to 0) from load.
func TestGen2FromSemantics(t *testing.T) {
	f := gen2CSV(t, "0.0005", rows("Kinematics", "vehicleGroundSpeed"), []string{
		"Driver,throttle,value", "Driver,throttle,multiply", "Driver,throttle,add",
		"Driver,brake,value", "Driver,brake,multiply",
		"Driver,steeringWheelPosition,value", "Driver,steeringWheelPosition,freeze",
		"Wheels,brakingTorqueFL,value", "Wheels,brakingTorqueFL,multiply", "Wheels,brakingTorqueFL,add",
	})
	e, err := New(Config{CSV: f, FreeRunning: true}, &gen2Scripted{n: 11})
	if err != nil {
		t.Fatal(err)
	}
	if !e.veh.TorqueMode {
		t.Error("a wheel torque listed in From is not forced from load")
	}
	steer := []struct{ value, freeze, want float64 }{
		{0.3, 1, 0}, // frozen from the first reply: the held 0
		{0.3, 0, 0.3},
		{0.8, 1, 0.3}, // held
		{0.9, -2, 0.3},
		{0.8, 0, 0.8},
	}
	// One test, not subtests: each reply's steering depends on what the
	// replies before it held.
	for i, s := range steer {
		msg := []float64{float64(i + 1), 0.2, 2, 0.1, 0.5, 0.6, s.value, s.freeze, 50, 2, 10}
		if nans, _ := e.side.apply(e.veh, msg); nans != 0 {
			t.Fatalf("%d NaNs", nans)
		}
		v := e.veh
		if math.Abs(v.Throttle-0.5) > 1e-12 || math.Abs(v.Brake-0.3) > 1e-12 || v.DesiredBraking[0] != -110 {
			t.Errorf("throttle %v (want 2·0.2+0.1 = 0.5), brake %v (0.6·0.5 = 0.3), desired braking %v (-(2·50+10))", v.Throttle, v.Brake, v.DesiredBraking[0])
		}
		if math.Abs(v.Steering-s.want) > 1e-12 {
			t.Errorf("reply %d: steering %v with freeze %v, want %v", i, v.Steering, s.freeze, s.want)
		}
	}
	// The To message reads back the applied torque.
	f2 := gen2CSV(t, "0.0005", rows("Wheels", "brakingTorqueFL"), rows("Wheels", "brakingTorqueFL,value"))
	link := &gen2Scripted{n: 2, reply: func(k int, r []float64) { r[1] = -300 }}
	run(t, Config{CSV: f2, Steps: 400}, link)
	if got := link.msgs[len(link.msgs)-1][1]; got != 300 {
		t.Errorf("braking torque read back %v, want 300 (desired = -value, brakes resist)", got)
	}
}

// Spec §3.5: one NaN poisons every From signal without a freeze row for the
// rest of the run, through the shared frozenValues[-1]; the emulator counts
// every NaN it applies.
func TestGen2NaNPoisons(t *testing.T) {
	f := gen2CSV(t, "0.0005", rows("Kinematics", "vehicleGroundSpeed"), rows("Driver", "throttle,value", "brake,value", "steeringWheelPosition,value"))
	link := &gen2Scripted{n: 4, reply: func(k int, r []float64) {
		r[1], r[2], r[3] = 0.5, 0, 0.1
		if k == 50 {
			r[3] = math.NaN() // one NaN, in steering only
		}
	}}
	e, sum := run(t, Config{CSV: f, Steps: 400}, link)
	if sum.NaNApplied < 3*(sum.Accepted-51) {
		t.Errorf("%d NaNs applied after one NaN in reply 50 of %d: every control should stay NaN", sum.NaNApplied, sum.Accepted)
	}
	if e.veh.Throttle != 0 {
		t.Errorf("throttle %v: the poisoned controller should apply nothing usable though replies ask 0.5", e.veh.Throttle)
	}
	clean := &gen2Scripted{n: 4, reply: func(k int, r []float64) { r[1] = 0.5 }}
	if _, sum := run(t, Config{CSV: f, Steps: 400}, clean); sum.NaNApplied != 0 {
		t.Errorf("%d NaNs applied without a NaN sent", sum.NaNApplied)
	}
}

// Spec §3.5: a short reply raises a Lua error after maxRecvId was updated:
// nothing is applied, and while it lasts sends come every sendSkips + 2
// steps instead of sendSkips + 1.
func TestGen2ShortReply(t *testing.T) {
	f := gen2CSV(t, "0.0005", rows("Kinematics", "vehicleGroundSpeed"), rows("Driver", "throttle,value", "brake,value"))
	short := &gen2Scripted{n: 2, reply: func(k int, r []float64) { r[1] = 0.7 }}
	e, sum := run(t, Config{CSV: f, Steps: 3000}, short)
	if sum.LuaErrors == 0 || sum.Accepted != 0 || e.veh.Throttle != 0 {
		t.Errorf("short replies: %d Lua errors, %d accepted, throttle %v; want errors, nothing applied", sum.LuaErrors, sum.Accepted, e.veh.Throttle)
	}
	if sum.Sent != 1000 || sum.Stalls != 0 {
		t.Errorf("%d sends in 3000 steps (want 1000: every sendSkips + 2 = 3 steps), %d stalls", sum.Sent, sum.Stalls)
	}
}

// An unknown signalTo group ends BeamNG's message at its row (§3.3).
func TestGen2UnknownGroupCutsMessage(t *testing.T) {
	f := gen2CSV(t, "0.0005", []string{"Kinematics,vehicleGroundSpeed", "Mystery,thing", "Electrics,rpm"}, rows("Driver", "throttle,value"))
	link := &gen2Scripted{n: 2}
	run(t, Config{CSV: f, Steps: 10}, link)
	if link.sentLen[0] != 2 {
		t.Errorf("sent %d doubles, want 2: the id and the row before the unknown group", link.sentLen[0])
	}
}

func TestGen2StepAllocs(t *testing.T) {
	f := gen2CSV(t, "0.00049999999999999", rows("Kinematics", "vehicleGroundSpeed", "vehicleYaw", "vehicleYawRate"),
		[]string{"Driver,throttle,value", "Driver,throttle,freeze", "Wheels,propulsionTorqueRL,value"})
	link := &gen2Scripted{n: 4}
	e, err := New(Config{CSV: f, FreeRunning: true}, link)
	if err != nil {
		t.Fatal(err)
	}
	// The scripted client allocates; measure the emulator's own step by
	// replaying one reply through handle and send's fill.
	b, _ := beamng.Encode(make([]byte, 32), []float64{1, 0.3, 0, 100})
	id := 1.0
	allocs := testing.AllocsPerRun(200, func() {
		id++
		copy(e.rxBuf, b)
		e.rxBuf[0], e.rxBuf[1] = 0, 0
		putID(e.rxBuf, id)
		e.handle(len(b))
		e.side.fill(e.veh, e.out)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Gen 2 reply and message, want 0", allocs)
	}
}

func putID(b []byte, id float64) {
	bits := math.Float64bits(id)
	for i := range 8 {
		b[i] = byte(bits >> (8 * i))
	}
}

// Gen 2 debug logs name their columns after the CSV's rows, as wide as the
// messages.
func TestGen2DebugLogs(t *testing.T) {
	dir := t.TempDir()
	f := gen2CSV(t, "0.0005", rows("Kinematics", "vehicleGroundSpeed", "vehicleYaw"), []string{"Driver,throttle,value", "Driver,throttle,multiply"})
	run(t, Config{CSV: f, Steps: 20, DebugLogs: dir}, &gen2Scripted{n: 3, reply: func(k int, r []float64) { r[1], r[2] = 0.5, 1 }})
	for name, want := range map[string]string{
		SendLogName:    "time,id,Kinematics/vehicleGroundSpeed,Kinematics/vehicleYaw\n",
		ReceiveLogName: "time,id,Driver/throttle,Driver/throttle:multiply\n",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if lines[0]+"\n" != want || len(lines) < 3 || strings.Count(lines[1], ",") != strings.Count(want, ",") {
			t.Errorf("%s:\n%s", name, b)
		}
	}
}

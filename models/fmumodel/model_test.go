package fmumodel

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"beamconnect/config/configtest"
	"beamconnect/fmu/host"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/logtest"
	"beamconnect/models"
	"beamconnect/models/exectest"
	"beamconnect/ports"
)

// The test binary is an FMU host too, as beamconnect is (FMUHost runs
// os.Executable with the argument fmu-host), and the exec tests' program.
func TestMain(m *testing.M) {
	exectest.Main() // and the exec tests' program
	if len(os.Args) > 1 && os.Args[1] == "fmu-host" {
		os.Exit(host.Main(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// fmuRig builds a cruise FMU and runs it as the model of the cruise-pedals
// rig (outputs: groundspeed…; inputs: throttle, brake, driveMode), in
// lockstep with the default model timeout.
func fmuRig(t *testing.T, o testfmu.Options, extra models.Params) (*FMU, *ports.Plan, *logtest.Buffer) {
	return fmuRigIn(t, o, extra, nil)
}

// fmuRigIn is fmuRig with the plan as set changes it (the mode, the
// model timeout).
func fmuRigIn(t *testing.T, o testfmu.Options, extra models.Params, set func(p *ports.Plan)) (*FMU, *ports.Plan, *logtest.Buffer) {
	t.Helper()
	path := testfmu.ForTest(t, "cruise.fmu", o)
	p := plan(t, "../../examples/cruise-pedals.json")
	if set != nil {
		set(p)
	}
	params := models.Params{"path": path, "parameters": map[string]any{"setSpeed": 10.0}}
	for k, v := range extra {
		params[k] = v
	}
	log := &logtest.Buffer{}
	m, err := newModel(params, p, log.Logger())
	if err != nil {
		t.Fatal(err)
	}
	f := m.(*FMU)
	rigParams.Store(f, params)
	t.Cleanup(func() { f.Close() })
	return f, p, log
}

// rigParams are the modelParams each rig's FMU runs with.
var rigParams sync.Map // *FMU → models.Params

func paramsOf(m *FMU) models.Params {
	p, _ := rigParams.Load(m)
	return p.(models.Params)
}

// benchRig is fmuRig for a benchmark (no log kept).
func benchRig(b *testing.B, o testfmu.Options, extra models.Params) (*FMU, *ports.Plan) {
	b.Helper()
	path := testfmu.ForTest(b, "cruise.fmu", o)
	p := configtest.Plan(b, "../../examples/cruise-pedals.json")
	params := models.Params{"path": path}
	for k, v := range extra {
		params[k] = v
	}
	m, err := newModel(params, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	f := m.(*FMU)
	b.Cleanup(func() { f.Close() })
	return f, p
}

// drive steps the model every period at speed until cond holds or limit
// passes, and returns the inputs. Port 0 says 4 (error) while the model is
// faulted, as the coupling's does.
func drive(m *FMU, p *ports.Plan, speed float64, limit time.Duration, cond func(ins [][]float64) bool) ([][]float64, bool) {
	outs, ins := vectors(p)
	sp, spE, _ := p.Find(0, "groundspeed")
	start := time.Now()
	for k := 0; time.Since(start) < limit; k++ {
		outs[0][0] = 3
		if m.Fault() != nil {
			outs[0][0] = 4
		}
		outs[sp][spE] = speed
		m.Step(float64(k)*p.Period, outs, ins)
		if cond != nil && cond(ins) {
			return ins, true
		}
		time.Sleep(time.Millisecond) // the messages' pace: BeamNG's, a message a millisecond
	}
	return ins, cond == nil
}

func pedals(t *testing.T, p *ports.Plan, ins [][]float64) (throttle, brake float64) {
	th, thE, _ := p.Find(1, "throttle")
	br, brE, _ := p.Find(1, "brake")
	return ins[th][thE], ins[br][brE]
}

// The cruise FMU drives throttle and brake by name, in a child process and
// in process, FMI 2.0 and 3.0.
func TestFMUDrives(t *testing.T) {
	for _, tt := range []struct {
		name  string
		o     testfmu.Options
		extra models.Params
	}{
		{"FMI 2.0 child", testfmu.Options{FMI: 2}, nil},
		{"FMI 3.0 child", testfmu.Options{FMI: 3}, nil},
		{"FMI 2.0 in process", testfmu.Options{FMI: 2}, models.Params{"inProcess": true}},
		{"FMI 3.0 in process", testfmu.Options{FMI: 3}, models.Params{"inProcess": true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, p, log := fmuRig(t, tt.o, tt.extra)
			ins, _ := drive(m, p, 5, 50*time.Millisecond, nil)
			if th, br := pedals(t, p, ins); th != 1 || br != 0 {
				t.Errorf("at 5 m/s for a set speed of 10: throttle %v brake %v\n%s", th, br, log)
			}
			ins, _ = drive(m, p, 14, 50*time.Millisecond, nil)
			if th, br := pedals(t, p, ins); th != 0 || br < 0.5 {
				t.Errorf("at 14 m/s: throttle %v brake %v", th, br)
			}
			if m.Fault() != nil || m.Restarts() != 0 || m.Failures() != 0 {
				t.Errorf("fault %v, restarts %d, failures %d\n%s", m.Fault(), m.Restarts(), m.Failures(), log)
			}
		})
	}
}

// timeout sets a plan's model timeout (seconds).
func timeout(s float64) func(p *ports.Plan) { return func(p *ports.Plan) { p.ModelTimeout = s } }

// realTime puts a plan in real time, with a model timeout of s seconds.
func realTime(s float64) func(p *ports.Plan) {
	return func(p *ports.Plan) { p.RealTime, p.ModelTimeout = true, s }
}

// In lockstep a step waits for the FMU's step on its data, however long it
// takes within the model timeout: a step of 300 ms gives its own message
// its own controls, late, and is no fault; nothing is missed. In a child
// process and in process alike.
func TestFMULockstepWaitsForItsStep(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		m, p, log := fmuRig(t, testfmu.Options{Fault: "stall", After: 3}, models.Params{"inProcess": inProcess, "deadlineMs": 1.0})
		outs, ins := vectors(p)
		sp, spE, _ := p.Find(0, "groundspeed")
		for k := 1; k <= 4; k++ {
			outs[sp][spE] = []float64{5, 5, 15, 5}[k-1] // at 15 m/s for 10 it brakes
			start := time.Now()
			if !m.Step(float64(k)*p.Period, outs, ins) {
				t.Fatalf("inProcess %v: step %d computed nothing\n%s", inProcess, k, log)
			}
			th, br := pedals(t, p, ins)
			if k == 3 && (th != 0 || br == 0 || time.Since(start) < 300*time.Millisecond) {
				t.Errorf("inProcess %v: the slow step took %v: throttle %v brake %v: want it waited for, braking", inProcess, time.Since(start), th, br)
			}
		}
		if m.Fault() != nil || m.Missed() != 0 || m.Old() != 0 {
			t.Errorf("inProcess %v: fault %v, missed %d, old answers %d", inProcess, m.Fault(), m.Missed(), m.Old())
		}
	}
}

// A step's controls are that step's: in real time an answer that comes
// after its deadline is not used at the next message (Step says so, and
// leaves the inputs alone), in a child process and in process alike.
func TestFMULateAnswerNotUsed(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		m, p, log := fmuRigIn(t, testfmu.Options{Fault: "stall", After: 3}, models.Params{"inProcess": inProcess, "deadlineMs": 20.0}, realTime(0.5))
		outs, ins := vectors(p)
		sp, spE, _ := p.Find(0, "groundspeed")
		outs[sp][spE] = 5
		th, thE, _ := p.Find(1, "throttle")
		for k := 1; k <= 2; k++ {
			if !m.Step(float64(k)*p.Period, outs, ins) {
				t.Fatalf("inProcess %v: step %d computed nothing\n%s", inProcess, k, log)
			}
		}
		ins[th][thE] = -7 // what the model wrote last, as far as the test can tell
		if m.Step(3*p.Period, outs, ins) || ins[th][thE] != -7 {
			t.Errorf("inProcess %v: the stalled step (300 ms, deadline 20 ms) says computed, throttle %v", inProcess, ins[th][thE])
		}
		waitAnswered(t, m) // the stalled step's answer comes meanwhile
		outs[sp][spE] = 15
		if !m.Step(4*p.Period, outs, ins) {
			t.Fatalf("inProcess %v: the step after the stall computed nothing\n%s", inProcess, log)
		}
		// At 15 m/s for a set speed of 10 the controller brakes: a throttle
		// of 1 would be the stalled step's answer (5 m/s).
		if th, br := pedals(t, p, ins); th != 0 || br == 0 {
			t.Errorf("inProcess %v: after the stall: throttle %v brake %v: want this message's controls", inProcess, th, br)
		}
		if m.Missed() != 1 {
			t.Errorf("inProcess %v: %d steps missed, want the stalled one", inProcess, m.Missed())
		}
	}
}

// A healthy step in a child process allocates nothing on beamconnect's
// side, the recording's sample of its variables included (its outputs,
// and a parameter modelParams.record names).
func TestFMUChildStepAllocs(t *testing.T) {
	m, p, _ := fmuRig(t, testfmu.Options{}, models.Params{"deadlineMs": 40.0, "record": []string{"kp"}})
	outs, ins := vectors(p)
	outs[0][0] = 3
	vars := m.Variables()
	if len(vars) != 3 || vars[2].Name != "kp" || vars[2].Kind != "parameter" || !vars[0].Drives {
		t.Fatalf("variables %+v: want the outputs, then kp", vars)
	}
	values := make([]float64, len(vars))
	k := 0
	step := func() { k++; m.Step(float64(k)*p.Period, outs, ins); m.Sample(values) }
	step()
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Errorf("%v allocations per step", n)
	}
	if values[2] != 0.3 || math.IsNaN(values[0]) {
		t.Errorf("sampled %v: want the outputs, then kp 0.3", values)
	}
}

// Faults: each gives neutral controls (the coupling sends them while Fault
// is not nil), is logged when it happens, and the FMU is started again
// unless restart is false.
func TestFMUFaults(t *testing.T) {
	// How the crashed host's end is named: Windows gives the exit status
	// STATUS_ACCESS_VIOLATION, elsewhere the signal.
	crashed := "SIGSEGV: segmentation violation"
	if runtime.GOOS == "windows" {
		crashed = "exit status 0xc0000005"
	}
	for _, tt := range []struct {
		name      string
		o         testfmu.Options
		extra     models.Params
		fault     string // in Fault()
		log       string // in the log
		restarted bool
		timeout   float64 // the model timeout, s (0: the default)
	}{
		{"crash", testfmu.Options{Fault: "crash", After: 5}, nil,
			"the FMU's host process ended: " + crashed, "starting it again", true, 0},
		{"crash, restart off", testfmu.Options{FMI: 3, Fault: "crash", After: 5}, models.Params{"restart": false},
			"the FMU's host process ended: " + crashed, "not starting it again (modelParams.restart is false)", false, 0},
		{"hang", testfmu.Options{Fault: "hang", After: 5}, models.Params{"restart": false},
			"the FMU's step has not returned after", "longer than the model timeout 50ms", false, 0.05},
		{"error status", testfmu.Options{FMI: 3, Fault: "error", After: 5}, nil,
			"", "the FMU failed: fmi3DoStep returned fmi3Error at t = ", true, 0},
		{"NaN output", testfmu.Options{Fault: "nan", After: 5}, nil,
			"the FMU's output throttle is NaN: not a usable control value", "FMU fault", false, 0},
		{"error status in process", testfmu.Options{Fault: "error", After: 5}, models.Params{"inProcess": true},
			"", "the FMU failed; instantiating it again", true, 0},
		{"NaN output in process", testfmu.Options{FMI: 3, Fault: "nan", After: 5}, models.Params{"inProcess": true},
			"the FMU's output throttle is NaN", "FMU fault", false, 0},
		{"one NaN output", testfmu.Options{Fault: "nan-once", After: 5}, nil,
			"the FMU's output throttle is NaN", "FMU fault", false, 0},
		{"one NaN output in process", testfmu.Options{Fault: "nan-once", After: 5}, models.Params{"inProcess": true},
			"the FMU's output throttle is NaN", "FMU fault", false, 0},
		{"hang in process", testfmu.Options{Fault: "hang-2s", After: 5}, models.Params{"inProcess": true},
			"the FMU's step has not returned after", "FMU fault", true, 0.05},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var set func(*ports.Plan)
			if tt.timeout > 0 {
				set = timeout(tt.timeout)
			}
			m, p, log := fmuRigIn(t, tt.o, tt.extra, set)
			_, ok := drive(m, p, 5, 5*time.Second, func([][]float64) bool { return m.Fault() != nil })
			if !ok {
				t.Fatalf("no fault\n%s", log)
			}
			if !strings.Contains(m.Fault().Error(), tt.fault) {
				t.Errorf("fault %q, want %q", m.Fault(), tt.fault)
			}
			if !strings.Contains(log.String(), tt.log) {
				t.Errorf("log lacks %q:\n%s", tt.log, log)
			}
			if strings.Contains(tt.o.Fault, "once") {
				// A fault that ends with its cause: the next step answers.
				if _, ok := drive(m, p, 5, 5*time.Second, func([][]float64) bool { return m.Fault() == nil }); !ok || m.Restarts() != 0 {
					t.Errorf("the fault did not end with its cause: %v, restarts %d\n%s", m.Fault(), m.Restarts(), log)
				}
			}
			if !tt.restarted {
				return
			}
			// Started again after 1 s: it answers, the fault ends (until
			// the FMU misbehaves again at its 5th step).
			_, ok = drive(m, p, 5, 5*time.Second, func([][]float64) bool { return m.Restarts() > 0 && m.Fault() == nil })
			if !ok {
				t.Errorf("not started again: restarts %d, fault %v\n%s", m.Restarts(), m.Fault(), log)
			}
			if tt.o.Fault == "hang-2s" && !strings.Contains(log.String(), "its step hung; instantiating it again") {
				t.Errorf("the hung thread was not abandoned:\n%s", log)
			}
		})
	}
}

// A step that returns late is a fault while it runs (neutral controls
// from the model timeout on) and ends when its answer comes: the host is
// not stopped, the FMU keeps its state.
func TestFMUStall(t *testing.T) {
	m, p, log := fmuRigIn(t, testfmu.Options{Fault: "stall", After: 5}, nil, timeout(0.05))
	_, ok := drive(m, p, 5, 5*time.Second, func([][]float64) bool { return m.Fault() != nil })
	if !ok || !strings.Contains(m.Fault().Error(), "the FMU's step has not returned after") {
		t.Fatalf("fault %v\n%s", m.Fault(), log)
	}
	_, ok = drive(m, p, 5, 5*time.Second, func([][]float64) bool { return m.Fault() == nil })
	if !ok || m.Restarts() != 0 || strings.Contains(log.String(), "stopping its host") {
		t.Errorf("fault %v, restarts %d\n%s", m.Fault(), m.Restarts(), log)
	}
}

// An FMU in process that hangs again and again (each new instance hangs
// at its first step, asleep for 2 s) leaves a thread behind each time: at
// most 3, then a fault for good that says why and how to run it instead.
// Before, it was instantiated again every few seconds for as long as the
// run lasted, a thread (a core, for one that spins) lost each time.
func TestFMUHangsInProcessAtMostThrice(t *testing.T) {
	t.Parallel()
	m, p, log := fmuRigIn(t, testfmu.Options{Fault: "hang-2s", After: 1}, models.Params{"inProcess": true}, timeout(0.05))
	_, ok := drive(m, p, 5, 30*time.Second, func([][]float64) bool {
		return m.Fault() != nil && strings.Contains(m.Fault().Error(), "not instantiated again")
	})
	if !ok {
		t.Fatalf("no final fault: abandoned %d, restarts %d, fault %v\n%s", m.Abandoned(), m.Restarts(), m.Fault(), log)
	}
	if m.Abandoned() != 3 || m.Restarts() != 2 {
		t.Errorf("abandoned %d threads, instantiated again %d times: want 3 and 2", m.Abandoned(), m.Restarts())
	}
	want := "the FMU's step hung 3 times in process: each time its thread was abandoned (3 threads run on inside beamconnect until it ends), and it is not instantiated again; run it in its child process"
	if !strings.Contains(m.Fault().Error(), want) || !strings.Contains(log.String(), want) {
		t.Errorf("fault %v, want %q said\n%s", m.Fault(), want, log)
	}
	// No more instances, and no more threads, however long it runs.
	drive(m, p, 5, 1500*time.Millisecond, nil)
	if m.Abandoned() != 3 || m.Restarts() != 2 {
		t.Errorf("after the final fault: abandoned %d, restarts %d", m.Abandoned(), m.Restarts())
	}
}

// A reload may change tunable parameters (setSpeed), live; a fixed one
// (maxThrottle) and anything else of modelParams are refused by name.
func TestFMUTune(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("inProcess %v", inProcess), func(t *testing.T) {
			m, p, _ := fmuRig(t, testfmu.Options{FMI: 3}, models.Params{"inProcess": inProcess})
			// Until it brakes (the FMU host's first answers take a while
			// under Wine), for at least 30 ms.
			start := time.Now()
			ins, _ := drive(m, p, 15, 5*time.Second, func(ins [][]float64) bool {
				_, br := pedals(t, p, ins)
				return br > 0 && time.Since(start) > 30*time.Millisecond
			})
			if th, br := pedals(t, p, ins); th != 0 || br == 0 {
				t.Fatalf("inProcess %v: at 15 m/s for 10: throttle %v brake %v", inProcess, th, br)
			}
			running := paramsOf(m)
			tuned := with(running, "parameters", map[string]any{"setSpeed": 30.0, "kp": 0.5})
			commit, err := m.Rebind(p, running, tuned)
			if err != nil {
				t.Fatal(err)
			}
			commit()
			start = time.Now()
			ins, _ = drive(m, p, 15, 5*time.Second, func(ins [][]float64) bool {
				th, _ := pedals(t, p, ins)
				return th == 1 && time.Since(start) > 30*time.Millisecond
			})
			if th, br := pedals(t, p, ins); th != 1 || br != 0 {
				t.Errorf("inProcess %v: after setSpeed 30: throttle %v brake %v", inProcess, th, br)
			}

			for _, c := range []struct {
				name      string
				params    models.Params
				want, not []string
			}{
				{"restart-only changes", with(with(tuned, "path", "other.fmu"), "parameters", map[string]any{"setSpeed": 30.0, "kp": 0.5, "maxThrottle": 0.5}), []string{
					"cannot change while the FMU runs (restart beamconnect for them)",
					`modelParams.path (`, `→ "other.fmu")`,
					"modelParams.parameters.maxThrottle (the FMU's parameter has variability fixed)",
				}, nil},
				// An unknown name is an unknown name, not a restart-only change.
				{"an unknown parameter", with(with(tuned, "path", "other.fmu"), "parameters", map[string]any{"setSpeeed": 30.0}), []string{
					`modelParams.parameters.setSpeeed: the FMU has no variable "setSpeeed" (did you mean "setSpeed"?)`,
				}, []string{"restart"}},
				// A parameter written beside "parameters", and a typo there:
				// unknown names, said so, not restart-only ones.
				{"a parameter beside parameters", with(tuned, "setSpeed", 25.0), []string{
					`modelParams.setSpeed: model fmu has no parameter "setSpeed": the FMU's parameters go under modelParams.parameters`,
				}, []string{"restart beamconnect"}},
				{"a misspelt parameter beside parameters", with(tuned, "setSpeeed", 25.0), []string{`modelParams.setSpeeed: model fmu has no parameter "setSpeeed" (did you mean parameters.setSpeed?)`}, []string{"restart beamconnect"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					_, err := m.Rebind(p, tuned, c.params)
					for _, want := range c.want {
						if err == nil || !strings.Contains(err.Error(), want) {
							t.Errorf("Rebind: %v\nwant %q", err, want)
						}
					}
					for _, not := range c.not {
						if err != nil && strings.Contains(err.Error(), not) {
							t.Errorf("Rebind: %v\nwant no %q", err, not)
						}
					}
				})
			}
		})
	}
}

// A value the FMU refuses (a gain of 50; it takes 0..10) is refused with
// the reload, before anything is applied: a scratch instance tries it
// first. The running FMU goes on with its parameters, unharmed, and a
// restarted one is made with them too.
func TestFMUTuneRefusedByTheFMU(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		m, p, log := fmuRig(t, testfmu.Options{}, models.Params{"inProcess": inProcess})
		running := paramsOf(m)
		_, err := m.Rebind(p, running, with(running, "parameters", map[string]any{"setSpeed": 10.0, "kp": 50.0}))
		if err == nil || !strings.Contains(err.Error(), "the FMU refused the new parameters (") || !strings.Contains(err.Error(), "a gain must be within 0..10") {
			t.Fatalf("inProcess %v: %v", inProcess, err)
		}
		ins, ok := drive(m, p, 5, 30*time.Millisecond, nil)
		if th, _ := pedals(t, p, ins); !ok || th != 1 || m.Fault() != nil {
			t.Errorf("inProcess %v: after the refused reload: throttle %v, fault %v\n%s", inProcess, th, m.Fault(), log)
		}
		for _, v := range m.currentSetup().ParamValues {
			if v == 50 {
				t.Errorf("inProcess %v: the refused gain is kept for restarts: %v", inProcess, m.currentSetup().ParamValues)
			}
		}
	}
}

// waitAnswered waits up to 5 s until the FMU has answered the step it was
// given last: in its child process, the host client's wait for the
// answer; in process, the wait on the worker's mailbox.
func waitAnswered(t *testing.T, m *FMU) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	if !m.inProcess {
		if !m.child.client.Load().Wait(deadline) {
			t.Fatal("the FMU never answered its step")
		}
		return
	}
	if _, err := m.local.w.ask.Await(deadline); err != nil {
		t.Fatal("the FMU never answered its step")
	}
}

// with is params with key set to v (params itself unchanged).
func with(params models.Params, key string, v any) models.Params {
	out := models.Params{}
	for k, x := range params {
		out[k] = x
	}
	out[key] = v
	return out
}

// A reload that drops the brake field leaves the FMU's brake output
// driving nothing; the throttle keeps working.
func TestFMURebind(t *testing.T) {
	m, _, log := fmuRig(t, testfmu.Options{}, nil)
	rig := strings.Replace(readFile(t, "../../examples/cruise-pedals.json"), `{ "propertyName": "brake", "initialValue": 0 }`, `{ "propertyName": "steering", "initialValue": 0 }`, 1)
	np := planFrom(t, rig)
	commit, err := m.Rebind(np, paramsOf(m), paramsOf(m))
	if err != nil {
		t.Fatal(err)
	}
	commit()
	ins, _ := drive(m, np, 5, 30*time.Millisecond, nil)
	th, thE, _ := np.Find(1, "throttle")
	if ins[th][thE] != 1 || m.outputs[1].v.Name != "brake" || m.outputs[1].bound {
		t.Errorf("throttle %v, brake bound %v\n%s", ins[th][thE], m.outputs[1].bound, log)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func planFrom(t *testing.T, src string) *ports.Plan {
	t.Helper()
	f := t.TempDir() + "/rig.json"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return plan(t, f)
}

// With several vehicles the maps name each field's vehicle: the FMU reads
// the lead's speed and drives the ego's pedals, the lead's stay put.
func TestFMUVehicles(t *testing.T) {
	path := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 3})
	p := plan(t, "../../examples/follow.json")
	m, err := newModel(models.Params{"path": path, "inProcess": true, "parameters": map[string]any{"setSpeed": 10.0},
		"inputs":  map[string]any{"groundspeed": "lead.groundspeed"},
		"outputs": map[string]any{"throttle": "ego.throttle", "brake": "ego.brake"}}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.(*FMU).Close()
	outs, ins := vectors(p)
	outs[0][0] = 3
	ego, lead := 0, 1
	es, esE, _ := p.FindFor(0, "groundspeed", ego)
	ls, lsE, _ := p.FindFor(0, "groundspeed", lead)
	outs[es][esE], outs[ls][lsE] = 30, 5
	m.Step(1, outs, ins)
	et, etE, _ := p.FindFor(1, "throttle", ego)
	lt, ltE, _ := p.FindFor(1, "throttle", lead)
	if ins[et][etE] != 1 || ins[lt][ltE] != 0 {
		t.Errorf("ego throttle %v (want 1: the lead's 5 m/s is under 10), lead throttle %v (want 0)", ins[et][etE], ins[lt][ltE])
	}
}

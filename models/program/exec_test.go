package program

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"beamconnect/config/configtest"
	"beamconnect/internal/eventually"
	"beamconnect/internal/logtest"
	"beamconnect/models"
	"beamconnect/models/exectest"
	"beamconnect/ports"
	"beamconnect/ports/portstest"
)

// The test binary is the exec tests' program too (exectest's scripts).
func TestMain(m *testing.M) {
	exectest.Main()
	os.Exit(m.Run())
}

// execRig starts a script of exectest's as the exec model of the
// cruise-pedals rig (inputs: directive, throttle, brake, driveMode), in
// lockstep (the default), with a model timeout of timeout seconds.
func execRig(t *testing.T, script []string, timeout float64, extra models.Params) (*Exec, *ports.Plan, *logtest.Buffer) {
	return execRigIn(t, false, script, timeout, extra)
}

// realTimeRig is execRig in real time (beamng.realTime): a step waits for
// its answer up to the deadline only.
func realTimeRig(t *testing.T, script []string, timeout float64, extra models.Params) (*Exec, *ports.Plan, *logtest.Buffer) {
	return execRigIn(t, true, script, timeout, extra)
}

func execRigIn(t *testing.T, realTime bool, script []string, timeout float64, extra models.Params) (*Exec, *ports.Plan, *logtest.Buffer) {
	t.Helper()
	p := configtest.Plan(t, "../../examples/cruise-pedals.json")
	p.ModelTimeout, p.RealTime = timeout, realTime
	params := models.Params{"command": exectest.Command(script...), "deadlineMs": 4.0}
	for k, v := range extra {
		params[k] = v
	}
	log := &logtest.Buffer{}
	m, err := NewExec(params, p, log.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, p, log
}

// stepFor steps the model every period until cond holds or limit passes.
func stepFor(m *Exec, p *ports.Plan, period, limit time.Duration, cond func(outs, ins [][]float64) bool) ([][]float64, bool) {
	outs, ins := portstest.Vectors(p)
	held := paced(period, limit, func(at time.Duration) bool {
		outs[0][0] = 3
		m.Step(at.Seconds(), outs, ins)
		return cond != nil && cond(outs, ins)
	})
	return ins, held || cond == nil
}

// paced calls step every period, as BeamNG's messages come, with the time
// since the first, until it says it is done or limit passes; it reports
// whether step said so.
func paced(period, limit time.Duration, step func(at time.Duration) bool) bool {
	start := time.Now()
	for time.Since(start) < limit {
		if step(time.Since(start)) {
			return true
		}
		time.Sleep(period) // BeamNG's period, the time between its messages: what the model is stepped at
	}
	return false
}

// In lockstep (the default) a step waits for the program's answer to its
// own request, however long it takes within the model timeout: a program
// slower than the period slows the steps, and every step computes its
// controls from its own data (the answer echoes the request's time as the
// throttle). The deadline plays no part.
func TestExecLockstepWaitsForItsAnswer(t *testing.T) {
	t.Parallel()
	script := []string{"header", "delay=10ms", "answer:*=1 $t 0 0"}
	m, p, log := execRig(t, script, 5, models.Params{"deadlineMs": 1.0})
	th, thE, _ := p.Find(1, "throttle")
	outs, ins := portstest.Vectors(p)
	for k := range 30 {
		tk := float64(k) / 8
		start := time.Now()
		if !m.Step(tk, outs, ins) || ins[th][thE] != tk {
			t.Fatalf("step %d: throttle %v, want its own time %v\n%s", k, ins[th][thE], tk, log)
		}
		if took := time.Since(start); took < 10*time.Millisecond {
			t.Fatalf("step %d took %v: the program takes 10 ms to answer", k, took)
		}
	}
	if m.Missed() != 0 || m.Old() != 0 || m.Fault() != nil {
		t.Errorf("missed %d, old answers %d, fault %v", m.Missed(), m.Old(), m.Fault())
	}
}

// In real time a program slower than the period acts on the newest
// request, one at a time; requests never queue in the pipe (before, after
// 15 s at 10 ms per answer and a 5 ms period, the request being answered
// was 7 s old). An answer is used only at the step it answers: it echoes
// the request's time as the throttle, so the throttle shows whose data it
// acted on; the answers that came after their steps gave up are counted.
func TestExecNewestRequestOnly(t *testing.T) {
	t.Parallel()
	script := []string{"header", "delay=10ms", "answer:*=1 $t 0 0"}
	// A deadline shorter than the program's answer: a step whose answer is
	// late gets none (a loaded machine may wake the step after its answer
	// came: then it is that step's own), and no answer is used at a later
	// step.
	m, p, _ := realTimeRig(t, script, 0.2, nil)
	th, thE, _ := p.Find(1, "throttle")
	computed := 0
	outs, ins := portstest.Vectors(p)
	paced(5*time.Millisecond, 4*time.Second, func(at time.Duration) bool {
		tk := at.Seconds()
		if m.Step(tk, outs, ins) {
			computed++
			if ins[th][thE] != tk {
				t.Fatalf("a step at %v took the answer to the request at %v", tk, ins[th][thE])
			}
		}
		return false
	})
	// Each answer takes ~10 ms: queued requests would make a backlog
	// that grows by 5 ms every answer, 2 s old by the end. Only the newest
	// request waits (some are replaced), so an answer is as old as one
	// answer and the machine's hiccups.
	if m.Skipped() == 0 || m.MaxAnswerAge() > time.Second {
		t.Errorf("skipped %d requests, oldest answer %v (%d steps computed)", m.Skipped(), m.MaxAnswerAge(), computed)
	}
	if m.Fault() != nil || m.Old() == 0 {
		t.Errorf("a slow but steady program: fault %v, %d old answers dropped", m.Fault(), m.Old())
	}
	// A deadline it meets: every step's controls are its own answer.
	m, p, _ = realTimeRig(t, script, 0.2, models.Params{"deadlineMs": 150.0})
	outs, ins = portstest.Vectors(p)
	// The program's start (the test binary, race-built on a loaded
	// machine) may take longer than the deadline: its first answer is
	// waited for.
	for limit := time.Now().Add(10 * time.Second); !m.Step(0, outs, ins) && time.Now().Before(limit); {
	}
	// (A machine loaded enough to hold the program or the reader past the
	// deadline leaves a step without its answer: neutral, never another's.)
	answered := 0
	for k := 1; k <= 20; k++ {
		tk := float64(k) / 8
		if !m.Step(tk, outs, ins) {
			continue
		}
		if answered++; ins[th][thE] != tk {
			t.Fatalf("step %d: throttle %v, want its own time %v", k, ins[th][thE], tk)
		}
	}
	if answered < 10 {
		t.Errorf("%d of 20 steps had their answer within the 150 ms deadline", answered)
	}
}

// Answers that cannot be used are counted and logged
// with their reason, each kind at once. (Numbers that are not finite are
// numbers: the coupling judges them, a fault.) A line when no request is
// outstanding, from a program that does not echo its requests' times, is
// a protocol fault too (see TestExecExtraLines).
func TestExecBadAnswers(t *testing.T) {
	t.Parallel()
	script := []string{"header", "answer=1 0.5", "answer=1 abc 0 0",
		"answer=1 0.5 0 0", "say=1 0.6 0 0", "answer:*=1 0.25 0 0"}
	m, p, log := execRig(t, script, 1, nil)
	th, thE, _ := p.Find(1, "throttle")
	ins, ok := stepFor(m, p, 5*time.Millisecond, 3*time.Second, func(outs, ins [][]float64) bool {
		return ins[th][thE] == 0.25
	})
	if !ok {
		t.Fatalf("throttle %v; log:\n%s", ins[th][thE], log)
	}
	if m.Bad() != 3 {
		t.Errorf("%d answers discarded, want 3", m.Bad())
	}
	for _, want := range []string{
		"2 numbers, expected 4 (the directive, then every input port element)",
		`\"abc\" is not a number (nor \"keep\")`,
		"a line beyond one answer per request (no request is outstanding, and it does not echo one's time",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A program that floors the throttle and exits is a
// fault at once (logged when it happens, not at the end), and it is started
// again with backoff; answering again ends the fault.
func TestExecDiesAndRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	script := []string{"header", "first=" + mark, "answer:2=1 1 0 0", "exit=3",
		"second", "answer:*=1 0.2 0 0"}
	m, p, log := execRig(t, script, 0.05, nil)
	// (A loaded machine may see the exit later than the model timeout
	// after the request the program never read: hung first, then ended.)
	_, ok := stepFor(m, p, 5*time.Millisecond, 2*time.Second, func(_, _ [][]float64) bool {
		return m.Fault() != nil && strings.Contains(m.Fault().Error(), "ended")
	})
	if !ok {
		t.Fatal("the program's exit did not fault the model")
	}
	if err := m.Fault(); !strings.Contains(err.Error(), "ended (exit status 3)") {
		t.Errorf("fault %q", err)
	}
	// Logged at the fault, not at the end: the line follows the fault
	// by the time a log call takes.
	log.WaitFor(t, "model program ended; starting it again")
	th, thE, _ := p.Find(1, "throttle")
	ins, ok := stepFor(m, p, 5*time.Millisecond, 4*time.Second, func(_, ins [][]float64) bool {
		return m.Fault() == nil && ins[th][thE] == 0.2
	})
	if !ok || m.Restarts() != 1 {
		t.Fatalf("after the restart: fault %v, throttle %v, restarts %d\n%s", m.Fault(), ins[th][thE], m.Restarts(), log)
	}
	if !strings.Contains(log.String(), "answering again after its restart") {
		t.Errorf("the recovery went unlogged:\n%s", log)
	}
}

// restart: false leaves a program that ended ended: the fault stays.
func TestExecNoRestart(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"header", "answer=1 1 0 0", "exit=0"}, 0.05, models.Params{"restart": false})
	stepFor(m, p, 5*time.Millisecond, 1200*time.Millisecond, nil)
	if m.Fault() == nil || m.Restarts() != 0 || !strings.Contains(log.String(), "not restarting it") {
		t.Errorf("fault %v, restarts %d\n%s", m.Fault(), m.Restarts(), log)
	}
}

// In lockstep a program that stops answering is hung once its step has
// waited the model timeout for it: that step's message gets neutral
// controls, and while it stays hung later steps do not wait at all. The
// fault says the step had no answer in time (models.ErrLate).
func TestExecHungLockstep(t *testing.T) {
	t.Parallel()
	m, p, _ := execRig(t, []string{"header", "answer:2=1 1 0 0", "sleep=30s"}, 0.2, nil)
	outs, ins := portstest.Vectors(p)
	for k := range 2 {
		if !m.Step(float64(k)*0.005, outs, ins) {
			t.Fatalf("step %d got no answer", k)
		}
	}
	start := time.Now()
	if m.Step(0.010, outs, ins) {
		t.Fatal("the silent program's step says computed")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("the step gave up after %v, before the model timeout (200 ms)", took)
	}
	if !errors.Is(m.Fault(), ErrModelHung) || !errors.Is(m.Fault(), models.ErrLate) {
		t.Errorf("fault %v, want %v", m.Fault(), ErrModelHung)
	}
	start = time.Now()
	for k := range 5 {
		if m.Step(0.015+float64(k)*0.005, outs, ins) {
			t.Fatal("a hung program's step says computed")
		}
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("5 steps of a hung program took %v: a hung program is not waited for", took)
	}
}

// In real time a program that stops answering is hung once the model
// timeout passes; the steps never wait longer than the deadline meanwhile.
// (Stepped until the fault is found, for as long as the program takes to
// start and answer twice: under Wine on a loaded machine, longer than the
// half second this once allowed.)
func TestExecHung(t *testing.T) {
	t.Parallel()
	m, p, _ := realTimeRig(t, []string{"header", "answer:2=1 1 0 0", "sleep=30s"}, 0.05, nil)
	outs, ins := portstest.Vectors(p)
	slowest, quickestMissed := time.Duration(0), time.Hour
	start := time.Now()
	paced(5*time.Millisecond, time.Minute, func(at time.Duration) bool {
		t0 := time.Now()
		got := m.Step(at.Seconds(), outs, ins)
		took := time.Since(t0)
		if slowest = max(slowest, took); !got {
			quickestMissed = min(quickestMissed, took)
		}
		return errors.Is(m.Fault(), ErrModelHung)
	})
	if !errors.Is(m.Fault(), ErrModelHung) {
		t.Fatalf("fault %v after %v, want %v", m.Fault(), time.Since(start), ErrModelHung)
	}
	// A step without its answer waited the deadline (4 ms), not the model
	// timeout (50 ms): the quickest of them shows it, whatever a loaded
	// machine added to some (one took 530 ms beside CI's busy loops). None
	// waited for the program, which sleeps 30 s.
	if quickestMissed > 25*time.Millisecond || slowest > 10*time.Second {
		t.Errorf("the quickest step without an answer took %v, the slowest step %v; the deadline is 4 ms", quickestMissed, slowest)
	}
	if m.Missed() == 0 {
		t.Error("no missed answers counted")
	}
}

// An answer line over 1 MB is discarded, logged at once
// and counted; reading goes on with the next line. Before, the reader
// stopped silently ("token too long" was never logged), no later answer
// was read and the model stayed faulted with no restart.
func TestExecOverlongAnswer(t *testing.T) {
	t.Parallel()
	script := []string{"header", "read", "blob=1200000", "answer:*=1 0.25 0 0"}
	m, p, log := execRig(t, script, 1, nil)
	th, thE, _ := p.Find(1, "throttle")
	ins, ok := stepFor(m, p, 5*time.Millisecond, 4*time.Second, func(_, ins [][]float64) bool {
		return ins[th][thE] == 0.25
	})
	if !ok {
		t.Fatalf("no answer read after the long line: throttle %v, fault %v\n%s", ins[th][thE], m.Fault(), log)
	}
	if m.Bad() != 1 || m.Fault() != nil {
		t.Errorf("discarded %d, want 1; fault %v", m.Bad(), m.Fault())
	}
	if want := "a line of 1200001 bytes, longer than the 1048576 an answer may have"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log)
	}
}

// While BeamNG is not connected the program gets a request now and then
// (idle steps, while BeamNG's time stands still): a healthy program that
// answers each is not hung however long apart they come, and the first
// message after it connects gets its answer (before, the time since the
// last answer was taken for a hang: a fault before BeamNG connected, a
// neutral first reply, exit 1). The hang is judged on a clock of the
// test's, on which the idle requests come 15 s apart, longer than the
// model timeout of 10 s: the program's own pace, and the machine's load,
// play no part (each answer is waited for before the clock moves on; a
// real wait of 10 s is a bound only a hang reaches).
func TestExecIdleIsNoFault(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"header", "answer:*=1 0.5 0 0"}, 10, models.Params{"deadlineMs": 20.0})
	var now atomic.Int64
	m.clock = now.Load // before the first request
	outs, ins := portstest.Vectors(p)
	outs[0][0] = 2
	for i := range 4 {
		now.Add(int64(15 * time.Second))
		m.Idle(0, outs, ins)
		if m.Fault() != nil {
			t.Fatalf("idle request %d, %v after the one before: %v\n%s", i+1, 15*time.Second, m.Fault(), log)
		}
		// Its answer (within the idle step's 20 ms, or later) before the
		// clock moves on.
		eventually.Must(t, time.Minute, "the program's answer to the idle request", func() bool { return m.unanswered.Load() == 0 })
	}
	select {
	case <-m.Started(): // it answered an idle request: an emulated BeamNG may start
	default:
		t.Error("a program that answered is not said to have started")
	}
	now.Add(int64(15 * time.Second))
	outs[0][0] = 3
	th, thE, _ := p.Find(1, "throttle")
	if !m.Step(1.25, outs, ins) || ins[th][thE] != 0.5 || m.Fault() != nil {
		t.Errorf("the first message after connecting: throttle %v, fault %v", ins[th][thE], m.Fault())
	}
}

// "keep" leaves a control as BeamNG has it: models.Keep, which the
// coupling sends as BeamNG's "keep". "nan" is a number gone wrong, not
// keep: it is passed on as NaN, which the coupling makes a fault.
func TestExecKeepAndNaN(t *testing.T) {
	t.Parallel()
	// The program stays: one that exits after its last answer may be seen
	// dead before that answer is taken, on a loaded machine.
	m, p, log := execRig(t, []string{"header", "answer=1 keep 0.5 0", "answer=1 nan 0.5 0", "answer=1 -inf keep 0", "answer:*=1 0 0 0"}, 5, nil)
	th, thE, _ := p.Find(1, "throttle")
	br, brE, _ := p.Find(1, "brake")
	outs, ins := portstest.Vectors(p)
	if !m.Step(0, outs, ins) || !models.IsKeep(ins[th][thE]) || ins[br][brE] != 0.5 {
		t.Fatalf("keep: throttle %v (keep %v), brake %v\n%s", ins[th][thE], models.IsKeep(ins[th][thE]), ins[br][brE], log)
	}
	if !m.Step(0.005, outs, ins) || !math.IsNaN(ins[th][thE]) || models.IsKeep(ins[th][thE]) {
		t.Fatalf("nan: throttle %v, keep %v: want a NaN that is not keep", ins[th][thE], models.IsKeep(ins[th][thE]))
	}
	if !m.Step(0.010, outs, ins) || !math.IsInf(ins[th][thE], -1) || !models.IsKeep(ins[br][brE]) {
		t.Fatalf("-inf keep: %v %v", ins[th][thE], ins[br][brE])
	}
	if m.Bad() != 0 || m.Fault() != nil {
		t.Errorf("discarded %d, fault %v: these are answers", m.Bad(), m.Fault())
	}
}

// The exec protocol with a program, in real time: the header, one answer
// per step, and a program that stops answering costs a counted miss, not a
// hang, and the step waits only its deadline.
func TestExec(t *testing.T) {
	p := configtest.Plan(t, "../../examples/cruise-pedals.json")
	p.ModelTimeout, p.RealTime = 5, true
	// Answers directive 1, throttle 0.5, brake 0, driveMode 0 to the first
	// two steps, then sleeps.
	script := exectest.Command("header=# columns: t status groundspeed*| directive throttle brake driveMode",
		"answer=1 0.5 0 0", "answer=1 keep 0.25 0", "read", "sleep=5s")
	m, err := NewExec(models.Params{"command": script, "deadlineMs": 500.0}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := m
	outs, ins := portstest.Vectors(p)
	th, thE, _ := p.Find(1, "throttle")
	br, brE, _ := p.Find(1, "brake")
	m.Step(0, outs, ins)
	if ins[th][thE] != 0.5 || ins[0][0] != 1 {
		t.Fatalf("first answer not applied: %v", ins)
	}
	m.Step(0.005, outs, ins)
	if !models.IsKeep(ins[th][thE]) || ins[br][brE] != 0.25 {
		t.Fatalf("second answer not applied: %v", ins)
	}
	start := time.Now()
	m.Step(0.010, outs, ins)
	if took := time.Since(start); took > 2*time.Second || ex.Missed() != 1 || ins[br][brE] != 0.25 {
		t.Errorf("a silent program: step took %v, missed %d, brake %v (want the last value kept)", took, ex.Missed(), ins[br][brE])
	}
	done := make(chan error)
	go func() { done <- m.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a program that does not exit")
	}
}

// A program names what it answers with a "# columns:" line of its own:
// the inputs it names are its variables, driving their fields (the
// recording and the page show them under its names and units); "-" keeps
// the config's name; values it appends after the inputs are recorded, not
// sent. A line that names too few is said and ignored, and answers must
// have the count the line says.
func TestExecNamesItsValues(t *testing.T) {
	t.Parallel()
	script := []string{"header", "say=# columns: directive pedal[1] - - err[m/s] i[m]", "answer:*=1 0.25 0 0 1.5 -2"}
	m, p, log := execRig(t, script, 1, nil)
	th, thE, _ := p.Find(1, "throttle")
	values := make([]float64, 3)
	if _, ok := stepFor(m, p, 5*time.Millisecond, 5*time.Second, func(outs, ins [][]float64) bool {
		if len(m.Variables()) == 3 {
			m.Sample(values)
		}
		return ins[th][thE] == 0.25 && values[2] == -2
	}); !ok {
		t.Fatalf("the named answers were not taken: variables %+v, values %v; log:\n%s", m.Variables(), values, log)
	}
	vars := m.Variables()
	if v := vars[0]; v.Name != "pedal" || v.Unit != "1" || !v.Drives || v.At != (models.Ref{Port: th, Elem: thE}) {
		t.Errorf("the throttle's variable %+v", v)
	}
	if v := vars[1]; v.Name != "err" || v.Unit != "m/s" || v.Drives {
		t.Errorf("the first appended value %+v", v)
	}
	if values[0] != 0.25 || values[1] != 1.5 || values[2] != -2 || m.Bad() != 0 {
		t.Errorf("sampled %v, %d answers discarded", values, m.Bad())
	}
	if again := m.Variables(); !models.SameVariables(again, vars) {
		t.Errorf("the same names made another list: the recording would be laid out again at every message")
	}
	// Too few names: said, and ignored; answers keep the inputs' count.
	script = []string{"header", "say=# columns: directive pedal", "answer:*=1 0.5 0 0"}
	m, p, log = execRig(t, script, 1, nil)
	if _, ok := stepFor(m, p, 5*time.Millisecond, 5*time.Second, func(outs, ins [][]float64) bool { return ins[th][thE] == 0.5 }); !ok ||
		len(m.Variables()) != 0 || !log.Has(`the program's \"# columns:\" line names 2 values, its answers have at least 4`) {
		t.Errorf("too few names: variables %+v; log:\n%s", m.Variables(), log)
	}
}

// A program's "# columns:" line, whatever it holds, is read or refused,
// never a panic: a declaration names one value per number past the
// directive, its units taken from NAME[UNIT].
func FuzzDeclare(f *testing.F) {
	f.Add("# columns: directive pedal[1] - - err[m/s]", 4)
	f.Add("# columns:", 1)
	f.Add("# columns: d u[1] v[", 3)
	f.Add("# nothing", 2)
	f.Fuzz(func(t *testing.T, line string, width int) {
		if width < 1 || width > 1000 {
			return
		}
		d, msg := declare(line, width)
		if d == nil {
			return
		}
		if msg != "" || len(d.names) != len(d.units) || len(d.names) != width-1+d.extra || d.extra < 0 {
			t.Fatalf("%q (width %d): %+v %q", line, width, d, msg)
		}
	})
}

// In lockstep a program that has not said a line since it started (a
// start, or a start again to start over at BeamNG's restart) is starting,
// not hung: the step waits for its first answer beyond the model timeout
// (an interpreter on a loaded machine takes longer than that to start),
// and the reply carries what it computed. Before, the step gave up at the
// model timeout: neutral controls, a missed step.
func TestExecStartWaitedForInLockstep(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"sleep=300ms", "header", "answer:*=@$t 1 0.5 0 0"}, 0.05, nil)
	outs, ins := portstest.Vectors(p)
	outs[0][0] = 3
	th, thE, _ := p.Find(1, "throttle")
	if !m.Step(0, outs, ins) || ins[th][thE] != 0.5 || m.Fault() != nil || m.Missed() != 0 {
		t.Errorf("the first step: throttle %v, fault %v, missed %d: want the program's answer, waited for\n%s", ins[th][thE], m.Fault(), m.Missed(), log)
	}
}

// The same holds for a program started again to start over at BeamNG's
// restart: the step right after the reset waits for the new run's start,
// however soon it comes after the reset. Before, it had the old run's
// model timeout (that run had spoken), and missed while the new one
// started.
func TestExecRestartWaitedForInLockstep(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"sleep=300ms", "header", "answer:*=@$t 1 0.5 0 0"}, 0.05, nil)
	outs, ins := portstest.Vectors(p)
	th, thE, _ := p.Find(1, "throttle")
	if !m.Step(0, outs, ins) {
		t.Fatalf("the first step: no answer\n%s", log)
	}
	if err := m.Reset(); err != nil {
		t.Fatal(err)
	}
	ins[th][thE] = 0
	if !m.Step(0, outs, ins) || ins[th][thE] != 0.5 || m.Fault() != nil || m.Missed() != 0 || m.ResetStarts() != 1 {
		t.Errorf("the step after the reset: throttle %v, fault %v, missed %d, started again %d: want the new run's answer, waited for\n%s", ins[th][thE], m.Fault(), m.Missed(), m.ResetStarts(), log)
	}
}

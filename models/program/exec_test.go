package program

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// cruise-pedals rig (inputs: directive, throttle, brake, driveMode).
func execRig(t *testing.T, script []string, timeout float64, extra models.Params) (*Exec, *ports.Plan, *logtest.Buffer) {
	t.Helper()
	p := portstest.Load(t, "../../examples/cruise-pedals.json")
	p.ModelTimeout = timeout
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
	start := time.Now()
	for time.Since(start) < limit {
		outs[0][0] = 3
		m.Step(time.Since(start).Seconds(), outs, ins)
		if cond != nil && cond(outs, ins) {
			return ins, true
		}
		time.Sleep(period)
	}
	return ins, cond == nil
}

// A program slower than the period acts on the newest request, one at a
// time; requests never queue in the pipe (before, after 15 s at 10 ms per
// answer and a 5 ms period, the request being answered was 7 s old). An
// answer is used only at the step it answers: it echoes the request's
// time as the throttle, so the throttle shows whose data it acted on.
func TestExecNewestRequestOnly(t *testing.T) {
	t.Parallel()
	script := []string{"header", "delay=10ms", "answer:*=1 $t 0 0"}
	// A deadline shorter than the program's answer: no step gets one in
	// time, and no answer is used at a later step.
	m, p, _ := execRig(t, script, 0.2, nil)
	th, thE, _ := p.Find(1, "throttle")
	computed := 0
	outs, ins := portstest.Vectors(p)
	start := time.Now()
	for time.Since(start) < 2*time.Second {
		if m.Step(time.Since(start).Seconds(), outs, ins) {
			computed++
		}
		time.Sleep(5 * time.Millisecond)
	}
	if computed != 0 || ins[th][thE] != 0 {
		t.Errorf("%d steps computed, throttle %v: an answer after its deadline was used", computed, ins[th][thE])
	}
	// Each answer takes ~10 ms (plus sh's fork of sleep); a backlog would
	// grow by 5 ms every answer, past 700 ms by the end; the bound leaves
	// room for a loaded CI machine's scheduling.
	if m.Skipped() == 0 || m.MaxAnswerAge() > 250*time.Millisecond {
		t.Errorf("skipped %d requests, oldest answer %v", m.Skipped(), m.MaxAnswerAge())
	}
	if m.Fault() != nil {
		t.Errorf("a slow but steady program faulted: %v", m.Fault())
	}
	// A deadline it meets: every step's controls are its own answer.
	m, p, _ = execRig(t, script, 0.2, models.Params{"deadlineMs": 150.0})
	outs, ins = portstest.Vectors(p)
	// The program's start (the test binary, race-built on a loaded
	// machine) may take longer than the deadline: its first answer is
	// waited for.
	for limit := time.Now().Add(10 * time.Second); !m.Step(0, outs, ins) && time.Now().Before(limit); {
	}
	for k := 1; k <= 20; k++ {
		tk := float64(k) / 8
		if !m.Step(tk, outs, ins) || ins[th][thE] != tk {
			t.Fatalf("step %d: throttle %v, want its own time %v", k, ins[th][thE], tk)
		}
	}
}

// Answers that cannot be used are counted and logged
// with their reason, each kind at once.
func TestExecBadAnswers(t *testing.T) {
	t.Parallel()
	script := []string{"header", "answer=1 0.5", "answer=1 abc 0 0", "answer=1 inf 0 0",
		"answer=1 0.5 0 0", "say=1 0.6 0 0", "answer:*=1 0.25 0 0"}
	m, p, log := execRig(t, script, 1, nil)
	th, thE, _ := p.Find(1, "throttle")
	ins, ok := stepFor(m, p, 5*time.Millisecond, 3*time.Second, func(outs, ins [][]float64) bool {
		return ins[th][thE] == 0.25
	})
	if !ok {
		t.Fatalf("throttle %v; log:\n%s", ins[th][thE], log)
	}
	if m.Bad() != 4 {
		t.Errorf("%d answers discarded, want 4", m.Bad())
	}
	for _, want := range []string{
		"2 numbers, expected 4 (the directive, then every input port element)",
		`\"abc\" is not a number`,
		"inf is not a usable control value",
		"no request is outstanding: the program answered more lines than it was sent",
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
	_, ok := stepFor(m, p, 5*time.Millisecond, 2*time.Second, func(_, _ [][]float64) bool { return m.Fault() != nil })
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

// A program that stops answering is hung once the model timeout passes;
// the steps never wait longer than the deadline meanwhile.
func TestExecHung(t *testing.T) {
	t.Parallel()
	m, p, _ := execRig(t, []string{"header", "answer:2=1 1 0 0", "sleep=30s"}, 0.05, nil)
	outs, ins := portstest.Vectors(p)
	var slowest time.Duration
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		t0 := time.Now()
		m.Step(time.Since(start).Seconds(), outs, ins)
		slowest = max(slowest, time.Since(t0))
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.Is(m.Fault(), ErrModelHung) {
		t.Errorf("fault %v, want %v", m.Fault(), ErrModelHung)
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("a step took %v; the deadline is 4 ms", slowest)
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

// While BeamNG is not connected the program gets a request every 50 ms
// (idle steps), twice the model timeout apart here: a healthy program that
// answers each is not hung, and the first message after it connects gets
// its answer (before, the time since the last answer was taken for a hang:
// a fault before BeamNG connected, a neutral first reply, exit 1).
func TestExecIdleIsNoFault(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"header", "answer:*=1 0.5 0 0"}, 0.025, models.Params{"deadlineMs": 20.0})
	outs, ins := portstest.Vectors(p)
	outs[0][0] = 2
	start := time.Now()
	for k := 0; time.Since(start) < 1200*time.Millisecond; k++ {
		m.Idle(time.Since(start).Seconds(), outs, ins)
		if m.Fault() != nil {
			t.Fatalf("after %v of idle requests: %v\n%s", time.Since(start).Round(time.Millisecond), m.Fault(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	outs[0][0] = 3
	th, thE, _ := p.Find(1, "throttle")
	if !m.Step(1.25, outs, ins) || ins[th][thE] != 0.5 || m.Fault() != nil {
		t.Errorf("the first message after connecting: throttle %v, fault %v", ins[th][thE], m.Fault())
	}
}

// The exec protocol with a program: the header, one answer per step,
// and a program that stops answering costs a counted miss, not a hang.
func TestExec(t *testing.T) {
	p := portstest.Load(t, "../../examples/cruise-pedals.json")
	p.ModelTimeout = 5
	// Answers directive 1, throttle 0.5, brake 0, driveMode 0 to the first
	// two steps, then sleeps.
	script := exectest.Command("header=# columns: t status groundspeed*| directive throttle brake driveMode",
		"answer=1 0.5 0 0", "answer=1 nan 0.25 0", "read", "sleep=5s")
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
	if !math.IsNaN(ins[th][thE]) || ins[br][brE] != 0.25 {
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

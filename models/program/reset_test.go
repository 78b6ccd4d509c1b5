package program

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beamconnect/models"
	"beamconnect/ports/portstest"
)

// A program counting its requests (its throttle: how many it answered
// before, since it started or was written "# reset") starts over when
// BeamNG starts its coupling again: by its reset line if it said it speaks
// reset, else started again; its next answer is its first again. Reset
// returns at once either way. modelParams.reset "restart" starts even a
// program that speaks reset again; "line" never starts one again, so one
// that does not speak reset is not reset (an error: it counts on); "none"
// keeps the state on purpose (models.ErrKeepsState).
func TestExecReset(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		speaks  bool
		mode    string // modelParams.reset; "" for the default
		err     string // Reset's error says
		started int64  // times the program was started again to start over
	}{
		{name: "a program that speaks reset", speaks: true},
		{name: "a program that does not", started: 1},
		{name: "restart, for a program that speaks reset", speaks: true, mode: "restart", started: 1},
		{name: "line, for a program that does not speak it", mode: "line", err: `modelParams.reset is "line", and the model program has not said it speaks reset`},
		{name: "none", speaks: true, mode: "none", err: models.ErrKeepsState.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script := []string{"header", "answer:*=1 $n 0 0"}
			if tt.speaks {
				script = []string{"header", "say=# protocol: reset", "answer:*=1 $n 0 0"}
			}
			var params models.Params
			if tt.mode != "" {
				params = models.Params{"reset": tt.mode}
			}
			m, p, log := execRig(t, script, 5, params)
			th, thE, _ := p.Find(1, "throttle")
			outs, ins := portstest.Vectors(p)
			k := 0
			step := func(want float64) {
				t.Helper()
				if !m.Step(float64(k)*0.005, outs, ins) || ins[th][thE] != want || m.Fault() != nil {
					t.Fatalf("step %d: throttle %v, want %v; fault %v\n%s", k, ins[th][thE], want, m.Fault(), log)
				}
				k++
			}
			for n := range 5 {
				step(float64(n))
			}
			err := m.Reset()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Reset: %v, want an error saying %q", err, tt.err)
				}
				step(5) // it keeps its state
				step(6)
			} else {
				if err != nil {
					t.Fatalf("Reset: %v", err)
				}
				step(0) // its first answer again
				step(1)
			}
			if m.ResetStarts() != tt.started || m.Restarts() != 0 {
				t.Errorf("started again %d times to start over (want %d), %d restarts after a fault (want 0)", m.ResetStarts(), tt.started, m.Restarts())
			}
			if tt.started > 0 && !log.Has("the model program is started again to start over") {
				t.Errorf("the start is not said:\n%s", log)
			}
			if log.Has("model program ended") {
				t.Errorf("a program ended for its reset is said to have ended:\n%s", log)
			}
		})
	}
}

// A hung program that does not speak reset is started again when BeamNG
// starts its coupling again, and the new run answers: the hang ends with
// it. (One that speaks reset gets its line once it answers.)
func TestExecResetEndsAHungProgram(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "ran")
	script := []string{"header", "first=" + mark, "answer:5=1 $n 0 0", "sleep=30s", "second", "answer:*=1 $n 0 0"}
	m, p, log := execRig(t, script, 0.2, nil)
	outs, ins := portstest.Vectors(p)
	for k := range 5 {
		if !m.Step(float64(k)*0.005, outs, ins) {
			t.Fatalf("step %d: no answer\n%s", k, log)
		}
	}
	if m.Step(0.025, outs, ins) || !errors.Is(m.Fault(), ErrModelHung) {
		t.Fatalf("the sixth step: fault %v, want hung", m.Fault())
	}
	if err := m.Reset(); err != nil {
		t.Fatal(err)
	}
	// The new run answers its first request or the next (a hung model's
	// step does not wait, and the new run may take a while to start).
	th, thE, _ := p.Find(1, "throttle")
	ok := false
	paced(5*time.Millisecond, 10*time.Second, func(time.Duration) bool {
		ok = m.Step(0.03, outs, ins)
		return ok
	})
	if !ok || ins[th][thE] > 1 || m.Fault() != nil || m.ResetStarts() != 1 {
		t.Errorf("after the reset: throttle %v (the new run's answers count from 0), fault %v, started again %d times\n%s", ins[th][thE], m.Fault(), m.ResetStarts(), log)
	}
}

// A program that ended for good (modelParams.restart false) cannot start
// over: Reset says so.
func TestExecResetEndedProgram(t *testing.T) {
	t.Parallel()
	m, p, _ := execRig(t, []string{"header", "answer=1 0 0 0", "exit=0"}, 0.05, models.Params{"restart": false})
	stepFor(m, p, 5*time.Millisecond, 5*time.Second, func(_, _ [][]float64) bool { return m.Fault() != nil })
	if err := m.Reset(); err == nil || !strings.Contains(err.Error(), "has ended and is not started again") {
		t.Errorf("Reset of an ended program: %v", err)
	}
}

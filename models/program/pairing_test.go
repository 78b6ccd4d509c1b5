package program

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"beamconnect/ports/portstest"
)

// An answer that echoes its request's time ("@t …") is used for that
// request only, also where times repeat (idle requests, a model several
// vehicles share: each vehicle's request at one simulation step): the
// repeated time is written another way, and the program echoes what it
// was written. The answer's throttle is the request's time as written:
// every step's controls are its own.
func TestExecEchoedAnswers(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"header", "answer:*=@$t 1 $t 0 0"}, 5, nil)
	th, thE, _ := p.Find(1, "throttle")
	outs, ins := portstest.Vectors(p)
	for k, tk := range []float64{0, 0, 0, 0.005, 0.005, 0.01, 0.015, 0.015, 0.015} {
		if !m.Step(tk, outs, ins) || ins[th][thE] != tk {
			t.Fatalf("step %d at %v: throttle %v\n%s", k, tk, ins[th][thE], log)
		}
	}
	if m.Old() != 0 || m.Bad() != 0 || m.Fault() != nil {
		t.Errorf("old answers %d, discarded %d, fault %v", m.Old(), m.Bad(), m.Fault())
	}
}

// A program that writes some answers twice (every 10th, the copy 0, 1 or
// 5 ms later, while beamconnect already waits for the next answer). Its
// answer's throttle is its request's time, so a step that took another
// request's answer shows it.
//
// Echoing "@t": no step takes another request's answer; every copy is
// dropped and counted as an old answer; no fault.
//
// Not echoing: a copy that comes while a request is outstanding is taken
// for that request's answer (nothing tells them apart), and the count of
// lines is one ahead of the requests until a line comes with none
// outstanding. Each such line is a protocol fault: counted as discarded,
// said, the next message step faulted (its reply neutral), over with the
// step after. Every copy is counted in the end.
func TestExecDuplicatedAnswers(t *testing.T) {
	t.Parallel()
	const copies = 20
	for _, echo := range []bool{true, false} {
		for _, after := range []string{"0s", "1ms", "5ms"} {
			// One after another, each step 1 ms after the last: beside the
			// timing tests, not many busy loops at once.
			t.Run(fmt.Sprintf("echo %v, the copy %s later", echo, after), func(t *testing.T) {
				answer := "1 $t 0 0"
				if echo {
					answer = "@$t " + answer
				}
				script := []string{"header", "twice=10:" + after, fmt.Sprintf("answer:%d=%s", 10*copies, answer),
					"twice=1000000000:0s", "answer:*=" + answer}
				m, p, log := execRig(t, script, 5, nil)
				th, thE, _ := p.Find(1, "throttle")
				outs, ins := portstest.Vectors(p)
				counted := func() int64 {
					if echo {
						return m.Old()
					}
					return m.Bad()
				}
				others, faulted, k := 0, 0, 0
				step := func() {
					tk := float64(k) * 0.005
					k++
					if m.Step(tk, outs, ins) && ins[th][thE] != tk {
						if others++; others <= 3 && echo {
							t.Errorf("the step at %v took the answer to the request at %v", tk, ins[th][thE])
						}
					}
					if errors.Is(m.Fault(), ErrExtraLine) {
						faulted++
					}
				}
				paced(time.Millisecond, 20*time.Second, func(time.Duration) bool {
					step()
					return counted() >= copies
				})
				if counted() != copies {
					t.Fatalf("after %d steps: %d old answers, %d discarded; want %d copies counted\n%s", k, m.Old(), m.Bad(), copies, log)
				}
				// The fault of the last extra line ends once a step has
				// shown it and the next has its own answer.
				for range 3 {
					step()
				}
				t.Logf("%d steps: %d took another request's answer, %d faulted", k, others, faulted)
				if echo {
					if others != 0 || faulted != 0 || m.Bad() != 0 {
						t.Errorf("echoed: %d steps took another request's answer, %d were faulted, %d answers discarded", others, faulted, m.Bad())
					}
					return
				}
				if faulted == 0 || m.Fault() != nil || m.Old() != 0 {
					t.Errorf("not echoed: %d steps faulted (want some), fault at the end %v, old answers %d", faulted, m.Fault(), m.Old())
				}
				if !log.Has("a line beyond one answer per request (no request is outstanding") {
					t.Errorf("the extra lines were not said:\n%s", log)
				}
			})
		}
	}
}

// The fault of an extra line is reported after a message step (the
// coupling reads Fault after each: that message's reply is neutral):
// the step the line came in, or the next; it ends with the step after
// that has its own answer.
func TestExecExtraLineFault(t *testing.T) {
	t.Parallel()
	m, p, log := execRig(t, []string{"header", "answer=1 0.25 0 0", "say=1 0.5 0 0", "answer:*=1 0.75 0 0"}, 5, nil)
	outs, ins := portstest.Vectors(p)
	var faults []error
	for k := range 3 {
		if !m.Step(float64(k)*0.005, outs, ins) {
			t.Fatalf("step %d: no answer\n%s", k, log)
		}
		faults = append(faults, m.Fault())
		if k == 0 {
			log.WaitFor(t, "a line beyond one answer per request (no request is outstanding")
		}
	}
	if !errors.Is(faults[0], ErrExtraLine) && !errors.Is(faults[1], ErrExtraLine) || faults[2] != nil {
		t.Errorf("faults after the steps: %v; want the extra line reported after the first or second, none after the third", faults)
	}
	if m.Bad() != 1 {
		t.Errorf("%d lines discarded, want 1", m.Bad())
	}
}

// A step of an echoing program allocates nothing: the request's time
// written, the echo compared, the answer read (every goroutine's
// allocations count). So does one whose time repeats.
func TestExecStepAllocs(t *testing.T) {
	m, p, log := execRig(t, []string{"header", "answer:*=@$t 1 0.5 0 0"}, 5, nil)
	outs, ins := portstest.Vectors(p)
	k := 0
	step := func() {
		if !m.Step(float64(k/2)*0.005, outs, ins) { // each time twice
			t.Fatalf("step %d: no answer\n%s", k, log)
		}
		k++
	}
	for range 20 {
		step() // buffers grown, the program started
	}
	if n := testing.AllocsPerRun(500, step); n != 0 {
		t.Errorf("%v allocations per step", n)
	}
}

package fmumodel

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"beamconnect/fmu/testfmu"
	"beamconnect/models"
)

// An FMU that asks to end the simulation (FMI 2.0: a discarded step and
// fmi2Terminated; FMI 3.0: terminateSimulation) ends cleanly: one log
// line with its time and its reason, no controls from then on, no fault,
// no restart.
func TestFMUTerminates(t *testing.T) {
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		m, p, log := fmuRig(t, testfmu.Options{FMI: major, Fault: "terminate", After: 50}, host)
		outs, ins := vectors(p)
		k := 0
		for ; k < 2000 && m.Ended() == nil; k++ {
			outs[0][0] = 3
			m.Step(float64(k)*p.Period, outs, ins)
			if m.Fault() != nil {
				t.Fatalf("a fault at step %d: %v\n%s", k, m.Fault(), log)
			}
		}
		err := m.Ended()
		// Its 50th step began at 0.245 s; it stopped halfway.
		if err == nil || !strings.Contains(err.Error(), "t = 0.2475 s") || !strings.Contains(err.Error(), "the test track ends here") {
			t.Fatalf("ended: %v\n%s", err, log)
		}
		for range 50 {
			outs[0][0] = 3
			if m.Step(float64(k)*p.Period, outs, ins) {
				t.Fatal("controls from an FMU that ended the simulation")
			}
			k++
		}
		if n := strings.Count(log.String(), "ended the simulation"); n != 1 || m.Restarts() != 0 || m.Fault() != nil || m.Failures() != 0 {
			t.Errorf("%d log lines, restarts %d, fault %v, failures %d\n%s", n, m.Restarts(), m.Fault(), m.Failures(), log)
		}
		if notes := strings.Join(m.Notes(), "\n"); !strings.Contains(notes, "t = 0.2475 s") {
			t.Errorf("notes: %s", notes)
		}
	})
}

// A step discarded without asking to stop, by an FMU that cannot redo it
// smaller, is a fault that says so (FMI 2.0 and 3.0).
func TestFMUDiscardIsAFault(t *testing.T) {
	for _, major := range []int{2, 3} {
		t.Run(fmt.Sprintf("FMI %d", major), func(t *testing.T) {
			m, p, log := fmuRig(t, testfmu.Options{FMI: major, Fault: "discard", After: 20}, models.Params{"inProcess": true, "restart": false})
			if _, ok := drive(m, p, 5, 5*time.Second, func([][]float64) bool { return m.Fault() != nil }); !ok {
				t.Fatalf("no fault\n%s", log)
			}
			if err := m.Fault(); !strings.Contains(err.Error(), "Discard") || !strings.Contains(err.Error(), "did not ask to stop") || m.Ended() != nil {
				t.Errorf("fault %v, ended %v", err, m.Ended())
			}
		})
	}
}

// A live tune beyond a parameter's min or max in the model description
// is refused with the reload, by the description, before any FMU sees it.
func TestFMUTuneBeyondRangeRefused(t *testing.T) {
	m, p, _ := fmuRig(t, testfmu.Options{FMI: 3, Extra: []string{
		`<Float64 name="gain" valueReference="21" causality="parameter" variability="tunable" start="1" min="0" max="10"/>`,
	}}, nil)
	running := paramsOf(m)
	_, err := m.Rebind(p, running, with(running, "parameters", map[string]any{"setSpeed": 10.0, "gain": 50.0}))
	if err == nil || !strings.Contains(err.Error(), `modelParams.parameters.gain: the FMU's "gain" takes 0 to 10 (its min and max): 50 is above`) {
		t.Errorf("Rebind: %v", err)
	}
}

// A step discarded without asking to stop, by an FMU that can save and
// restore its state and take other step sizes, is redone in halves, as
// the standard suggests: no fault, and the controls those of a run with
// no discard.
func TestFMUDiscardRedoneInHalves(t *testing.T) {
	variants(t, "", func(t *testing.T, major int, host models.Params) {
		run := func(fault string) []float64 {
			m, p, log := fmuRig(t, testfmu.Options{FMI: major, Fault: fault, After: 20, VariableStep: true, GetSetState: true},
				host)
			outs, ins := vectors(p)
			sp, spE, _ := p.Find(0, "groundspeed")
			var got []float64
			for k := range 60 {
				outs[0][0] = 3
				outs[sp][spE] = 9.5 // near the set speed: the integral matters
				// A late answer (a loaded machine) is awaited again: this
				// is about the values, not the timing.
				for n := 0; !m.Step(float64(k)*p.Period, outs, ins); n++ {
					if m.Fault() != nil || n == 1000 {
						t.Fatalf("%q: step %d: no controls: %v\n%s", fault, k, m.Fault(), log)
					}
				}
				th, _ := pedals(t, p, ins)
				got = append(got, th)
			}
			return got
		}
		want, got := run(""), run("discard")
		for k := range want {
			if math.Abs(got[k]-want[k]) > 1e-12 {
				t.Fatalf("step %d: throttle %v, want %v as without the discard", k, got[k], want[k])
			}
		}
	})
}

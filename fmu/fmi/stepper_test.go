package fmi_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/testfmu"
)

// stepper builds a cruise FMU, unpacks it and instantiates it, bound to
// groundspeed in, throttle, brake and fmuTime out.
func stepper(t testing.TB, o testfmu.Options, period float64, log fmi.Logger) *fmi.Stepper {
	t.Helper()
	o.TimeOutput = true
	path := testfmu.ForTest(t, "cruise.fmu", o)
	f, err := fmu.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := f.Unpack(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	v := func(name string) fmi.Var {
		x, ok := f.Desc.Variable(name)
		if !ok {
			t.Fatalf("no variable %s", name)
		}
		return fmi.Var{VR: x.VR, Kind: x.Kind, Name: x.Name}
	}
	s, err := fmi.NewStepper(fmi.Setup{
		Library: u.Library, Major: f.Desc.Major, Token: f.Desc.Token, Resources: u.Resources, Name: "test",
		Inputs: []fmi.Var{v("groundspeed")}, Outputs: []fmi.Var{v("throttle"), v("brake"), v("fmuTime")},
		Params: []fmi.Var{v("setSpeed")}, ParamValues: []float64{10},
		Period: period, VariableStep: f.Desc.CoSim.VariableStep,
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The PI controller computes what the built-in one does, in both
// versions: below the set speed it opens the throttle, above it brakes.
func TestStepperCruise(t *testing.T) {
	for _, major := range []int{2, 3} {
		s := stepper(t, testfmu.Options{FMI: major}, 0.005, nil)
		out := make([]float64, 3)
		if ok, err := s.Step(1, []float64{5}, out); !ok || err != nil {
			t.Fatalf("FMI %d: %v %v", major, ok, err)
		}
		// kp 0.3 × error 5 plus ki 0.05 × 5 × 0.005 = 1.50125, clamped to 1;
		// the FMU's time that of message 201 at 5 ms: 201 × 0.005, computed
		// from the id (1.0050000000000001), not summed (1.005).
		if out[0] != 1 || out[1] != 0 || out[2] != idTime(201, 0.005) {
			t.Errorf("FMI %d below the set speed: %v", major, out)
		}
		s.Step(1.005, []float64{12}, out) // 2 m/s over: brakes
		if out[0] != 0 || !(out[1] > 0.5) {
			t.Errorf("FMI %d above the set speed: %v", major, out)
		}
		if tc, _ := s.Time(); math.Abs(tc-1.01) > 1e-12 {
			t.Errorf("FMI %d time %v", major, tc)
		}
	}
}

// The time rules: no step without new time, a gap crossed (whole periods
// for a fixed-step FMU, one step for a variable-step one), a reset when
// time goes back.
func TestStepperTime(t *testing.T) {
	const h = 0.01
	for _, tt := range []struct {
		name     string
		variable bool
		times    []float64
		fmuTimes []float64 // fmuTime after each step
		stepped  []bool
		catchUps int64
		resets   int64
	}{
		{"on the grid", false, []float64{2, 2.01, 2.02}, []float64{2.01, 2.02, 2.03}, []bool{true, true, true}, 0, 0},
		{"same time twice", false, []float64{2, 2.01, 2.01}, []float64{2.01, 2.02, 2.02}, []bool{true, true, false}, 0, 0},
		{"a lost message, fixed step", false, []float64{2, 2.02}, []float64{2.01, 2.03}, []bool{true, true}, 1, 0},
		{"a lost message, variable step", true, []float64{2, 2.03}, []float64{2.01, 2.04}, []bool{true, true}, 1, 0},
		{"a long gap is caught up over several messages", false, []float64{2, 2.5, 2.51}, []float64{2.01, 2.12, 2.23}, []bool{true, true, true}, 20, 0},
		{"time went back", false, []float64{5, 5.01, 0.01}, []float64{5.01, 5.02, 0.02}, []bool{true, true, true}, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := stepper(t, testfmu.Options{VariableStep: tt.variable}, h, nil)
			out := make([]float64, 3)
			for i, tm := range tt.times {
				ok, err := s.Step(tm, []float64{0}, out)
				if err != nil || ok != tt.stepped[i] || math.Abs(out[2]-tt.fmuTimes[i]) > 1e-9 {
					t.Errorf("step at %v: stepped %v (%v), FMU time %v, want %v", tm, ok, err, out[2], tt.fmuTimes[i])
				}
			}
			if s.CatchUps != tt.catchUps || s.Resets != tt.resets {
				t.Errorf("catch-ups %d resets %d, want %d and %d", s.CatchUps, s.Resets, tt.catchUps, tt.resets)
			}
		})
	}
}

// A reset keeps the parameters the run set: the set speed stays 10.
func TestStepperResetKeepsParameters(t *testing.T) {
	s := stepper(t, testfmu.Options{}, 0.005, nil)
	out := make([]float64, 3)
	s.Step(3, []float64{11}, out)
	s.Step(0, []float64{11}, out) // back: reset
	if s.Resets != 1 || out[0] != 0 || out[1] == 0 {
		t.Errorf("after the reset at 11 m/s for a set speed of 10: throttle %v brake %v (resets %d)", out[0], out[1], s.Resets)
	}
}

// Tunable parameters change between steps.
func TestStepperSetParams(t *testing.T) {
	s := stepper(t, testfmu.Options{FMI: 3}, 0.005, nil)
	out := make([]float64, 3)
	s.Step(0, []float64{15}, out)
	if out[1] == 0 {
		t.Fatalf("15 m/s over a set speed of 10 does not brake: %v", out)
	}
	if err := s.SetParams([]fmi.Var{{VR: 0, Kind: fmu.Float64, Name: "setSpeed"}}, []float64{30}); err != nil {
		t.Fatal(err)
	}
	s.Step(0.005, []float64{15}, out)
	if out[0] == 0 || out[1] != 0 {
		t.Errorf("after setSpeed 30 at 15 m/s: throttle %v brake %v", out[0], out[1])
	}
	// A parameter the FMU was not started with (kp) joins the ones set
	// again after a reset: with kp 0 and a fresh integral, only one step's
	// integral acts: ki 0.05 × 15 m/s × 5 ms.
	if err := s.SetParams([]fmi.Var{{VR: 1, Kind: fmu.Float64, Name: "kp"}}, []float64{0}); err != nil {
		t.Fatal(err)
	}
	s.Step(0, []float64{15}, out) // back in time: reset
	if s.Resets != 1 || math.Abs(out[0]-0.00375) > 1e-12 || out[1] != 0 {
		t.Errorf("after the reset with kp 0: throttle %v brake %v (resets %d)", out[0], out[1], s.Resets)
	}
}

// An error status and a NaN output come back as errors naming what
// happened, and the FMU's own log message is heard.
func TestStepperFaults(t *testing.T) {
	for _, major := range []int{2, 3} {
		var logged []string
		s := stepper(t, testfmu.Options{FMI: major, Fault: "error", After: 3}, 0.005, func(st fmi.Status, cat, msg string) {
			logged = append(logged, st.Name(major)+" "+cat+": "+msg)
		})
		out := make([]float64, 3)
		var err error
		for i := 0; i < 3 && err == nil; i++ {
			_, err = s.Step(float64(i)*0.005, []float64{0}, out)
		}
		var ce *fmi.CallError
		if !errors.As(err, &ce) || ce.Status != fmi.Error || !strings.Contains(err.Error(), "DoStep returned fmi") ||
			!strings.Contains(err.Error(), "Error at t = 0.01 s") {
			t.Errorf("FMI %d: %v", major, err)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], "Error cruise: doStep fails on purpose") {
			t.Errorf("FMI %d: log %q", major, logged)
		}

		s = stepper(t, testfmu.Options{FMI: major, Fault: "nan", After: 2}, 0.005, nil)
		s.Step(0, []float64{0}, out)
		_, err = s.Step(0.005, []float64{0}, out)
		var bad *fmi.BadOutput
		if !errors.As(err, &bad) || bad.Name != "throttle" || err.Error() != "the FMU's output throttle is NaN: not a usable control value" {
			t.Errorf("FMI %d: %v", major, err)
		}
	}
}

// Loading refuses what is not an FMU's binary, naming the file.
func TestLoadErrors(t *testing.T) {
	if _, err := fmi.Load("/no/such/lib.so", 2); err == nil || !strings.Contains(err.Error(), "loading /no/such/lib.so") {
		t.Errorf("%v", err)
	}
	if _, err := fmi.Load("x.so", 1); err == nil || err.Error() != "FMI 1 is not supported: expected 2 or 3" {
		t.Errorf("%v", err)
	}
}

// Per-message cost of an FMU step in process: set the inputs, doStep,
// read the outputs.
func BenchmarkStepInProcess(b *testing.B) {
	for _, major := range []int{2, 3} {
		b.Run("FMI"+string(rune('0'+major)), func(b *testing.B) {
			s := stepper(b, testfmu.Options{FMI: major}, 0.005, nil)
			in, out := []float64{0}, make([]float64, 3)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				in[0] = float64(i % 30)
				s.Step(float64(i)*0.005, in, out)
			}
		})
	}
}

// idTime is message id's time at period, as the FMU gets it: one
// product, computed at run time (a constant expression would be exact).
func idTime(id, period float64) float64 { return id * period }

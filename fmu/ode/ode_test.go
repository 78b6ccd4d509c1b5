package ode

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// decay is x' = −k x: x(t) = x0 exp(−k t).
type decay struct{ k float64 }

func (d decay) Derivatives(_ float64, x, dx []float64) error {
	for i := range x {
		dx[i] = -d.k * x[i]
	}
	return nil
}

// oscillator is x” = −x as x' = v, v' = −x: x = cos t, v = −sin t.
type oscillator struct{}

func (oscillator) Derivatives(_ float64, x, dx []float64) error {
	dx[0], dx[1] = x[1], -x[0]
	return nil
}

// vanDerPol is x” − μ(1 − x²)x' + x = 0.
type vanDerPol struct{ mu float64 }

func (p vanDerPol) Derivatives(_ float64, x, dx []float64) error {
	dx[0], dx[1] = x[1], p.mu*(1-x[0]*x[0])*x[1]-x[0]
	return nil
}

// integrate runs s from t0 to t1 and returns the state.
func integrate(t *testing.T, s *Solver, sys System, x []float64, t0, t1 float64) []float64 {
	t.Helper()
	for tc := t0; tc < t1; {
		var err error
		if tc, err = s.Step(sys, tc, x, t1); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// The fixed-step methods converge at their order: halving the step
// divides the error at t = 1 of x' = −x by 2 (Euler), 16 (RK4) and 32
// (Dormand–Prince's fifth-order solution, its error control kept out).
func TestOrder(t *testing.T) {
	for _, tt := range []struct {
		m     Method
		order float64
		h     float64
	}{{Euler, 1, 0.01}, {RK4, 4, 0.1}, {DOPRI5, 5, 0.1}} {
		t.Run(tt.m.String(), func(t *testing.T) {
			errAt := func(h float64) float64 {
				s := New(tt.m, 1)
				s.MaxStep, s.h = h, h
				s.RelTol, s.AbsTol = 1e9, 1e9 // every step accepted
				x := integrate(t, s, decay{1}, []float64{1}, 0, 1)
				return math.Abs(x[0] - math.Exp(-1))
			}
			e1, e2 := errAt(tt.h), errAt(tt.h/2)
			if got := math.Log2(e1 / e2); math.Abs(got-tt.order) > 0.15 {
				t.Errorf("%v: observed order %.3f (errors %.3g, %.3g), want %v", tt.m, got, e1, e2, tt.order)
			}
		})
	}
}

// With error control the global error of x' = −2x over 3 s stays within a
// small multiple of the tolerance, and a tighter tolerance takes more
// steps to a smaller error.
func TestAdaptiveDecay(t *testing.T) {
	var last float64 = math.Inf(1)
	var lastSteps int64
	for _, tol := range []float64{1e-4, 1e-6, 1e-8, 1e-10} {
		s := New(DOPRI5, 1)
		s.RelTol, s.AbsTol = tol, tol
		x := integrate(t, s, decay{2}, []float64{1}, 0, 3)
		e := math.Abs(x[0] - math.Exp(-6))
		if e > 10*tol || e >= last || s.Stats.Steps <= lastSteps {
			t.Errorf("tolerance %g: error %.3g in %d steps (before: %.3g in %d)", tol, e, s.Stats.Steps, last, lastSteps)
		}
		last, lastSteps = e, s.Stats.Steps
	}
}

// The harmonic oscillator over ten periods: the adaptive method at 1e-9
// keeps to cos t within 1e-7; RK4 at h = 1e-3 within 1e-9.
func TestOscillator(t *testing.T) {
	end := 20 * math.Pi
	for _, tt := range []struct {
		m    Method
		tune func(*Solver)
		tol  float64
	}{
		{DOPRI5, func(s *Solver) { s.RelTol, s.AbsTol = 1e-9, 1e-9 }, 1e-7},
		{RK4, func(s *Solver) { s.MaxStep = 1e-3 }, 1e-9},
	} {
		t.Run(tt.m.String(), func(t *testing.T) {
			s := New(tt.m, 2)
			tt.tune(s)
			x := integrate(t, s, oscillator{}, []float64{1, 0}, 0, end)
			if math.Abs(x[0]-1) > tt.tol || math.Abs(x[1]) > tt.tol {
				t.Errorf("%v: x(20π) = %v, want (1, 0) within %g", tt.m, x, tt.tol)
			}
		})
	}
}

// Dense output: between the steps, Dormand–Prince's continuous extension
// is accurate to fourth order (its error at mid-step shrinks 32 times as
// the step halves, the local error of an order-4 interpolant); RK4's
// Hermite interpolant to third order (16 times).
func TestDense(t *testing.T) {
	for _, tt := range []struct {
		m     Method
		order float64
	}{{DOPRI5, 5}, {RK4, 4}} {
		t.Run(tt.m.String(), func(t *testing.T) {
			midErr := func(h float64) float64 {
				s := New(tt.m, 1)
				s.MaxStep, s.h = h, h
				s.RelTol, s.AbsTol = 1e9, 1e9
				x := []float64{1}
				t1, err := s.Step(decay{1}, 0, x, 1)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]float64, 1)
				if err := s.Dense(decay{1}, t1/2, x, out); err != nil {
					t.Fatal(err)
				}
				return math.Abs(out[0] - math.Exp(-t1/2))
			}
			e1, e2 := midErr(0.1), midErr(0.05)
			if got := math.Log2(e1 / e2); math.Abs(got-tt.order) > 0.3 {
				t.Errorf("%v: mid-step error %.3g → %.3g, order %.2f, want %v", tt.m, e1, e2, got, tt.order)
			}
		})
	}
}

// Van der Pol's oscillator at μ = 1 settles on a limit cycle of period
// 6.6632868593 s (a value known to many digits). Timed between upward zero
// crossings found on the dense output, the adaptive method at 1e-10 gets
// it to 1e-7.
func TestVanDerPolPeriod(t *testing.T) {
	s := New(DOPRI5, 2)
	s.RelTol, s.AbsTol = 1e-10, 1e-10
	x := []float64{2, 0}
	prev := []float64{2, 0}
	var ups []float64
	out := make([]float64, 2)
	for tc := 0.0; tc < 60; {
		copy(prev, x)
		t0 := tc
		var err error
		if tc, err = s.Step(vanDerPol{1}, tc, x, 60); err != nil {
			t.Fatal(err)
		}
		if prev[0] < 0 && x[0] >= 0 {
			lo, hi := t0, tc // bisect on the interpolant
			for hi-lo > 1e-13 {
				mid := (lo + hi) / 2
				s.Dense(nil, mid, x, out)
				if out[0] < 0 {
					lo = mid
				} else {
					hi = mid
				}
			}
			ups = append(ups, hi)
		}
	}
	if len(ups) < 6 {
		t.Fatalf("%d upward crossings", len(ups))
	}
	period := ups[len(ups)-1] - ups[len(ups)-2]
	if math.Abs(period-6.6632868593) > 1e-7 {
		t.Errorf("period %.10f, want 6.6632868593", period)
	}
}

// saturating is x' = 1 − x, whose solution approaches 1 from below, with
// a model undefined above 1: it asks for a smaller step there.
type saturating struct{ asked int }

func (r *saturating) Derivatives(_ float64, x, dx []float64) error {
	if x[0] > 1 {
		r.asked++
		return errors.Join(ErrRetry, errors.New("out of the domain"))
	}
	dx[0] = 1 - x[0]
	return nil
}

// A model that asks for a smaller step gets one from the adaptive method
// (a first step of 50 s overshoots 1 in its stages); the fixed-step
// methods pass the error on.
func TestRetry(t *testing.T) {
	r := &saturating{}
	s := New(DOPRI5, 1)
	s.h = 50
	x := integrate(t, s, r, []float64{0}, 0, 10)
	if math.Abs(x[0]-(1-math.Exp(-10))) > 1e-5 || r.asked == 0 || s.Stats.Rejected == 0 {
		t.Errorf("adaptive: x(10) = %v, asked %d, rejected %d", x, r.asked, s.Stats.Rejected)
	}
	e := New(Euler, 1)
	x = []float64{1.5}
	if _, err := e.Step(r, 0, x, 1); !errors.Is(err, ErrRetry) || x[0] != 1.5 {
		t.Errorf("Euler: %v, x %v", err, x)
	}
}

// A step allocates nothing.
func TestStepAllocs(t *testing.T) {
	for _, m := range []Method{Euler, RK4, DOPRI5} {
		s := New(m, 10)
		s.MaxStep = 0.001
		x := make([]float64, 10)
		for i := range x {
			x[i] = 1
		}
		tc := 0.0
		out := make([]float64, 10)
		var sys System = decay{1}
		step := func() {
			tc, _ = s.Step(sys, tc, x, tc+0.001)
			s.Dense(sys, tc-0.0005, x, out)
		}
		step()
		if n := testing.AllocsPerRun(100, step); n != 0 {
			t.Errorf("%v: %v allocations a step", m, n)
		}
	}
}

func TestParseMethod(t *testing.T) {
	for _, name := range []string{"dopri5", "RK4", "euler"} {
		if m, err := ParseMethod(name); err != nil || !stringsEqualFold(m.String(), name) {
			t.Errorf("%s: %v %v", name, m, err)
		}
	}
	if _, err := ParseMethod("cvode"); err == nil || err.Error() != `solver "cvode": expected one of dopri5, rk4, euler` {
		t.Errorf("cvode: %v", err)
	}
}

func stringsEqualFold(a, b string) bool {
	m, err := ParseMethod(b)
	return err == nil && m.String() == a
}

// Cap bounds the adaptive method's next accepted step, that one only.
func TestCap(t *testing.T) {
	s := New(DOPRI5, 1)
	x := []float64{1}
	for tc := 0.0; tc < 1; { // a smooth solution: the steps grow long
		var err error
		if tc, err = s.Step(decay{0.1}, tc, x, 1); err != nil {
			t.Fatal(err)
		}
	}
	s.Cap = 0.01
	if t2, err := s.Step(decay{0.1}, 1, x, 2); err != nil || math.Abs(t2-1.01) > 1e-15 {
		t.Errorf("capped at 10 ms: reached %v, %v", t2, err)
	}
	if t3, err := s.Step(decay{0.1}, 1.01, x, 2); err != nil || !(t3 > 1.02) || s.Cap != 0 {
		t.Errorf("after the capped step: reached %v, %v, cap %v", t3, err, s.Cap)
	}
}

// turnsNaN is x' = −x until the time at, NaN from then on.
type turnsNaN struct{ at float64 }

func (n turnsNaN) Derivatives(t float64, x, dx []float64) error {
	dx[0] = -x[0]
	if t >= n.at {
		dx[0] = math.NaN()
	}
	return nil
}

// A derivative that turns NaN is said, by every method, never integrated
// into the state: the fixed-step methods at the step that meets it, the
// adaptive one once no step however short passes (not as stiffness).
func TestDerivativeTurnsNaN(t *testing.T) {
	for _, m := range []Method{Euler, RK4, DOPRI5} {
		t.Run(m.String(), func(t *testing.T) {
			s := New(m, 1)
			s.MaxStep = 0.01
			x := []float64{1}
			var err error
			tc := 0.0
			for tc < 1 && err == nil {
				tc, err = s.Step(turnsNaN{0.5}, tc, x, 1)
			}
			var nf *NonFinite
			if !errors.As(err, &nf) || !nf.Derivative || nf.Index != 0 || !math.IsNaN(nf.Value) || nf.T < 0.5 || nf.T > 0.51 {
				t.Fatalf("%v at t = %v", err, tc)
			}
			if math.IsNaN(x[0]) || tc > nf.T || (m == DOPRI5) != nf.Shrunk {
				t.Errorf("the state %v at t = %v, shrunk %v", x[0], tc, nf.Shrunk)
			}
			if !strings.Contains(err.Error(), "derivative 0 is NaN at t = 0.5") {
				t.Errorf("%v", err)
			}
		})
	}
}

// huge is x' = 1e308: finite, but a step of a second takes x past the
// largest float64.
type huge struct{}

func (huge) Derivatives(_ float64, _, dx []float64) error { dx[0] = 1e308; return nil }

// A state a step makes infinite is said, and the step not taken.
func TestStateOverflows(t *testing.T) {
	s := New(Euler, 1)
	x := []float64{1e308}
	tc, err := s.Step(huge{}, 0, x, 1)
	var nf *NonFinite
	if !errors.As(err, &nf) || nf.Derivative || !math.IsInf(nf.Value, 1) || tc != 0 || x[0] != 1e308 || s.Stats.Steps != 0 {
		t.Errorf("%v, t %v, x %v, steps %d", err, tc, x, s.Stats.Steps)
	}
}

// forcing is x' = A sin(ωt), whatever x: the derivatives change with time
// alone, which is no instability however fast.
type forcing struct{ a, w float64 }

func (f forcing) Derivatives(t float64, x, dx []float64) error {
	for i := range dx {
		dx[i] = f.a * math.Sin(f.w*t+float64(i))
	}
	return nil
}

// spring is a damped oscillator of natural frequency w and damping
// ratio zeta: its eigenvalues are −ζω ± iω√(1 − ζ²).
type spring struct{ w, zeta float64 }

func (s spring) Derivatives(_ float64, x, dx []float64) error {
	dx[0], dx[1] = x[1], -s.w*s.w*x[0]-2*s.zeta*s.w*x[1]
	return nil
}

// robertson is Robertson's chemical kinetics (the stiff test problem):
// y1' = −0.04 y1 + 1e4 y2 y3, y2' = 0.04 y1 − 1e4 y2 y3 − 3e7 y2², with
// y3 = 1 − y1 − y2. At its start its Jacobian is mild; a stage's y2 makes
// it stiff (−6e7 y2), and an overshoot below 0 makes y2 grow without
// bound, which a secant across the stages mistakes for the model's own
// growth.
type robertson struct{}

func (robertson) Derivatives(_ float64, y, dy []float64) error {
	y3 := 1 - y[0] - y[1]
	dy[0] = -0.04*y[0] + 1e4*y[1]*y3
	dy[1] = 0.04*y[0] - 1e4*y[1]*y3 - 3e7*y[1]*y[1]
	return nil
}

// A fixed step the model's fastest dynamics make unstable is refused at
// the first step, before its result is used, naming the stable step;
// steps within the stability region pass, whatever the forcing.
func TestUnstableStep(t *testing.T) {
	const h = 0.005
	for _, tt := range []struct {
		name     string
		m        Method
		sys      System
		x        []float64
		unstable bool
		stable   float64 // the longest stable step, about
	}{
		{"euler h·λ = 2.5", Euler, decay{2.5 / h}, []float64{1}, true, 2.05 / (2.5 / h)},
		{"euler h·λ = 1.9", Euler, decay{1.9 / h}, []float64{1}, false, 0},
		{"rk4 λ = 1e7", RK4, decay{1e7}, []float64{1}, true, 2.8 / 1e7},
		{"rk4 h·λ = 2.7", RK4, decay{2.7 / h}, []float64{1}, false, 0},
		{"euler on a 10 Hz spring", Euler, spring{2 * math.Pi * 10, 0.1}, []float64{1, 0}, true, 0},
		{"euler on a 1 Hz spring", Euler, spring{2 * math.Pi, 0.1}, []float64{1, 0}, false, 0},
		{"rk4 on a 100 Hz spring", RK4, spring{2 * math.Pi * 100, 0}, []float64{1, 0}, true, 0},
		{"rk4 on a 50 Hz spring", RK4, spring{2 * math.Pi * 50, 0}, []float64{1, 0}, false, 0},
		{"euler, a fast forcing", Euler, forcing{1e6, 1e4}, []float64{0, 0}, false, 0},
		{"rk4, a fast forcing", RK4, forcing{1e6, 1e4}, []float64{0, 0}, false, 0},
		{"rk4 on Robertson", RK4, robertson{}, []float64{1, 0}, true, 0},
		{"euler on van der Pol", Euler, vanDerPol{1}, []float64{2, 0}, false, 0},
		{"rk4 on van der Pol", RK4, vanDerPol{3}, []float64{2, 0}, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.m, len(tt.x))
			s.MaxStep = h
			x := slices.Clone(tt.x)
			var err error
			tc := 0.0
			for k := 0; k < 2000 && err == nil; k++ {
				tc, err = s.Step(tt.sys, tc, x, tc+h)
			}
			var u *Unstable
			if got := errors.As(err, &u); got != tt.unstable || !got && err != nil {
				t.Fatalf("unstable %v, want %v: %v", got, tt.unstable, err)
			}
			if !tt.unstable {
				return
			}
			if tc != 0 || !slices.Equal(x, tt.x) || s.Stats.Steps != 0 || !(u.Growth > s.allowed(u.Z)) {
				t.Errorf("refused at t = %v after %d steps, x %v, growth %v: want the first step refused, x as it was", tc, s.Stats.Steps, x, u.Growth)
			}
			if tt.stable > 0 && math.Abs(u.Stable-tt.stable) > 0.05*tt.stable {
				t.Errorf("the stable step %v, want about %v", u.Stable, tt.stable)
			}
			// The stable step it names is stable.
			if u.Stable <= 0 || s.growth(u.Z*complex(u.Stable/h, 0)) > s.allowed(u.Z*complex(u.Stable/h, 0)) {
				t.Errorf("the stable step %v is not", u.Stable)
			}
			t.Log(err)
		})
	}
}

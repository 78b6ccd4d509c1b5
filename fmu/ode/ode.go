// Package ode integrates ordinary differential equations x' = f(t, x), for
// the Model Exchange FMUs beamconnect is the integrator of: the explicit
// Euler method and the classical fourth-order Runge–Kutta method with a
// fixed step, and the Dormand–Prince 5(4) pair with error control and its
// continuous extension (dense output). Written from the textbook (Hairer,
// Nørsett and Wanner, Solving Ordinary Differential Equations I, II.4–II.6)
// and checked against known solutions in the tests.
//
// A Solver keeps what the next step reuses (the derivative at the current
// point, the step size it ended with) and what interpolates the last step;
// it allocates nothing once made.
package ode

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"strconv"
	"strings"
)

// Method is an integration method.
type Method uint8

const (
	DOPRI5 Method = iota // Dormand–Prince 5(4), adaptive: the default
	RK4                  // classical Runge–Kutta, fixed step
	Euler                // explicit Euler, fixed step
)

var methodNames = []string{"dopri5", "rk4", "euler"}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return "method?"
}

// Adaptive reports whether the method controls its step size itself.
func (m Method) Adaptive() bool { return m == DOPRI5 }

// ParseMethod reads a method's name: "dopri5", "rk4" or "euler".
func ParseMethod(name string) (Method, error) {
	for i, n := range methodNames {
		if strings.EqualFold(name, n) {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("solver %q: expected one of %s", name, strings.Join(methodNames, ", "))
}

// System is the right-hand side of x' = f(t, x).
type System interface {
	// Derivatives computes f(t, x) into dx. An error that wraps ErrRetry
	// asks for a smaller step (the adaptive method halves it); any other
	// ends the step.
	Derivatives(t float64, x, dx []float64) error
}

// ErrRetry is what a System's error wraps to ask for a smaller step (a
// model evaluated outside its domain).
var ErrRetry = errors.New("the model asks for a smaller step")

// NonFinite is a derivative or a state that is NaN or infinite: the
// solution cannot be continued past it. Every evaluation's derivatives
// and every step's states are checked, so that a NaN never passes for a
// state (a model's output computed from one may well be a number).
type NonFinite struct {
	Derivative bool    // a derivative; else a state
	Index      int     // whose: the state's index
	T          float64 // the time of the derivative, or of the end of the step that made the state
	Value      float64
	X          float64 // a derivative's state at T
	Shrunk     bool    // the adaptive method met it at every step down to the shortest
}

func (e *NonFinite) Error() string {
	if e.Derivative {
		return fmt.Sprintf("derivative %d is %v at t = %g s (its state %v)", e.Index, e.Value, e.T, e.X)
	}
	return fmt.Sprintf("state %d became %v in the step to t = %g s", e.Index, e.Value, e.T)
}

// Unstable is a fixed-step method's step that the system's fastest
// dynamics make unstable: where the system holds or decays them, the step
// multiplies them by Growth (Euler's stability function |1 + z|, RK4's
// |1 + z + z²/2 + z³/6 + z⁴/24|), so that they grow from step to step
// into a diverging, sign-flipping trajectory long before they reach Inf.
// Seen in the step, before its result is used.
type Unstable struct {
	Method Method
	T, H   float64    // the step: from T, of H seconds
	Z      complex128 // h·λ of the dynamics the step saw: λ, the system's eigenvalue along the step, estimated from its stages
	Growth float64    // what the step multiplied them by
	Stable float64    // the longest step that keeps them from growing, seconds
}

func (e *Unstable) Error() string {
	return fmt.Sprintf("the %v solver's step of %s from t = %g s is unstable for the model: its fastest dynamics (λ ≈ %s, h·λ ≈ %s) grow %s a step under it where the model itself %s them; steps of at most %s are stable for them",
		e.Method, Seconds(e.H), e.T, complexText(e.Z/complex(e.H, 0), "/s"), complexText(e.Z, ""), growthText(e.Growth), keeps(e.Z), Seconds(e.Stable))
}

// keeps says what the system does with dynamics of h·λ = z: decays or
// holds them, or grows them less than the step does.
func keeps(z complex128) string {
	switch {
	case real(z) < -1e-3:
		return "damps"
	case real(z) <= 1e-3:
		return "holds"
	}
	return "grows more slowly"
}

// Seconds formats a duration in seconds for a message: 5 ms, 0.28 µs, 1.5 s.
func Seconds(s float64) string {
	switch a := math.Abs(s); {
	case a >= 1:
		return sig(s) + " s"
	case a >= 1e-3:
		return sig(s*1e3) + " ms"
	case a >= 1e-6:
		return sig(s*1e6) + " µs"
	}
	return sig(s*1e9) + " ns"
}

// sig is x to 2 significant digits: 280, 4.1, 0.031, 2.6e+17.
func sig(x float64) string {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return fmt.Sprint(x)
	}
	e := math.Floor(math.Log10(math.Abs(x)))
	if e >= 6 || e < -4 {
		return fmt.Sprintf("%.2g", x)
	}
	p := math.Pow(10, e-1)
	t := strconv.FormatFloat(math.Round(x/p)*p, 'f', int(max(1-e, 0)), 64)
	if strings.Contains(t, ".") {
		t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
	}
	return t
}

// growthText says how much a step multiplies by: "by 1.8 %", "1.5-fold".
func growthText(g float64) string {
	if g < 1.995 {
		return "by " + sig((g-1)*100) + " %"
	}
	return sig(g) + "-fold"
}

func complexText(z complex128, unit string) string {
	re, im := real(z), imag(z)
	if math.Abs(im) <= 1e-3*math.Abs(re) {
		return sig(re) + unit
	}
	if math.Abs(re) <= 1e-3*math.Abs(im) {
		return "±" + sig(math.Abs(im)) + "i" + unit
	}
	return fmt.Sprintf("%s ± %si%s", sig(re), sig(math.Abs(im)), unit)
}

// Stats count a solver's work.
type Stats struct {
	Steps    int64 // accepted steps
	Rejected int64 // steps the error control rejected (and retried smaller)
	Evals    int64 // evaluations of the derivatives
}

// Solver integrates one system of n states.
type Solver struct {
	Method Method
	// RelTol and AbsTol are the adaptive method's tolerances: a step is
	// kept when its error estimate is within AbsTol×Scale[i] +
	// RelTol×|x[i]| for every state (in the root mean square).
	RelTol, AbsTol float64
	// Scale is each state's nominal magnitude (nil: 1 each).
	Scale []float64
	// MaxStep bounds the step (0: none); the fixed-step methods step by
	// it, or by the whole interval when it is 0.
	MaxStep float64
	// Cap bounds the adaptive method's next accepted step only (0: none);
	// it is cleared once a step is accepted. A caller that knows the
	// solution changes fast ahead (events coming closer) sets it.
	Cap   float64
	Stats Stats

	n    int
	k    [7][]float64
	y0   []float64 // the last step's start
	tmp  []float64
	yerr []float64
	h    float64 // the adaptive step to try next; 0: not yet known
	have bool    // k[0] is f at the current point
	// The last step, for Dense.
	t0, t1 float64
	cont   [5][]float64 // DOPRI5's continuous extension
	f1     bool         // k[1] holds f(t1, y1) for RK4's Hermite interpolant (k[0] after a step)
}

// New makes a solver of n states.
func New(m Method, n int) *Solver {
	s := &Solver{Method: m, RelTol: 1e-6, AbsTol: 1e-6, n: n}
	for i := range s.k {
		s.k[i] = make([]float64, n)
	}
	for i := range s.cont {
		s.cont[i] = make([]float64, n)
	}
	s.y0, s.tmp, s.yerr = make([]float64, n), make([]float64, n), make([]float64, n)
	return s
}

// Invalidate says the system changed at the current point (new inputs, an
// event): the next step evaluates the derivatives there again.
func (s *Solver) Invalidate() { s.have = false }

// minStep is the smallest step the adaptive method takes near t: below it
// the step cannot be told from rounding.
func minStep(t float64) float64 { return 1e-14 * math.Max(1, math.Abs(t)) }

func (s *Solver) eval(sys System, t float64, x, dx []float64) error {
	s.Stats.Evals++
	if err := sys.Derivatives(t, x, dx); err != nil {
		return err
	}
	for i, v := range dx {
		if v-v != 0 { // NaN or ±Inf
			return &NonFinite{Derivative: true, Index: i, T: t, Value: v, X: x[i]}
		}
	}
	return nil
}

// Step advances x (in place) from t towards tEnd by one accepted step and
// returns the time it reached (tEnd at most).
func (s *Solver) Step(sys System, t float64, x []float64, tEnd float64) (float64, error) {
	if !(tEnd > t) {
		return t, nil
	}
	if tEnd-t < minStep(t) { // rounding, not time: nothing to integrate
		return tEnd, nil
	}
	if !s.have {
		if err := s.eval(sys, t, x, s.k[0]); err != nil {
			return t, err
		}
		s.have = true
	}
	copy(s.y0, x)
	s.t0 = t
	if s.Method != DOPRI5 {
		h := tEnd - t
		if s.MaxStep > 0 && s.MaxStep < h {
			h = s.MaxStep
			if tEnd-(t+h) < 1e-9*h { // no sliver of a step left over
				h = tEnd - t
			}
		}
		t1 := t + h
		if tEnd-t1 < 1e-12*math.Max(1, math.Abs(tEnd)) {
			t1 = tEnd
		}
		var err error
		if s.Method == Euler {
			for i := range x {
				x[i] = s.y0[i] + h*s.k[0][i]
			}
		} else {
			err = s.rk4(sys, t, h, x)
		}
		if err == nil {
			err = s.check(t1, x)
		}
		if err == nil {
			err = s.stable(sys, t, h, x)
		}
		if err != nil {
			copy(x, s.y0)
			return t, err
		}
		s.t1, s.f1, s.have = t1, false, false
		s.Stats.Steps++
		return t1, nil
	}
	return s.dopri5(sys, t, x, tEnd)
}

// check says which state a step made NaN or infinite.
func (s *Solver) check(t1 float64, x []float64) error {
	for i, v := range x {
		if v-v != 0 {
			return &NonFinite{Index: i, T: t1, Value: v}
		}
	}
	return nil
}

// margin is how much more than the system a fixed-step method's step may
// amplify its fastest dynamics before the step is called unstable: 1 %
// past the methods' stability limits on the negative real axis (h·λ = 2
// for Euler, 2.785 for RK4), and an oscillation Euler lets grow by 1 % a
// step (h·ω = 0.14; a 10 Hz mode at 5 ms grows by 1.8 % a step, 33-fold a
// second).
const margin = 0.01

// look is the size of h·J along the step from which the second look is
// taken whatever the first says: the first can miss dynamics across the
// step's direction (a spring released from rest moves only its speed in
// the first step), and the slowest unstable ones have |h·λ| = 0.14.
const look = 0.05

// eps is the second look's difference, in units of each state's nominal
// value plus its size: about the square root of float64's precision, a
// tangent to rounding's error.
const eps = 1e-7

// floor is the smallest change of the states (relative to their nominal
// values and sizes, in the root mean square) the stability estimate is
// made from: below it the change is rounding, and its ratio noise.
const floor = 1e-8

// stable estimates what the step of h from t did to the system's fastest
// dynamics, and refuses the step when it amplifies them by more than the
// system does (by the margin): an unstable step. The estimate is the
// Jacobian J of the derivatives along the step's own change of the
// states, from two evaluations at one time (so that time's own effect, a
// forcing, stays out of it): RK4's stages k2 and k3, at t + h/2, whose
// states differ by Δx = h/2 (k2 − k1); Euler's start and one more
// evaluation at its result and its start's time. The change Δx leans
// towards the fastest dynamics (RK4's is J applied once to k1), as power
// iteration does (Hairer and Wanner's stiffness detection, II IV.2).
//
// h·λ from |JΔx|/|Δx| and the Rayleigh quotient alone would take a
// spring's x' = v, v' = −ω²x for ω² instead of ω (J is far from normal
// in the states' units); so a step this first estimate calls unstable is
// looked at again, at the cost of one more evaluation: J in the plane of
// Δx and JΔx (two steps of Arnoldi's method), whose two eigenvalues are
// the dynamics' own in any two-state system and the dominant pair's
// estimate in any other. Every vector is in units of each state's
// nominal value plus its size, so states of any units weigh alike.
func (s *Solver) stable(sys System, t, h float64, x []float64) error {
	k, y0 := s.k, s.y0
	// The pair: base state b (f there: fb) and b + Δx (f there: fb + Δf),
	// at time ts.
	ts, fb := t+h/2, k[1]
	dxAt := func(i int) float64 { return h / 2 * (k[1][i] - k[0][i]) }
	base := func(i int) float64 { return y0[i] + h/2*k[0][i] }
	if s.Method == Euler {
		ts, fb = t, k[0]
		dxAt = func(i int) float64 { return h * k[0][i] }
		base = func(i int) float64 { return y0[i] }
	}
	sc := func(i int) float64 { return s.scale(i) + math.Abs(y0[i]) }
	var dd float64
	for i := range x {
		w := dxAt(i) / sc(i)
		dd += w * w
	}
	if !(dd/float64(max(len(x), 1)) > floor*floor) {
		return nil // no change to speak of (or not a number: check's)
	}
	f2 := k[2] // RK4: k3, at b + Δx
	if s.Method == Euler {
		// An evaluation that fails says nothing here; the next step meets it.
		if s.eval(sys, t, x, k[1]) != nil {
			return nil
		}
		f2 = k[1]
	}
	norm := math.Sqrt(dd)
	// In scaled units: q1 = Δx/|Δx|, Jq1 = Δf/|Δx|.
	q1 := func(i int) float64 { return dxAt(i) / sc(i) / norm }
	jq1 := func(i int) float64 { return (f2[i] - fb[i]) / sc(i) / norm }
	var h11, jj float64
	for i := range x {
		h11 += q1(i) * jq1(i)
		jj += jq1(i) * jq1(i)
	}
	z := complex(h*h11, h*math.Sqrt(max(jj-h11*h11, 0)))
	if s.growth(z) <= s.allowed(z) && h*math.Sqrt(jj) <= look {
		return nil // dynamics too slow for the step to matter
	}
	// The second look: J at the base state itself (a tangent, by a small
	// difference, where the first was a secant over the stages' whole
	// excursion, which a strongly nonlinear model bends: Robertson's
	// y2' = −3e7 y2² is stiff at a stage's y2 > 0, and grows where an
	// overshoot took y2 below 0), in the plane of q1 and its image: Jq1,
	// then q2 = (Jq1 − h11 q1)/|…| and Jq2. Slots free in both methods
	// now (RK4's k3 and k4 are spent, Euler's probe too): jt holds Jq1,
	// q2 its part across q1, p and fp a perturbed state and its f.
	jt, q2, p, fp := k[6], k[2], k[4], k[5]
	tangent := func(q func(int) float64) bool {
		for i := range x {
			p[i] = base(i) + eps*q(i)*sc(i)
		}
		if s.eval(sys, ts, p, fp) != nil {
			return false // not looked at: the next step meets what failed
		}
		for i := range x {
			jt[i] = (fp[i] - fb[i]) / sc(i) / eps
		}
		return true
	}
	if !tangent(q1) {
		return nil
	}
	h11, jj = 0, 0
	for i := range x {
		h11 += q1(i) * jt[i]
		jj += jt[i] * jt[i]
	}
	h21 := math.Sqrt(max(jj-h11*h11, 0))
	lams := [2]complex128{complex(h11, 0), complex(h11, 0)}
	if h21 > 1e-6*math.Sqrt(jj) {
		for i := range x {
			q2[i] = (jt[i] - h11*q1(i)) / h21
		}
		if !tangent(func(i int) float64 { return q2[i] }) {
			return nil
		}
		var h12, h22 float64
		for i := range x {
			h12 += q1(i) * jt[i]
			h22 += q2[i] * jt[i]
		}
		tr, det := h11+h22, h11*h22-h12*h21
		root := cmplx.Sqrt(complex(tr*tr/4-det, 0))
		lams = [2]complex128{complex(tr/2, 0) + root, complex(tr/2, 0) - root}
	}
	var worst *Unstable
	for _, lam := range lams {
		z := lam * complex(h, 0)
		if g, a := s.growth(z), s.allowed(z); g > a && (worst == nil || g/a > worst.Growth/s.allowed(worst.Z)) {
			if worst == nil {
				worst = &Unstable{}
			}
			*worst = Unstable{Method: s.Method, T: t, H: h, Z: z, Growth: g, Stable: h * s.stableShare(z)}
		}
	}
	if worst != nil {
		return worst
	}
	return nil
}

// growth is |R(z)|, what a step multiplies dynamics of h·λ = z by.
func (s *Solver) growth(z complex128) float64 {
	if s.Method == Euler {
		return cmplx.Abs(1 + z)
	}
	return cmplx.Abs(1 + z*(1+z/2*(1+z/3*(1+z/4))))
}

// allowed is the most a step may multiply dynamics of h·λ = z by: what
// the system does over the step (|e^z|, at least 1), and the margin.
func (s *Solver) allowed(z complex128) float64 {
	return math.Max(1, math.Exp(real(z))) * (1 + margin)
}

// stableShare is the share of the step that keeps dynamics of h·λ = z
// within half the margin: the longest stable step, over the step.
func (s *Solver) stableShare(z complex128) float64 {
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		w := z * complex(mid, 0)
		if s.growth(w) <= math.Max(1, math.Exp(real(w)))*(1+margin/2) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func (s *Solver) rk4(sys System, t, h float64, x []float64) error {
	k, y := s.k, s.tmp
	for i := range y {
		y[i] = s.y0[i] + h/2*k[0][i]
	}
	if err := s.eval(sys, t+h/2, y, k[1]); err != nil {
		return err
	}
	for i := range y {
		y[i] = s.y0[i] + h/2*k[1][i]
	}
	if err := s.eval(sys, t+h/2, y, k[2]); err != nil {
		return err
	}
	for i := range y {
		y[i] = s.y0[i] + h*k[2][i]
	}
	if err := s.eval(sys, t+h, y, k[3]); err != nil {
		return err
	}
	for i := range x {
		x[i] = s.y0[i] + h/6*(k[0][i]+2*k[1][i]+2*k[2][i]+k[3][i])
	}
	copy(s.cont[0], k[0]) // f at the start, for the interpolant
	return nil
}

// The Dormand–Prince 5(4) tableau (Hairer, Nørsett and Wanner, table
// II.5.2): the fifth-order solution is propagated, the difference from the
// fourth-order one estimates the error, and the last stage is the next
// step's first (FSAL).
const (
	c2, c3, c4, c5 = 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9

	a21                     = 1.0 / 5
	a31, a32                = 3.0 / 40, 9.0 / 40
	a41, a42, a43           = 44.0 / 45, -56.0 / 15, 32.0 / 9
	a51, a52, a53, a54      = 19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729
	a61, a62, a63, a64, a65 = 9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656
	a71, a73, a74, a75, a76 = 35.0 / 384, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84

	// e = b − b̂: the fifth-order weights (a7·) minus the fourth-order ones.
	e1, e3, e4, e5, e6, e7 = 71.0 / 57600, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525, -1.0 / 40

	// The continuous extension (dense output) of order 4 (Shampine).
	d1, d3, d4, d5, d6, d7 = -12715105075.0 / 11282082432, 87487479700.0 / 32700410799, -10690763975.0 / 1880347072,
		701980252875.0 / 199316789632, -1453857185.0 / 822651844, 69997945.0 / 29380423
)

func (s *Solver) dopri5(sys System, t float64, x []float64, tEnd float64) (float64, error) {
	k, y0 := s.k, s.y0
	if s.h <= 0 {
		s.h = s.firstStep(sys, t, tEnd)
	}
	rejected := false
	var bad *NonFinite // the derivatives were not numbers in the last step rejected
	for {
		h := math.Min(s.h, tEnd-t)
		if s.MaxStep > 0 {
			h = math.Min(h, s.MaxStep)
		}
		if s.Cap > 0 {
			h = math.Min(h, s.Cap)
		}
		last := h >= tEnd-t
		if tEnd-(t+h) <= 1e-9*h { // no sliver of a step left over
			h, last = tEnd-t, true
		}
		if h < minStep(t) && !last {
			if bad != nil {
				bad.Shrunk = true
				return t, bad // not a number however short the step
			}
			return t, fmt.Errorf("the step size fell to %g s at t = %g s: the equations are too stiff for an explicit method, or singular there", h, t)
		}
		err := s.stages(sys, t, h)
		if err == nil {
			for i := range x {
				x[i] = y0[i] + h*(a71*k[0][i]+a73*k[2][i]+a74*k[3][i]+a75*k[4][i]+a76*k[5][i])
			}
			err = s.eval(sys, t+h, x, k[6])
		}
		if err != nil {
			copy(x, y0)
			// A stage whose derivatives are not numbers went somewhere the
			// model is not defined, as a stage the model refuses did: a
			// shorter step may pass.
			bad, _ = err.(*NonFinite) // eval's own, never wrapped
			if bad == nil && !errors.Is(err, ErrRetry) {
				return t, err
			}
			s.Stats.Rejected++
			s.h, rejected = h/2, true
			continue
		}
		var sum float64
		for i := range x {
			s.yerr[i] = h * (e1*k[0][i] + e3*k[2][i] + e4*k[3][i] + e5*k[4][i] + e6*k[5][i] + e7*k[6][i])
			sc := s.AbsTol*s.scale(i) + s.RelTol*math.Max(math.Abs(y0[i]), math.Abs(x[i]))
			r := s.yerr[i] / sc
			sum += r * r
		}
		errNorm := math.Sqrt(sum / float64(max(len(x), 1)))
		if errNorm != errNorm { // NaN: the step went somewhere the model is not defined
			errNorm = math.Inf(1)
		}
		fac := 0.9 * math.Pow(math.Max(errNorm, 1e-10), -0.2)
		if errNorm > 1 {
			bad = nil
			copy(x, y0)
			s.Stats.Rejected++
			s.h, rejected = h*math.Max(0.2, fac), true
			continue
		}
		// Accepted: keep the continuous extension, and k7 as the next k1.
		for i := range x {
			dy := x[i] - y0[i]
			bspl := h*k[0][i] - dy
			s.cont[0][i] = y0[i]
			s.cont[1][i] = dy
			s.cont[2][i] = bspl
			s.cont[3][i] = dy - h*k[6][i] - bspl
			s.cont[4][i] = h * (d1*k[0][i] + d3*k[2][i] + d4*k[3][i] + d5*k[4][i] + d6*k[5][i] + d7*k[6][i])
		}
		s.k[0], s.k[6] = s.k[6], s.k[0]
		s.Stats.Steps++
		s.Cap = 0
		next := h * math.Min(10, fac)
		if rejected {
			next = math.Min(next, h)
		}
		if !last || next > h { // the interval's end cut the step short: keep the longer one
			s.h = next
		}
		t1 := t + h
		if last {
			t1 = tEnd
		}
		s.t0, s.t1 = t, t1
		return t1, nil
	}
}

// stages evaluates the Dormand–Prince stages 2 to 6 of a step of h from
// (t, y0) into k[1]…k[5].
func (s *Solver) stages(sys System, t, h float64) error {
	k, y0, y := s.k, s.y0, s.tmp
	for i := range y {
		y[i] = y0[i] + h*a21*k[0][i]
	}
	if err := s.eval(sys, t+c2*h, y, k[1]); err != nil {
		return err
	}
	for i := range y {
		y[i] = y0[i] + h*(a31*k[0][i]+a32*k[1][i])
	}
	if err := s.eval(sys, t+c3*h, y, k[2]); err != nil {
		return err
	}
	for i := range y {
		y[i] = y0[i] + h*(a41*k[0][i]+a42*k[1][i]+a43*k[2][i])
	}
	if err := s.eval(sys, t+c4*h, y, k[3]); err != nil {
		return err
	}
	for i := range y {
		y[i] = y0[i] + h*(a51*k[0][i]+a52*k[1][i]+a53*k[2][i]+a54*k[3][i])
	}
	if err := s.eval(sys, t+c5*h, y, k[4]); err != nil {
		return err
	}
	for i := range y {
		y[i] = y0[i] + h*(a61*k[0][i]+a62*k[1][i]+a63*k[2][i]+a64*k[3][i]+a65*k[4][i])
	}
	return s.eval(sys, t+h, y, k[5])
}

func (s *Solver) scale(i int) float64 {
	if s.Scale == nil || s.Scale[i] <= 0 {
		return 1
	}
	return s.Scale[i]
}

// firstStep guesses the first step from the size of the states and their
// derivatives (Hairer, Nørsett and Wanner, II.4), within the interval and
// MaxStep.
func (s *Solver) firstStep(sys System, t, tEnd float64) float64 {
	var d0, d1 float64
	for i := range s.y0 {
		sc := s.AbsTol*s.scale(i) + s.RelTol*math.Abs(s.y0[i])
		d0 += (s.y0[i] / sc) * (s.y0[i] / sc)
		d1 += (s.k[0][i] / sc) * (s.k[0][i] / sc)
	}
	n := float64(max(len(s.y0), 1))
	d0, d1 = math.Sqrt(d0/n), math.Sqrt(d1/n)
	h := 1e-6
	if d0 > 1e-5 && d1 > 1e-5 {
		h = 0.01 * d0 / d1
	}
	h = math.Min(h, tEnd-t)
	if s.MaxStep > 0 {
		h = math.Min(h, s.MaxStep)
	}
	// One Euler step to see how fast the derivatives change.
	for i := range s.tmp {
		s.tmp[i] = s.y0[i] + h*s.k[0][i]
	}
	if s.eval(sys, t+h, s.tmp, s.k[1]) != nil {
		return h
	}
	var d2 float64
	for i := range s.tmp {
		sc := s.AbsTol*s.scale(i) + s.RelTol*math.Abs(s.y0[i])
		r := (s.k[1][i] - s.k[0][i]) / sc
		d2 += r * r
	}
	d2 = math.Sqrt(d2/n) / h
	h1 := math.Max(1e-6, h*1e-3)
	if m := math.Max(d1, d2); m > 1e-15 {
		h1 = math.Pow(0.01/m, 0.2)
	}
	return math.Min(100*h, h1)
}

// Retry takes the last step back (x returns to its start) and has the
// next one try shrink times its size: an adaptive step that stepped over
// something it must not (a state event). It returns the step's start.
func (s *Solver) Retry(x []float64, shrink float64) float64 {
	copy(x, s.y0)
	s.h = (s.t1 - s.t0) * shrink
	s.Stats.Steps--
	s.Stats.Rejected++
	s.have = false
	s.t1 = s.t0
	return s.t0
}

// Last is the last step's interval.
func (s *Solver) Last() (t0, t1 float64) { return s.t0, s.t1 }

// Dense sets out to the solution at tq within the last step (Last): the
// Dormand–Prince continuous extension (fourth order), the cubic Hermite
// interpolant of RK4's step (from the derivatives at both ends: f at the
// end is evaluated here once, sys may be nil after that) or the straight
// line of Euler's. end is the state at the end of the step.
func (s *Solver) Dense(sys System, tq float64, end, out []float64) error {
	h := s.t1 - s.t0
	if h <= 0 {
		copy(out, end)
		return nil
	}
	th := (tq - s.t0) / h
	switch s.Method {
	case DOPRI5:
		c := s.cont
		th1 := 1 - th
		for i := range out {
			out[i] = c[0][i] + th*(c[1][i]+th1*(c[2][i]+th*(c[3][i]+th1*c[4][i])))
		}
	case Euler:
		for i := range out {
			out[i] = s.y0[i] + th*(end[i]-s.y0[i])
		}
	default:
		if !s.f1 {
			if err := s.eval(sys, s.t1, end, s.k[1]); err != nil {
				return err
			}
			s.f1 = true
		}
		f0, f1 := s.cont[0], s.k[1]
		h00 := (1 + 2*th) * (1 - th) * (1 - th)
		h10 := th * (1 - th) * (1 - th)
		h01 := th * th * (3 - 2*th)
		h11 := th * th * (th - 1)
		for i := range out {
			out[i] = h00*s.y0[i] + h10*h*f0[i] + h01*end[i] + h11*h*f1[i]
		}
	}
	return nil
}

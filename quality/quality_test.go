package quality

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// approach feeds a loop that closes in on set from `from` with time
// constant tau, plus noise of amplitude noise once it is within 1 % of
// the step, at 200 Hz from t0 for dur seconds.
func approach(q *Tracker, t0, dur, from, set, tau, noise float64) {
	for i := 0; float64(i)*0.005 < dur; i++ {
		t := float64(i) * 0.005
		y := set + (from-set)*math.Exp(-t/tau)
		if math.Abs(y-set) < 0.01*math.Abs(set-from) {
			y += noise * math.Sin(float64(i)*1.3)
		}
		q.Observe(t0+t, y, set)
	}
}

func TestVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		feed    func(q *Tracker)
		final   bool
		verdict string
		check   func(t *testing.T, r Report)
	}{
		{name: "a loop that settles and holds", verdict: Good,
			feed: func(q *Tracker) { approach(q, 0, 20, 0, 20, 1, 0.1) },
			check: func(t *testing.T, r Report) {
				// 2 % of the 20 m/s step is 0.4 m/s: within it after
				// ln(20/0.4) ≈ 3.91 time constants.
				if r.Band != 0.4 || math.Abs(r.SettledAfter-math.Log(50)) > 0.01 {
					t.Errorf("band %g, settled after %g s; want 0.4 and %.3f s", r.Band, r.SettledAfter, math.Log(50))
				}
				if math.Abs(r.Overshoot-0.1) > 0.001 || math.Abs(r.OvershootPct-0.5) > 0.01 {
					t.Errorf("overshoot %g (%g %%); want the noise's 0.1 m/s past 20 (0.5 %%)", r.Overshoot, r.OvershootPct)
				}
				if r.RMS > 0.2 || math.Abs(r.Max-0.4) > 0.01 {
					t.Errorf("RMS %g, max %g after settling; want under 0.2 and the band's 0.4", r.RMS, r.Max)
				}
			}},
		{name: "overshoot, and a step down", verdict: Good,
			feed: func(q *Tracker) {
				for i, y := range []float64{30, 26, 22, 19, 18.5, 19.5, 20, 20, 20} {
					q.Observe(float64(i), y, 20)
				}
			},
			check: func(t *testing.T, r Report) {
				// From 30 down to 20: 1.5 past it, 15 % of the step.
				if r.Overshoot != 1.5 || r.OvershootPct != 15 || r.SettledAfter != 6 || r.Band != 0.4 {
					t.Errorf("overshoot %g (%g %%), settled after %g s, band %g; want 1.5 (15 %%), 6 s, 0.4", r.Overshoot, r.OvershootPct, r.SettledAfter, r.Band)
				}
			}},
		{name: "a loop that never gets there", final: true, verdict: NotSettled,
			feed: func(q *Tracker) { approach(q, 0, 3, 0, 20, 1, 0) },
			check: func(t *testing.T, r Report) {
				if !math.IsNaN(r.SettledAfter) || !strings.Contains(r.Why, "never within ±0.4 m/s") {
					t.Errorf("settled after %g: %s", r.SettledAfter, r.Why)
				}
			}},
		{name: "the same loop while the run goes on", verdict: Settling,
			feed: func(q *Tracker) { approach(q, 0, 3, 0, 20, 1, 0) }},
		{name: "a loop that oscillates", verdict: Poor,
			feed: func(q *Tracker) { approach(q, 0, 20, 0, 20, 1, 1.2) },
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Why, "it oscillates or drifts") {
					t.Errorf("why: %s", r.Why)
				}
			}},
		{name: "a loop that strays once it settled", verdict: Poor,
			feed: func(q *Tracker) {
				approach(q, 0, 10, 0, 20, 1, 0)
				q.Observe(10.1, 18, 20) // 2 m/s off: five bands
				for i := range 2000 {
					q.Observe(10.2+float64(i)*0.005, 20, 20)
				}
			},
			check: func(t *testing.T, r Report) {
				if r.Max != 2 || !strings.Contains(r.Why, "strayed up to 2 m/s") {
					t.Errorf("max %g: %s", r.Max, r.Why)
				}
			}},
		{name: "nothing measured", final: true, verdict: NoData, feed: func(q *Tracker) {
			q.Observe(1, math.NaN(), 20)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Options{Name: "speed", Unit: "m/s"})
			tc.feed(q)
			r := q.Report(tc.final)
			if r.Verdict != tc.verdict || r.Good() != (tc.verdict == Good) {
				t.Fatalf("verdict %q (%s); want %q", r.Verdict, r.Why, tc.verdict)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// A setpoint step larger than the band starts the figures over; a ramp of
// small moves, or a step within the band, does not.
func TestSetpointSteps(t *testing.T) {
	q := New(Options{Name: "speed", Unit: "m/s"})
	approach(q, 0, 10, 0, 20, 1, 0)
	if r := q.Report(false); r.Steps != 1 || r.Verdict != Good {
		t.Fatalf("after the first step: %+v", r)
	}
	q.Observe(10, 20, 20.2) // within the band (0.4): the same step
	if r := q.Report(false); r.Steps != 1 || r.Value != 20.2 {
		t.Fatalf("a move within the band: steps %d, setpoint %g", r.Steps, r.Value)
	}
	approach(q, 10.005, 10, 20, 25, 1, 0)
	r := q.Report(false)
	if r.Steps != 2 || r.Value != 25 {
		t.Fatalf("after a step to 25: steps %d, setpoint %g", r.Steps, r.Value)
	}
	// From 20 to 25 the step is 5, the setpoint 25: 2 % of 25.
	if r.Band != 0.5 || math.Abs(r.SettledAfter-math.Log(5/0.5)) > 0.05 {
		t.Errorf("band %g, settled after %g s; want 0.5 and %.2f s", r.Band, r.SettledAfter, math.Log(5/0.5))
	}
	// A ramp in steps of 0.01: one step, the error follows it.
	q = New(Options{Band: 0.2})
	for i := range 1000 {
		s := float64(i) * 0.01
		q.Observe(float64(i)*0.005, s-0.05, s)
	}
	if r := q.Report(false); r.Steps != 1 || r.Verdict != Good || math.Abs(r.Error-0.05) > 1e-9 {
		t.Errorf("a ramp: %+v", r)
	}
	// Time going back (BeamNG restarted its coupling): the figures start
	// over.
	q.Observe(0.1, 0, 9.99)
	if r := q.Report(false); r.Steps != 2 || r.Verdict != Settling {
		t.Errorf("after time went back: steps %d, verdict %s", r.Steps, r.Verdict)
	}
}

// An angle's error goes the short way round: a heading of 179° held at
// -179° is 2° off, not 358°.
func TestWrap(t *testing.T) {
	deg := math.Pi / 180
	q := New(Options{Band: 1 * deg, Wrap: 2 * math.Pi, Scale: 1 / deg, Unit: "deg"})
	for i := range 400 {
		q.Observe(float64(i)*0.005, -179*deg, 179*deg)
	}
	r := q.Report(false)
	if math.Abs(r.Error-(-2)) > 1e-9 {
		t.Errorf("error %g deg; want -2", r.Error)
	}
	if r.Verdict != Settling || math.Abs(r.Band-1) > 1e-9 {
		t.Errorf("verdict %s, band %g deg", r.Verdict, r.Band)
	}
}

// What is not known is null in JSON, never NaN (which JSON cannot hold).
func TestReportJSON(t *testing.T) {
	q := New(Options{Name: "speed", Unit: "m/s"})
	q.Observe(0, 0, 20)
	b, err := json.Marshal(q.Report(false))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["settled_after_s"] != nil || m["error_rms_after_settling"] != nil || m["error_now"] != 20.0 || m["verdict"] != Settling || m["setpoint_value"] != 20.0 {
		t.Errorf("%s", b)
	}
}

// Observe runs on every message of the coupling: it allocates nothing.
func TestObserveAllocates(t *testing.T) {
	q := New(Options{})
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		i++
		q.Observe(float64(i)*0.005, math.Sin(float64(i)), float64(i/300))
	})
	if n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	q := New(Options{})
	for i := 0; b.Loop(); i++ {
		q.Observe(float64(i)*0.005, 20+math.Sin(float64(i)), 20)
	}
}

package beamng

import (
	"math"
	"math/big"
	"testing"
)

func TestSendSkips(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		simulinkTime, pingTime float64
		skips, window          int
		period                 float64
	}{
		// BeamNG's defaults: one message every 10 steps, one in flight (spec §2.1).
		{"defaults", 0.005, 0.00001, 9, 1, 0.005},
		// Seed 001 case 1 and case 5: every step.
		{"every step", 0.0005, 0.00001, 0, 1, 0.0005},
		// Not a multiple of 0.5 ms: BeamNG rounds up to 1.5 ms.
		{"rounded up", 0.0012, 0.00001, 2, 1, 0.0015},
		// A ping longer than the period widens the window.
		{"long ping", 0.0005, 0.0012, 0, 3, 0.0005},
		// The Gen 2 editor's float32 trap (spec §3.1): 0.5 ms stored as float32
		// makes BeamNG send every second step.
		{"float32 half millisecond", 0.00050000002374873, 9.9999997473788e-06, 1, 1, 0.001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SendSkips(tt.simulinkTime, PhysicsDt); got != tt.skips {
				t.Errorf("SendSkips(%g) = %d, want %d", tt.simulinkTime, got, tt.skips)
			}
			if got := Unanswered(tt.pingTime, tt.simulinkTime); got != tt.window {
				t.Errorf("Unanswered(%g, %g) = %d, want %d", tt.pingTime, tt.simulinkTime, got, tt.window)
			}
			if got := SendPeriod(tt.simulinkTime, PhysicsDt); math.Abs(got-tt.period) > 1e-15 {
				t.Errorf("SendPeriod(%g) = %g, want %g", tt.simulinkTime, got, tt.period)
			}
		})
	}
}

// Every period a user can write as a whole number of half milliseconds, in
// seconds or in milliseconds, must come out as exactly that many steps.
func TestSendSkipsWholeSteps(t *testing.T) {
	for n := int64(1); n <= 2000; n++ {
		// The double nearest the decimal, as a JSON parser reads it.
		sec, _ := new(big.Rat).SetFrac64(5*n, 10000).Float64()
		ms, _ := new(big.Rat).SetFrac64(5*n, 10).Float64()
		for _, p := range []float64{sec, ms / 1000} {
			if got := SendSkips(p, PhysicsDt); got != int(n-1) {
				t.Fatalf("SendSkips(%v) = %d, want %d", p, got, n-1)
			}
		}
	}
}

// SendPeriod's result goes back to BeamNG as simulinkTime (the start command
// beamconnect prints), so it must survive BeamNG's arithmetic unchanged.
func TestSendPeriodIsAFixedPoint(t *testing.T) {
	for n := int64(1); n <= 4000; n++ {
		asked, _ := new(big.Rat).SetFrac64(5*n, 10000).Float64()
		p := SendPeriod(asked, PhysicsDt)
		if p != asked {
			t.Fatalf("%d steps: SendPeriod(%v) = %v", n, asked, p)
		}
		// Noise in what is asked for is gone from the answer.
		noisy := float64(n) * PhysicsDt
		if q := SendPeriod(SendPeriod(noisy, PhysicsDt), PhysicsDt); q != SendPeriod(noisy, PhysicsDt) {
			t.Fatalf("SendPeriod is not idempotent at %v: %v", noisy, q)
		}
	}
}

package relative

import (
	"math"
	"testing"
)

// Hand-computed cases: the ego at the origin heading along +X (yaw 0) or
// +Y (yaw π/2), the other vehicle ahead, beside or behind.
func TestCompute(t *testing.T) {
	ego := State{Speed: 20, VX: 20}
	lead := State{X: 30, Y: 4, VX: 15, Speed: 15}
	north := State{Yaw: math.Pi / 2, VY: 10, Speed: 10}
	for _, tt := range []struct {
		name string
		p    Property
		e, o State
		want float64
		ok   bool
	}{
		{"distance 3-4-5 ×6 plus z", Distance, ego, State{X: 18, Y: 24}, 30, true},
		{"distance in 3-D", Distance, State{}, State{X: 2, Y: 3, Z: 6}, 7, true},
		{"gap along the heading", Gap, ego, lead, 30, true},
		{"closing at 5 m/s", ClosingSpeed, ego, lead, 5, true},
		{"time gap 30 m at 20 m/s", TimeGap, ego, lead, 1.5, true},
		{"ttc 30 m at 5 m/s", TimeToCollision, ego, lead, 6, true},
		{"heading north: gap is the Y offset", Gap, north, State{X: 3, Y: 40}, 40, true},
		{"heading north: closing on a stopped car", ClosingSpeed, north, State{Y: 40}, 10, true},
		{"lead pulling away: no collision course", TimeToCollision, ego, State{X: 30, VX: 25}, 0, false},
		{"other behind: no collision course ahead", TimeToCollision, ego, State{X: -30}, 0, false},
		{"time gap at standstill", TimeGap, State{}, lead, 0, false},
		{"behind: negative gap", Gap, ego, State{X: -12}, -12, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.p.Compute(tt.e, tt.o)
			if ok != tt.ok || ok && math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("%s: %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for name, want := range map[string]Property{"VSAP_DISTANCE": Distance, "distance": Distance, "TimeToCollision": TimeToCollision, "gap": Gap, "range": None} {
		if got, _ := Parse(name); got != want {
			t.Errorf("Parse(%q) = %v, want %v", name, got, want)
		}
	}
	if Distance.String() != "distance" || ClosingSpeed.Unit() != "m/s" {
		t.Error("names")
	}
}

// Needs is exactly what Compute reads: a quantity left out changes
// nothing, and every quantity it lists changes the result somewhere.
func TestNeeds(t *testing.T) {
	set := func(s *State, q string, v float64) {
		fields := map[string]*float64{"posX": &s.X, "posY": &s.Y, "posZ": &s.Z, "yaw": &s.Yaw, "velX": &s.VX, "velY": &s.VY, "groundspeed": &s.Speed}
		*fields[q] = v
	}
	base := State{X: 1, Y: 2, Z: 0.5, Yaw: 0.3, VX: 20, VY: 3, Speed: 20}
	other := State{X: 40, Y: 9, Z: 1, Yaw: 1, VX: 12, VY: 1, Speed: 12}
	for _, p := range []Property{Distance, Gap, ClosingSpeed, TimeGap, TimeToCollision} {
		t.Run(p.String(), func(t *testing.T) {
			ego, oth := p.Needs()
			for _, side := range []struct {
				name    string
				needs   []string
				egoSide bool
			}{{"ego", ego, true}, {"other", oth, false}} {
				t.Run(side.name, func(t *testing.T) {
					for _, q := range Quantities {
						e, o := base, other
						if side.egoSide {
							set(&e, q, 7.7)
						} else {
							set(&o, q, 7.7)
						}
						v0, _ := p.Compute(base, other)
						v1, _ := p.Compute(e, o)
						listed := false
						for _, n := range side.needs {
							listed = listed || n == q
						}
						if changed := v0 != v1; changed != listed {
							t.Errorf("%v: the %s's %s changes the result: %v, but Needs lists it: %v", p, side.name, q, changed, listed)
						}
					}
				})
			}
		})
	}
}

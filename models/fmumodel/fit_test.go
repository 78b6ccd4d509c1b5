package fmumodel

import (
	"math"
	"strings"
	"testing"

	"beamconnect/fmu"
	"beamconnect/models"
)

// What an input holds of BeamNG's values: integers rounded (not a clamp)
// and held within their type and bounds, an enumeration's nearest item, a
// floating-point input within its min and max; a NaN leaves an input that
// cannot hold it as it was.
func TestFitTake(t *testing.T) {
	f64 := func(x float64) *float64 { return &x }
	enum := &fmu.Variable{Kind: fmu.Enum, Items: []fmu.Item{{Name: "Eco", Value: 1}, {Name: "Sport", Value: 2}, {Name: "Race", Value: 3}}}
	gaps := &fmu.Variable{Kind: fmu.Enum, Items: []fmu.Item{{Name: "Low", Value: 5}, {Name: "High", Value: 1}}}
	for _, tt := range []struct {
		name    string
		v       *fmu.Variable
		x, last float64
		want    float64
		clamped bool
	}{
		{"Int8 above", &fmu.Variable{Kind: fmu.Int8}, 800, 0, 127, true},
		{"Int8 below", &fmu.Variable{Kind: fmu.Int8}, -300, 0, -128, true},
		{"Int8 within, rounded", &fmu.Variable{Kind: fmu.Int8}, 12.4, 0, 12, false},
		{"Int8 half away from 0", &fmu.Variable{Kind: fmu.Int8}, -12.5, 0, -13, false},
		{"Int8 rounded onto its edge", &fmu.Variable{Kind: fmu.Int8}, 127.4, 0, 127, false},
		{"Int8 NaN", &fmu.Variable{Kind: fmu.Int8}, math.NaN(), 7, 7, true},
		{"UInt8 negative", &fmu.Variable{Kind: fmu.UInt8}, -1, 0, 0, true},
		{"Int32 within its max", &fmu.Variable{Kind: fmu.Int32, Max: f64(9.5)}, 10, 0, 9, true},
		{"enumeration: no item above", enum, 4, 1, 3, true},
		{"enumeration: no item below", enum, 0, 1, 1, true},
		{"enumeration: an item", enum, 2, 1, 2, false},
		{"enumeration: an item, rounded", enum, 2.4, 1, 2, false},
		{"enumeration: between items, the nearest", gaps, 4, 1, 5, true},
		{"enumeration: halfway, the lower", gaps, 3, 1, 1, true},
		{"Float64 within its bounds", &fmu.Variable{Kind: fmu.Float64, Min: f64(0), Max: f64(10)}, 11, 0, 10, true},
		{"Float64 NaN as it is", &fmu.Variable{Kind: fmu.Float64, Min: f64(0)}, math.NaN(), 3, math.NaN(), false},
		{"Float32 beyond its range", &fmu.Variable{Kind: fmu.Float32}, 1e39, 0, math.MaxFloat32, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFit(tt.v)
			got, clamped := f.take(tt.x, tt.last)
			if !f.check || clamped != tt.clamped || got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("take(%v) = %v, clamped %v (check %v); want %v, %v", tt.x, got, clamped, f.check, tt.want, tt.clamped)
			}
		})
	}
	// What can hold anything is not looked at.
	for _, v := range []*fmu.Variable{{Kind: fmu.Float64}, {Kind: fmu.Bool}} {
		t.Run(v.Kind.String(), func(t *testing.T) {
			if f := newFit(v); f.check {
				t.Errorf("%v: checked", v.Kind)
			}
		})
	}
}

// BeamNG's engine speed (800 rpm and more) into an Int8 input, its gear (1
// to 5 as the emulated car shifts) into an enumeration of three items, its
// speed into an Int32: the FMU gets 127, the nearest item (no error
// status, no fault), the speed rounded; each clamp counted, the first of
// each input said once with its value.
func TestFMUInputsClamped(t *testing.T) {
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			extra := models.Params{"inputs": map[string]any{"i8": "rpm", "mode": "gear", "i32": "groundspeed"},
				"outputs": map[string]any{"o_mode": "driveMode"}}
			for k, v := range h.extra {
				extra[k] = v
			}
			m, p, log := typesRig(t, 0, extra)
			outs, ins := vectors(p)
			set := func(field string, x float64) {
				port, el, _ := p.Find(0, field)
				outs[port][el] = x
			}
			sent := func(name string) float64 {
				for i, in := range m.inputs {
					if in.name == name {
						return m.inVals[i]
					}
				}
				t.Fatalf("no input %s", name)
				return 0
			}
			// One test, not subtests: the clamps are counted, and the
			// first of each input said, over the steps together.
			for k, s := range []struct{ rpm, gear, speed float64 }{{800, 1, 0.4}, {5512, 4, 12.6}, {3000, 5, 20.5}, {100, 2, 21}} {
				outs[0][0] = 3
				set("rpm", s.rpm)
				set("gear", s.gear)
				set("groundspeed", s.speed)
				if !m.Step(float64(k)*p.Period, outs, ins) {
					t.Fatalf("step %d: no controls: %v\n%s", k, m.Fault(), log)
				}
				i8, mode, i32 := sent("i8"), sent("mode"), sent("i32")
				if i8 != min(s.rpm, 127) || mode != min(s.gear, 3) || i32 != math.Round(s.speed) {
					t.Errorf("step %d: sent i8 %v, mode %v, i32 %v for rpm %v, gear %v, speed %v", k, i8, mode, i32, s.rpm, s.gear, s.speed)
				}
				if port, el, _ := p.Find(1, "driveMode"); ins[port][el] != mode {
					t.Errorf("step %d: o_mode %v, want %v", k, ins[port][el], mode)
				}
			}
			// rpm beyond three times, the gear twice; the speed only rounded.
			if n := m.Tally().InputsClamped; n != 5 || m.Fault() != nil || m.Failures() != 0 {
				t.Errorf("clamped %d, want 5; fault %v, failures %d\n%s", n, m.Fault(), m.Failures(), log)
			}
			said := log.String()
			if strings.Count(said, "beyond what the FMU's input holds") != 2 || !strings.Contains(said, "input=i8 type=Int8 holds=\"-128 to 127\" field=rpm value=800 sent=127") ||
				!strings.Contains(said, "input=mode type=Enumeration holds=\"the items Eco (1), Sport (2), Race (3)\" field=gear value=4 sent=3") {
				t.Errorf("want one line for each of i8 and mode:\n%s", said)
			}
		})
	}
}

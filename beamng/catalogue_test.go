package beamng

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestCatalogueShape(t *testing.T) {
	for _, d := range []Direction{FromBeamNG, ToBeamNG} {
		sigs := Signals(d)
		if len(sigs) != d.Len() {
			t.Fatalf("%v: %d slots, want %d", d, len(sigs), d.Len())
		}
		names := map[string]int{}
		refs := map[string]bool{}
		for i, s := range sigs {
			if s.Index != i || s.Dir != d {
				t.Errorf("%v slot %d: Index %d Dir %v", d, i, s.Index, s.Dir)
			}
			if s.Name == "" || s.Desc == "" {
				t.Errorf("%v slot %d (%s): missing name or description", d, i, s.Ref)
			}
			// Names must stay unique even when letter case is ignored, or the
			// case-insensitive fallback of Lookup would be ambiguous.
			l := strings.ToLower(s.Name)
			if j, dup := names[l]; dup {
				t.Errorf("%v: %q at %d and %d", d, s.Name, j, i)
			}
			names[l] = i
			if i == 0 {
				if s.Ref != "" || s.Name != "id" {
					t.Errorf("%v: element 0 is %+v, want the message id", d, s)
				}
				continue
			}
			if refs[s.Ref] {
				t.Errorf("%v: bank reference %s twice", d, s.Ref)
			}
			refs[s.Ref] = true
			if got, ok := At(d, i); !ok || got != s {
				t.Errorf("At(%v, %d) = %+v", d, i, got)
			}
		}
	}
	if _, ok := At(FromBeamNG, StateLen); ok {
		t.Error("At past the end succeeded")
	}
}

func TestCatalogueSlots(t *testing.T) {
	// Positions from BeamNG's controller code (spec §2.2, §2.3), including the
	// slips of seed 000's tables: bank G is wheel RR (the seed repeats the RL
	// names) and every downForce is a force in N (the seed says Nm for F6/G6).
	for _, tt := range []struct {
		d               Direction
		index           int
		ref, name, unit string
	}{
		{FromBeamNG, 1, "A1", "throttle", ""},
		{FromBeamNG, 10, "A10", "steering_input", ""},
		{FromBeamNG, 11, "B1", "posX", "m"},
		{FromBeamNG, 17, "B7", "groundspeed", "m/s"},
		{FromBeamNG, 24, "B14", "altitude", "m"},
		{FromBeamNG, 26, "C2", "gear", ""},
		{FromBeamNG, 33, "C9", "rpm", "1/min"},
		{FromBeamNG, 36, "C12", "wheelspeed", "m/s"},
		{FromBeamNG, 37, "D1", "wheelFL_angularVelocity", "rad/s"},
		{FromBeamNG, 40, "D4", "wheelFL_propulsionTorque", "N·m"},
		{FromBeamNG, 43, "E1", "wheelFR_angularVelocity", "rad/s"},
		{FromBeamNG, 54, "F6", "wheelRL_downForce", "N"},
		{FromBeamNG, 55, "G1", "wheelRR_angularVelocity", "rad/s"},
		{FromBeamNG, 60, "G6", "wheelRR_downForce", "N"},
		{FromBeamNG, 61, "H1", "custom1", ""},
		{FromBeamNG, 110, "H50", "custom50", ""},
		{ToBeamNG, 1, "A1", "throttle", ""},
		{ToBeamNG, 3, "A3", "steering", ""},
		{ToBeamNG, 4, "A4", "gear", ""},
		{ToBeamNG, 5, "A5", "wheelFL_brakingTorque", "N·m"},
		{ToBeamNG, 8, "A8", "wheelRR_brakingTorque", "N·m"},
		{ToBeamNG, 9, "A9", "wheelFL_propulsionTorque", "N·m"},
		{ToBeamNG, 12, "A12", "wheelRR_propulsionTorque", "N·m"},
		{ToBeamNG, 13, "A13", "driveMode", ""},
		{ToBeamNG, 14, "B1", "custom1", ""},
		{ToBeamNG, 63, "B50", "custom50", ""},
	} {
		t.Run(fmt.Sprintf("%v %s", tt.d, tt.ref), func(t *testing.T) {
			s, ok := At(tt.d, tt.index)
			if !ok || s.Ref != tt.ref || s.Name != tt.name || s.Unit != tt.unit {
				t.Errorf("%v[%d] = %s %q %q, want %s %q %q", tt.d, tt.index, s.Ref, s.Name, s.Unit, tt.ref, tt.name, tt.unit)
			}
			if got, m := Lookup(tt.d, tt.name); m != Exact || got.Index != tt.index {
				t.Errorf("Lookup(%v, %q) = %d, %v", tt.d, tt.name, got.Index, m)
			}
			if got, m := Lookup(tt.d, tt.ref); m != Reference || got.Index != tt.index {
				t.Errorf("Lookup(%v, %q) = %d, %v", tt.d, tt.ref, got.Index, m)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		name  string // the row's
		d     Direction
		key   string
		index int
		match Match
	}{
		{"exact name", FromBeamNG, "rpm", 33, Exact},
		{"name in other case", FromBeamNG, "RPM", 33, Folded},
		// The seed's spelling: accepted, with a warning from the caller.
		{"seed spelling", FromBeamNG, "wheelFL_propulsiontorque", 40, Folded},
		{"reference last of bank", FromBeamNG, "H50", 110, Reference},
		{"reference past bank", FromBeamNG, "H51", 0, NoMatch},
		{"reference zero", FromBeamNG, "H0", 0, NoMatch},
		{"reference leading zero", FromBeamNG, "H01", 0, NoMatch},
		{"reference no such bank", FromBeamNG, "I1", 0, NoMatch},
		{"reference in other case", FromBeamNG, "b7", 17, Folded},
		{"message id", FromBeamNG, "id", 0, Exact},
		{"control in state", FromBeamNG, "driveMode", 0, NoMatch}, // only BeamNG reads it
		{"state in controls", ToBeamNG, "rpm", 0, NoMatch},        // only BeamNG sends it
		{"control reference", ToBeamNG, "A13", 13, Reference},
		{"control reference past bank", ToBeamNG, "A14", 0, NoMatch},
		{"custom control reference", ToBeamNG, "B7", 20, Reference},
		{"control in other case", ToBeamNG, "drivemode", 13, Folded},
		{"empty", ToBeamNG, "", 0, NoMatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, m := Lookup(tt.d, tt.key)
			if m != tt.match || (m != NoMatch && s.Index != tt.index) {
				t.Errorf("Lookup(%v, %q) = %d, %v; want %d, %v", tt.d, tt.key, s.Index, m, tt.index, tt.match)
			}
		})
	}
}

func TestBankEnd(t *testing.T) {
	for _, tt := range []struct {
		d         Direction
		index, to int
	}{
		{FromBeamNG, 0, 0},
		{FromBeamNG, 1, 10},
		{FromBeamNG, 10, 10},
		{FromBeamNG, 11, 24},
		{FromBeamNG, 37, 42},
		{FromBeamNG, 60, 60},
		{FromBeamNG, 61, 110},
		{ToBeamNG, 5, 13},
		{ToBeamNG, 14, 63},
	} {
		t.Run(fmt.Sprintf("%v slot %d", tt.d, tt.index), func(t *testing.T) {
			if got := BankEnd(tt.d, tt.index); got != tt.to {
				t.Errorf("BankEnd(%v, %d) = %d, want %d", tt.d, tt.index, got, tt.to)
			}
		})
	}
	total := 0
	for _, b := range Banks(FromBeamNG) {
		total += b.Size
	}
	if total != StateLen-1 {
		t.Errorf("banks of the state message hold %d slots, want %d", total, StateLen-1)
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		d          Direction
		name, want string
	}{
		{FromBeamNG, "grondspeed", "groundspeed"},
		{FromBeamNG, "wheelFL_propulsionTorq", "wheelFL_propulsionTorque"},
		{ToBeamNG, "drivemod", "driveMode"},
		{ToBeamNG, "engineTemperature", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Suggest(tt.d, tt.name); got != tt.want {
				t.Errorf("Suggest(%v, %q) = %q, want %q", tt.d, tt.name, got, tt.want)
			}
		})
	}
}

// The values BeamNG documents for what it sends: the pedals' and the
// steering's ranges, the lights' 0 or 1, the gear's whole numbers from -1,
// speeds of 0 or more; none for what it does not document, nor for a
// control it is sent.
func TestSignalValues(t *testing.T) {
	for _, tt := range []struct {
		d             Direction
		name          string
		lo, hi        float64
		whole, listed bool
	}{
		{FromBeamNG, "throttle", 0, 1, false, true},
		{FromBeamNG, "steering_input", -1, 1, false, true},
		{FromBeamNG, "highbeam", 0, 1, true, true},
		{FromBeamNG, "ignitionLevel", 0, 3, true, true},
		{FromBeamNG, "gear", -1, math.Inf(1), true, true},
		{FromBeamNG, "rpm", 0, math.Inf(1), false, true},
		{FromBeamNG, "posX", 0, 0, false, false},
		{FromBeamNG, "custom3", 0, 0, false, false},
		{ToBeamNG, "throttle", 0, 0, false, false},
	} {
		t.Run(fmt.Sprintf("%v %s", tt.d, tt.name), func(t *testing.T) {
			s, _ := Lookup(tt.d, tt.name)
			lo, hi, whole, ok := s.Values()
			if lo != tt.lo || hi != tt.hi || whole != tt.whole || ok != tt.listed {
				t.Errorf("%v..%v whole %v listed %v", lo, hi, whole, ok)
			}
		})
	}
	// A Gen 2 row takes its Gen 1 namesake's, a modifier row none.
	if lo, hi, _, ok := (Signal{Dir: FromBeamNG, Name: "Driver/throttle", Meaning: "throttle"}).Values(); !ok || lo != 0 || hi != 1 {
		t.Errorf("Gen 2 throttle: %v..%v %v", lo, hi, ok)
	}
	if _, _, _, ok := (Signal{Dir: FromBeamNG, Name: "x", Meaning: "throttle", Kind: "multiply"}).Values(); ok {
		t.Error("a multiply row has documented values")
	}
}

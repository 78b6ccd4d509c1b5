package system

import (
	"math"
	"strings"
	"testing"

	"beamconnect/ssp"
)

// What a connection does to a value on its way: units converted between
// two of one quantity (offsets too), refused between two quantities, taken
// as they are with a warning where a unit is unknown; then SSP's
// transformations.
func TestLinkValues(t *testing.T) {
	known := func(name string) unit { b, ok := commonUnits[name]; return unit{name: name, base: b, known: ok} }
	for _, tt := range []struct {
		name      string
		from, to  unit
		transform *ssp.Transform
		in, want  float64
		warn, err string
	}{
		{"m/s into km/h", known("m/s"), known("km/h"), nil, 20, 72, "", ""},
		{"degC into K", known("°C"), known("K"), nil, 20, 293.15, "", ""},
		{"rpm into rad/s is refused", known("1/min"), known("rad/s"), nil, 0, 0, "", "the units do not fit: 1/min (s-1) is not a quantity rad/s (s-1·rad) measures"},
		{"an unknown unit", known("m/s"), unit{name: "furlong/fortnight"}, nil, 3, 3, `the unit "furlong/fortnight" is defined nowhere`, ""},
		{"no unit", known("m/s"), unit{}, nil, 3, 3, "", ""},
		{"linear after the units", known("m/s"), known("km/h"), &ssp.Transform{Kind: "Linear", Factor: 0.5, Offset: 1}, 20, 37, "", ""},
		{"a boolean mapped", unit{}, unit{}, &ssp.Transform{Kind: "Boolean", BoolMap: map[bool]bool{true: false}}, 1, 0, "", ""},
		{"a boolean not mapped", unit{}, unit{}, &ssp.Transform{Kind: "Boolean", BoolMap: map[bool]bool{true: false}}, 0, 0, "", ""},
		{"an integer mapped", unit{}, unit{}, &ssp.Transform{Kind: "Integer", IntMap: map[int64]int64{3: 7}}, 3, 7, "", ""},
		{"an integer not mapped", unit{}, unit{}, &ssp.Transform{Kind: "Integer", IntMap: map[int64]int64{3: 7}}, 4, 4, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conv, warn, err := convert(tt.from, tt.to)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !strings.Contains(warn, tt.warn) || (tt.warn == "") != (warn == "") {
				t.Fatalf("%v %q, want warning %q", err, warn, tt.warn)
			}
			l := &Link{Units: conv, Transform: tt.transform}
			if got := l.apply(tt.in); math.Abs(got-tt.want) > 1e-12*math.Max(1, math.Abs(tt.want)) {
				t.Errorf("%v → %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

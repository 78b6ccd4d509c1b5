package svgplot

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	for _, tt := range []struct{ raw, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {0.0012, 0.002}, {0, 1}, {-1, 1},
	} {
		t.Run(fmt.Sprint(tt.raw), func(t *testing.T) {
			if got := NiceStep(tt.raw); got != tt.want {
				t.Errorf("NiceStep(%v) = %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

// Whatever the names, the document stays valid XML: markup escaped, bad
// UTF-8 and control characters replaced.
func TestDocumentIsValidXML(t *testing.T) {
	var b strings.Builder
	Begin(&b, 400, 300)
	p := Panel{X: 40, Y: 20, W: 300, H: 200, From: -0.5, To: 2, Lo: -1, Hi: 1}
	p.Frame(&b, `a<b & "c"`)
	p.ValueAxis(&b)
	p.TimeAxis(&b, "time [s]")
	Polyline(&b, []float64{p.PX(0), p.PX(1)}, []float64{p.PY(-1), p.PY(1)}, "#000", "")
	Text(&b, 10, 10, "start", "", "bad \xff utf-8 \x01")
	End(&b)
	var doc struct {
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	all := strings.Join(doc.Texts, "|")
	for _, want := range []string{`a<b & "c"`, "0.0", "0.5", "-1.0", "|0|", "|2|", "time [s]", "bad \uFFFD utf-8 \uFFFD"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in %q", want, all)
		}
	}
	if p.PX(-0.5) != 40 || p.PX(2) != 340 || p.PY(-1) != 220 || p.PY(1) != 20 {
		t.Errorf("pixels: %v %v %v %v", p.PX(-0.5), p.PX(2), p.PY(-1), p.PY(1))
	}
}

// Neighbouring ticks never read the same, whatever the span and offset:
// a nearly constant signal (20.1052 ± 1e-5), a huge one, a tiny one.
func TestTickLabelsDistinct(t *testing.T) {
	for _, tt := range []struct{ lo, hi float64 }{
		{0, 1}, {20.10519, 20.10522}, {-1, 1e5}, {0, 3e9}, {1e9, 1e9 + 40}, {0, 2e-7}, {-3e-5, 5e-5},
		{4999.9, 5000.1}, {0.1, 0.10000001}, {-1e12, 1e12}, {1791, 1809},
	} {
		t.Run(fmt.Sprintf("%g to %g", tt.lo, tt.hi), func(t *testing.T) {
			ticks, step := Ticks(tt.lo, tt.hi, 5)
			if len(ticks) < 2 {
				t.Errorf("[%g, %g]: %d ticks", tt.lo, tt.hi, len(ticks))
				return
			}
			seen := map[string]bool{}
			var labels []string
			for _, v := range ticks {
				l := FormatTick(v, step)
				labels = append(labels, l)
				if seen[l] {
					t.Errorf("[%g, %g]: label %q repeats in %q", tt.lo, tt.hi, l, labels)
				}
				seen[l] = true
				if len(l) > 11 {
					t.Errorf("[%g, %g]: label %q is too long for the axis", tt.lo, tt.hi, l)
				}
			}
		})
	}
	for _, tt := range []struct {
		v, step float64
		want    string
	}{
		{0.5, 0.5, "0.5"}, {20.10521, 0.00001, "20.10521"}, {12000, 2000, "12000"}, {1.5e12, 5e11, "1.5e+12"}, {1.5e6, 5e5, "1500000"},
		{2.5e-7, 5e-8, "2.5e-07"}, {-0.0, 1, "0"}, {1e5, 2e4, "100000"},
	} {
		t.Run(fmt.Sprintf("FormatTick %g %g", tt.v, tt.step), func(t *testing.T) {
			if got := FormatTick(tt.v, tt.step); got != tt.want {
				t.Errorf("FormatTick(%g, %g) = %q, want %q", tt.v, tt.step, got, tt.want)
			}
		})
	}
}

// Wrap keeps every word, in order, each line within the width (but for a
// word longer than a line), breaks only where a space was, and between
// the " · " parts of a line rather than within one where it can.
func TestWrap(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, tc := range []struct {
		name  string
		s     string
		width float64
		want  []string
	}{
		{"fits", "control groundspeed: good", 400, []string{"control groundspeed: good"}},
		{"breaks at spaces", "aaa bbb ccc ddd", 8 * TextCharWidth, []string{"aaa bbb", "ccc ddd"}},
		{"a word longer than a line", "a " + long + " b", 10 * TextCharWidth, []string{"a", long, "b"}},
		{"empty", "", 100, []string{""}},
		{"whole parts first", "0 s to 10 s · a reload (dashed) at 5 s: added out3.fuel", 45 * TextCharWidth,
			[]string{"0 s to 10 s", "a reload (dashed) at 5 s: added out3.fuel"}},
		{"parts that fit together", "one · two · three", 20 * TextCharWidth, []string{"one · two · three"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.s, tc.width)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q", got)
			}
			for _, l := range got {
				if float64(len(l))*TextCharWidth > tc.width && !strings.Contains(l, long) {
					t.Errorf("line %q wider than %g px", l, tc.width)
				}
			}
		})
	}
}

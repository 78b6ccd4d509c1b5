package svgplot

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	for _, tt := range []struct{ raw, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {0.0012, 0.002}, {0, 1}, {-1, 1},
	} {
		if got := NiceStep(tt.raw); got != tt.want {
			t.Errorf("NiceStep(%v) = %v, want %v", tt.raw, got, tt.want)
		}
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
	Polyline(&b, []float64{p.PX(0), p.PX(1)}, []float64{p.PY(-1), p.PY(1)}, "#000")
	Text(&b, 10, 10, "start", "", "bad \xff utf-8 \x01")
	End(&b)
	var doc struct {
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	all := strings.Join(doc.Texts, "|")
	for _, want := range []string{`a<b & "c"`, "0.0", "0.5", "2.0", "-1", "1", "time [s]", "bad \uFFFD utf-8 \uFFFD"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in %q", want, all)
		}
	}
	if p.PX(-0.5) != 40 || p.PX(2) != 340 || p.PY(-1) != 220 || p.PY(1) != 20 {
		t.Errorf("pixels: %v %v %v %v", p.PX(-0.5), p.PX(2), p.PY(-1), p.PY(1))
	}
}

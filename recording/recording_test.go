package recording

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad files are refused with the file, line and column and what was
// expected (testdata/errors.txt holds the expected messages).
func TestScanErrors(t *testing.T) {
	want, err := os.ReadFile("testdata/errors.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		file := line[:strings.IndexByte(line, ':')]
		f, err := os.Open(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		err = Scan(f, file, func(*Header) error { return nil }, func(*Header, *Row) error { return nil })
		f.Close()
		if err == nil || err.Error() != line {
			t.Errorf("%s:\n got %v\nwant %s", file, err, line)
		}
	}
}

// A recording with a reload that added a field: two headers, a vehicle-less
// layout; rows keep their columns.
const reloaded = `time,status,id,reply_id,reloads,out1.groundspeed,directive,in1.throttle
0.000,3,0,1,0,0,1,0.5
0.005,3,1,2,0,0.1,1,0.5
0.010,3,2,3,0,0.2,1,0.4
time,status,id,reply_id,reloads,out1.groundspeed,out1.rpm,directive,in1.throttle
0.015,3,3,4,1,0.3,900,1,0.3
0.020,3,4,5,1,0.4,950,1,NaN
0.025,3,5,6,1,0.5,1000,1,0.1
`

func TestScanReload(t *testing.T) {
	var headers []int
	var rows int
	err := Scan(strings.NewReader(reloaded), "r.csv", func(h *Header) error {
		headers = append(headers, len(h.Columns))
		return nil
	}, func(h *Header, r *Row) error {
		rows++
		if len(r.Values) != len(h.Columns) {
			t.Errorf("line %d: %d values for %d columns", r.Line, len(r.Values), len(h.Columns))
		}
		return nil
	})
	if err != nil || len(headers) != 2 || headers[1] != 9 || rows != 6 {
		t.Errorf("headers %v, rows %d: %v", headers, rows, err)
	}
}

func open(s string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

// Plot on a recording with a reload gives valid SVG: a panel per port (port
// 0 last), a trace per field, the reload as a dashed line.
func TestPlotReload(t *testing.T) {
	var b bytes.Buffer
	if err := Plot(&b, "r.csv", open(reloaded), PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName   xml.Name `xml:"svg"`
		Texts     []string `xml:"text"`
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Lines []struct {
			Dash string `xml:"stroke-dasharray,attr"`
		} `xml:"line"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not valid SVG: %v", err)
	}
	all := strings.Join(doc.Texts, "|")
	for _, want := range []string{"output port 1 (from BeamNG)", "input port 1 (to BeamNG)", "port 0 (out): status", "port 0 (in): directive",
		"out1.groundspeed", "out1.rpm", "in1.throttle", "1 reloads that changed the ports (dashed)", "reload"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in the texts: %s", want, all)
		}
	}
	if strings.Index(all, "port 0 (out)") < strings.Index(all, "input port 1") {
		t.Error("port 0 should come last")
	}
	dashed := 0
	for _, l := range doc.Lines {
		if l.Dash != "" {
			dashed++
		}
	}
	if dashed != 4 { // the reload, in each of the 4 panels
		t.Errorf("%d dashed lines, want 4", dashed)
	}
	// groundspeed, rpm (from the reload on), throttle in two runs (a NaN
	// breaks it), status, directive.
	if len(doc.Polylines) != 6 {
		t.Errorf("%d traces, want 6", len(doc.Polylines))
	}
}

func TestPlotFieldsAndWindow(t *testing.T) {
	var b bytes.Buffer
	if err := Plot(&b, "r.csv", open(reloaded), PlotOptions{Fields: []string{"rpm"}, From: 0.012, To: 0.03}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "out1.rpm") || strings.Contains(s, "groundspeed") || strings.Contains(s, "status") {
		t.Errorf("--fields rpm drew others:\n%s", s)
	}
	// --from alone: to the end of the data, not to infinity.
	b.Reset()
	if err := Plot(&b, "r.csv", open(reloaded), PlotOptions{From: 0.01, To: math.Inf(1)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "0.010 s to 0.025 s") {
		t.Errorf("--from 0.01: %.400s", b.String())
	}
	for _, tt := range []struct {
		o    PlotOptions
		want string
	}{
		{PlotOptions{Fields: []string{"speed"}}, `r.csv: --fields "speed": no such column (columns: status, out1.groundspeed, directive, in1.throttle, out1.rpm)`},
		{PlotOptions{From: 5, To: 6}, "r.csv: nothing to plot: no rows between 5 s and 6 s (the run spans 0 s to 0.025 s)"},
	} {
		if err := Plot(io.Discard, "r.csv", open(reloaded), tt.o); err == nil || err.Error() != tt.want {
			t.Errorf("%+v:\n got %v\nwant %s", tt.o, err, tt.want)
		}
	}
}

// Any input either is refused with a positioned error or plots to valid
// SVG.
func FuzzScan(f *testing.F) {
	f.Add(reloaded)
	f.Add("time,vehicle,status\n0,a,3\n")
	f.Add("time\n1e400\n")
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		err := Plot(&b, "f.csv", open(s), PlotOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv:") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if err := xml.Unmarshal(b.Bytes(), new(struct {
			XMLName xml.Name `xml:"svg"`
		})); err != nil {
			t.Fatalf("invalid SVG: %v\n%s", err, b.String())
		}
	})
}

// A real recording (run --record on the cruise rig, its config edited
// while running to add wheelspeed to port 3): plot gives valid SVG with the
// reload marked and wheelspeed drawn from there on.
func TestPlotRealRecording(t *testing.T) {
	var b bytes.Buffer
	openFile := func() (io.ReadCloser, error) { return os.Open("testdata/reload.csv") }
	if err := Plot(&b, "reload.csv", openFile, PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName   xml.Name   `xml:"svg"`
		Texts     []string   `xml:"text"`
		Polylines []struct{} `xml:"polyline"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not valid SVG: %v", err)
	}
	all := strings.Join(doc.Texts, "|")
	if !strings.Contains(all, "out3.wheelspeed") || !strings.Contains(all, "1 reloads that changed the ports") {
		t.Errorf("texts: %s", all)
	}
	if len(doc.Polylines) < 13 { // 12 columns before the reload, wheelspeed after
		t.Errorf("%d traces", len(doc.Polylines))
	}
}

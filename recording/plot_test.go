package recording

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"beamconnect/internal/svgplot"
)

// svgDoc is a plot as rendered, parsed back: panels with their frame,
// unit, tick labels, legend, traces and clip marks.
type svgDoc struct {
	Width  float64    `xml:"width,attr"`
	Texts  []svgText  `xml:"text"`
	Panels []svgPanel `xml:"g"`
}

type svgText struct {
	Class     string  `xml:"class,attr"`
	Anchor    string  `xml:"text-anchor,attr"`
	Transform string  `xml:"transform,attr"`
	X         float64 `xml:"x,attr"`
	Y         float64 `xml:"y,attr"`
	Value     string  `xml:",chardata"`
}

type svgPanel struct {
	Class string  `xml:"class,attr"` // panel, or strip (of constant fields)
	Port  string  `xml:"data-port,attr"`
	Unit  string  `xml:"data-unit,attr"`
	Lo    float64 `xml:"data-lo,attr"`
	Hi    float64 `xml:"data-hi,attr"`
	Frame struct {
		X, Y, W, H float64
	} `xml:"-"`
	Rect struct {
		X float64 `xml:"x,attr"`
		Y float64 `xml:"y,attr"`
		W float64 `xml:"width,attr"`
		H float64 `xml:"height,attr"`
	} `xml:"rect"`
	Texts     []svgText `xml:"text"`
	Polylines []struct {
		Field  string `xml:"data-field,attr"`
		Points string `xml:"points,attr"`
		Dash   string `xml:"stroke-dasharray,attr"`
	} `xml:"polyline"`
	Clips []struct {
		Field string `xml:"data-field,attr"`
	} `xml:"path"`
	Lines []struct {
		Dash string `xml:"stroke-dasharray,attr"`
	} `xml:"line"`
}

func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var d svgDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("not valid SVG: %v", err)
	}
	return d
}

// fields are the fields a panel draws (its legend).
func (p svgPanel) fields() []string {
	var out []string
	for _, tx := range p.Texts {
		if tx.Class == "legend" {
			out = append(out, tx.Value)
		}
	}
	return out
}

// texts are all a panel's texts.
func (p svgPanel) texts() []string {
	var out []string
	for _, tx := range p.Texts {
		out = append(out, tx.Value)
	}
	return out
}

// unitLabel is the turned text left of the value axis.
func (p svgPanel) unitLabel() string {
	for _, tx := range p.Texts {
		if strings.HasPrefix(tx.Transform, "rotate(-90") {
			return tx.Value
		}
	}
	return ""
}

// valueLabels are the value axis' tick labels, bottom to top.
func (p svgPanel) valueLabels() []string {
	var out []string
	for _, tx := range p.Texts {
		if tx.Anchor == "end" {
			out = append(out, tx.Value)
		}
	}
	return out
}

// timeLabels are the time axis' tick labels.
func (p svgPanel) timeLabels() []string {
	var out []string
	for _, tx := range p.Texts {
		if tx.Anchor == "middle" && tx.Transform == "" && tx.Y > p.Rect.Y+p.Rect.H {
			out = append(out, tx.Value)
		}
	}
	return out
}

// extent is how much of the panel's height a field's trace covers, 0–1.
func (p svgPanel) extent(field string) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pl := range p.Polylines {
		if pl.Field != field {
			continue
		}
		for _, pt := range strings.Fields(pl.Points) {
			_, y, _ := strings.Cut(pt, ",")
			v, _ := strconv.ParseFloat(y, 64)
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if lo > hi {
		return 0
	}
	return (hi - lo) / p.Rect.H
}

func (d svgDoc) panelOf(t *testing.T, field string) svgPanel {
	t.Helper()
	for _, p := range d.Panels {
		if slices.Contains(p.fields(), field) {
			return p
		}
	}
	t.Fatalf("no panel draws %s", field)
	return svgPanel{}
}

func (d svgDoc) drawn() []string {
	var out []string
	for _, p := range d.Panels {
		out = append(out, p.fields()...)
	}
	return out
}

// text is every text of the drawing, "|" between them but for the lines
// under the title, which read on as one (they are wrapped to the page).
func (d svgDoc) text() string {
	var head []string
	for _, tx := range d.Texts {
		head = append(head, tx.Value)
	}
	all := []string{strings.Join(head, " ")}
	for _, p := range d.Panels {
		for _, tx := range p.Texts {
			all = append(all, tx.Value)
		}
	}
	return strings.Join(all, "|")
}

// A recording like run --record writes for a several-vehicle follow rig:
// rpm beside gear, time beside the serial number, a time to collision
// that spikes to 1e5 s beside a time gap of 1.8 s, a gap with an invalid
// value at the start.
func followRecording() string {
	var b strings.Builder
	b.WriteString("time,vehicle,status,id,reply_id,reloads,out1.ego.rpm,out1.ego.gear,out2.ego.time,out2.ego.serial_number," +
		"out3.ego.gap:lead,out3.ego.timeGap:lead,out3.ego.timeToCollision:lead,out4.lead.groundspeed,directive,in1.ego.throttle,in2.lead.throttle\n")
	for i := range 4000 {
		t := float64(i) * 0.005
		veh := []string{"ego", "lead"}[i%2]
		gear := 1 + min(4, i/800)
		rpm := 900 + 5000*float64(i%800)/800
		gap, tg := 36+4*math.Cos(t/3), 1.8+0.05*math.Sin(t*2)
		if i < 6 {
			tg = -1 // invalid before the ego moves
		}
		ttc := 40 + 20*math.Sin(t)
		if i%400 == 7 {
			ttc = 1e5 // closing speed near zero for a message
		}
		fmt.Fprintf(&b, "%.6f,%s,3,%d,%d,0,%g,%d,%g,%d,%g,%g,%g,%g,1,%g,%g\n",
			t, veh, i/2, i/2+1, rpm, gear, t, i/2, gap, tg, ttc, 20+math.Sin(t), 0.3+0.1*math.Sin(t), 0.2)
	}
	return b.String()
}

// Fields of very different scales in one port are each readable: a panel
// per unit and per range, each trace using a good part of its panel's
// height, outliers clipped and said so, units on the axes, and one time
// axis for all.
func TestPlotScalesApart(t *testing.T) {
	var b bytes.Buffer
	res, err := Plot(&b, "follow.csv", CSVSource("follow.csv", open(followRecording())), PlotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.Bytes())
	apart := [][2]string{
		{"out1.ego.rpm", "out1.ego.gear"},
		{"out2.ego.time", "out2.ego.serial_number"},
		{"out3.ego.timeGap:lead", "out3.ego.timeToCollision:lead"},
		{"out3.ego.gap:lead", "out3.ego.timeGap:lead"},
	}
	for _, pair := range apart {
		t.Run(pair[0]+" and "+pair[1], func(t *testing.T) {
			a, b := d.panelOf(t, pair[0]), d.panelOf(t, pair[1])
			if a.Rect.Y == b.Rect.Y {
				t.Errorf("%s and %s share a panel", pair[0], pair[1])
			}
		})
	}
	for field, unit := range map[string]string{
		"out1.ego.rpm": "1/min", "out1.ego.gear": "(no unit)", "out2.ego.time": "s", "out2.ego.serial_number": "(no unit)",
		"out3.ego.gap:lead": "m", "out3.ego.timeGap:lead": "s", "out3.ego.timeToCollision:lead": "s", "out4.lead.groundspeed": "m/s",
	} {
		if got := d.panelOf(t, field).unitLabel(); got != unit {
			t.Errorf("%s: the axis says %q, want %q", field, got, unit)
		}
	}
	// Readable: every varying trace spans at least 40 % of its panel.
	for _, f := range d.drawn() {
		if f == "status" || f == "directive" || strings.HasSuffix(f, "throttle") && strings.Contains(f, "lead") {
			continue // constant
		}
		if e := d.panelOf(t, f).extent(f); e < 0.4 {
			t.Errorf("%s covers %.0f %% of its panel's height", f, e*100)
		}
	}
	// The spikes of 1e5 s are clipped at the edge and said to be; the time
	// gap's invalid start too; nothing else.
	ttc := d.panelOf(t, "out3.ego.timeToCollision:lead")
	if ttc.Hi > 1000 {
		t.Errorf("the time to collision's panel reaches %g s: the spikes were not clipped", ttc.Hi)
	}
	var clipped []string
	for _, p := range d.Panels {
		for _, c := range p.Clips {
			if !slices.Contains(clipped, c.Field) {
				clipped = append(clipped, c.Field)
			}
		}
	}
	slices.Sort(clipped)
	if want := []string{"out3.ego.timeGap:lead", "out3.ego.timeToCollision:lead"}; !slices.Equal(clipped, want) {
		t.Errorf("clip marks for %v, want %v", clipped, want)
	}
	all := d.text()
	for _, want := range []string{"clipped: 10 values above", "(max 100000 s)", "clipped: 6 values below", "(min -1 s)", "outliers are clipped at the panel's edge"} {
		if !strings.Contains(all, want) {
			t.Errorf("the plot does not say %q", want)
		}
	}
	if len(res.Clipped) != 2 || !strings.HasPrefix(res.Clipped[1], "out3.ego.timeToCollision:lead: 10 values above") {
		t.Errorf("result's clipped: %q", res.Clipped)
	}
	// One time axis: every panel has the same left edge, width and ticks;
	// the constant fields (the status, the directive, the lead's
	// throttle) are strips of the same width, the time axis under the
	// last.
	first := d.Panels[0]
	for _, p := range d.Panels {
		if p.Class == "strip" {
			if p.Rect.X != first.Rect.X || p.Rect.W != first.Rect.W || p.Rect.H > 30 {
				t.Errorf("strip of %v: x %g width %g height %g", p.fields(), p.Rect.X, p.Rect.W, p.Rect.H)
			}
			continue
		}
		if p.Rect.X != first.Rect.X || p.Rect.W != first.Rect.W || !slices.Equal(p.timeLabels(), first.timeLabels()) {
			t.Errorf("panel of %v: x %g width %g ticks %v; the first: x %g width %g ticks %v", p.fields(), p.Rect.X, p.Rect.W, p.timeLabels(),
				first.Rect.X, first.Rect.W, first.timeLabels())
		}
		if labels := p.valueLabels(); len(labels) < 3 || len(slices.Compact(slices.Clone(labels))) != len(labels) {
			t.Errorf("panel of %v: value ticks %q (fewer than 3, or repeated)", p.fields(), labels)
		}
	}
	if got := first.timeLabels(); !slices.Equal(got, []string{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18"}) {
		t.Errorf("time ticks %v", got)
	}
	if res.Fields != 12 || res.Strips != 3 || res.Panels+res.Strips != len(d.Panels) || !slices.Equal(d.Panels[len(d.Panels)-1].timeLabels(), first.timeLabels()) {
		t.Errorf("result %+v, %d panels drawn", res, len(d.Panels))
	}
}

// --fields takes the names a several-vehicle recording uses, or parts of
// them.
func TestPlotFieldsSeveralVehicles(t *testing.T) {
	rec := followRecording()
	for _, tt := range []struct {
		fields []string
		want   []string
	}{
		{[]string{"ego.rpm"}, []string{"out1.ego.rpm"}},
		{[]string{"out1.ego.rpm"}, []string{"out1.ego.rpm"}},
		{[]string{"out1.rpm"}, []string{"out1.ego.rpm"}},
		{[]string{"throttle"}, []string{"in1.ego.throttle", "in2.lead.throttle"}},
		{[]string{"lead"}, []string{"out4.lead.groundspeed", "in2.lead.throttle"}},
		{[]string{"gap"}, []string{"out3.ego.gap:lead"}},
		{[]string{"gap:lead", "timeGap"}, []string{"out3.ego.gap:lead", "out3.ego.timeGap:lead"}},
		{[]string{"ego.timeToCollision"}, []string{"out3.ego.timeToCollision:lead"}},
		{[]string{"out2"}, []string{"out2.ego.time", "out2.ego.serial_number"}},
		{[]string{"status"}, []string{"status"}},
	} {
		t.Run(strings.Join(tt.fields, " "), func(t *testing.T) {
			var b bytes.Buffer
			if _, err := Plot(&b, "follow.csv", CSVSource("follow.csv", open(rec)), PlotOptions{Fields: tt.fields}); err != nil {
				t.Errorf("%v: %v", tt.fields, err)
				return
			}
			got := parseSVG(t, b.Bytes()).drawn()
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("--fields %v drew %v, want %v", tt.fields, got, want)
			}
		})
	}
	_, err := Plot(io.Discard, "follow.csv", CSVSource("follow.csv", open(rec)), PlotOptions{Fields: []string{"ego.grondspeed"}})
	if err == nil || !strings.Contains(err.Error(), `follow.csv: --fields "ego.grondspeed": no such column`) || !strings.Contains(err.Error(), "out4.lead.groundspeed") {
		t.Errorf("a misspelt field: %v", err)
	}
	_, err = Plot(io.Discard, "follow.csv", CSVSource("follow.csv", open(rec)), PlotOptions{Fields: []string{"ego.rmp"}})
	if err == nil || !strings.Contains(err.Error(), `(did you mean "ego.rpm"?)`) {
		t.Errorf("a misspelt field: %v", err)
	}
}

// A recording with a reload: the panels of the ports, port 0 last, the
// reload dashed in every panel, a trace broken where a NaN is.
func TestPlotReload(t *testing.T) {
	var b bytes.Buffer
	if _, err := Plot(&b, "r.csv", CSVSource("r.csv", open(reloaded)), PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.Bytes())
	all := d.text()
	for _, want := range []string{"output port 1 (from BeamNG)", "input port 1 (to BeamNG)", "port 0 (out): connection status", "port 0 (in): connection directive",
		"out1.groundspeed", "out1.rpm", "in1.throttle", "a reload (dashed) at 0.015 s: added out1.rpm", "reload"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in the texts: %s", want, all)
		}
	}
	var ports []string
	for _, p := range d.Panels {
		ports = append(ports, p.Port)
		dashed := 0
		for _, l := range p.Lines {
			if l.Dash != "" {
				dashed++
			}
		}
		if dashed != 1 {
			t.Errorf("panel of %v: %d dashed lines, want the reload's", p.fields(), dashed)
		}
	}
	if want := []string{"out1", "out1", "in1", "out0", "in0"}; !slices.Equal(ports, want) {
		t.Errorf("panels of ports %v, want %v (groundspeed and rpm apart, port 0 last)", ports, want)
	}
	throttle := 0
	for _, p := range d.Panels {
		for _, pl := range p.Polylines {
			if pl.Field == "in1.throttle" {
				throttle++
			}
		}
	}
	if throttle != 2 {
		t.Errorf("throttle in %d runs, want 2 (a NaN breaks it)", throttle)
	}
}

func TestPlotFieldsAndWindow(t *testing.T) {
	var b bytes.Buffer
	if _, err := Plot(&b, "r.csv", CSVSource("r.csv", open(reloaded)), PlotOptions{Fields: []string{"rpm"}, From: 0.012, To: 0.03}); err != nil {
		t.Fatal(err)
	}
	if got := parseSVG(t, b.Bytes()).drawn(); !slices.Equal(got, []string{"out1.rpm"}) {
		t.Errorf("--fields rpm drew %v", got)
	}
	// --from alone: to the end of the data, not to infinity.
	b.Reset()
	if _, err := Plot(&b, "r.csv", CSVSource("r.csv", open(reloaded)), PlotOptions{From: 0.01, To: math.Inf(1)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "0.010 s to 0.025 s") {
		t.Errorf("--from 0.01: %.400s", b.String())
	}
	for _, tt := range []struct {
		name string
		o    PlotOptions
		want string
	}{
		{"an unknown field", PlotOptions{Fields: []string{"speed"}}, `r.csv: --fields "speed": no such column (columns: status, out1.groundspeed, directive, in1.throttle, out1.rpm)`},
		{"a misspelt field", PlotOptions{Fields: []string{"groundsped"}}, `r.csv: --fields "groundsped": no such column (did you mean "groundspeed"?) (columns: status, out1.groundspeed, directive, in1.throttle, out1.rpm)`},
		{"a window without rows", PlotOptions{From: 5, To: 6}, "r.csv: nothing to plot: no rows between 5 s and 6 s (the run spans 0 s to 0.025 s)"},
		{"a misspelt port", PlotOptions{Fields: []string{"ot1"}}, `r.csv: --fields "ot1": no such column (did you mean "out1"?) (columns: status, out1.groundspeed, directive, in1.throttle, out1.rpm)`},
		{"a misspelt component", PlotOptions{Fields: []string{"controler"}}, `r.csv: --fields "controler": no such column (did you mean "controller"?) (columns: status, out1.groundspeed, directive, in1.throttle, vehicle.groundspeed, controller.demand)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := reloaded
			if strings.Contains(tt.want, "controller") { // a system's recording
				rec = "time,status,id,reply_id,reloads,local_time,out1.groundspeed,directive,in1.throttle,vehicle.groundspeed,controller.demand\n" +
					"0,3,0,1,0,0,10,1,0.5,10,0.5\n0.005,3,1,2,0,0.005,10.1,1,0.4,10.1,0.4\n"
			}
			if _, err := Plot(io.Discard, "r.csv", CSVSource("r.csv", open(rec)), tt.o); err == nil || err.Error() != tt.want {
				t.Errorf("%+v:\n got %v\nwant %s", tt.o, err, tt.want)
			}
		})
	}
}

// A recording of thousands of ports draws the first MaxFields of them and
// says how many more there are; --fields picks any of them.
func TestPlotManyPorts(t *testing.T) {
	rec := manyPorts(5000, 30)
	var b bytes.Buffer
	res, err := Plot(&b, "many.csv", CSVSource("many.csv", open(rec)), PlotOptions{MaxFields: 50})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.Bytes())
	if res.Fields != 50 || res.Omitted != 4951 || len(d.drawn()) != 50 || !strings.Contains(d.text(), "4951 more fields not drawn: choose them with --fields") {
		t.Errorf("result %+v, %d drawn", res, len(d.drawn()))
	}
	b.Reset()
	if _, err := Plot(&b, "many.csv", CSVSource("many.csv", open(rec)), PlotOptions{Fields: []string{"out4999.custom50"}}); err != nil {
		t.Fatal(err)
	}
	if got := parseSVG(t, b.Bytes()).drawn(); !slices.Equal(got, []string{"out4999.custom50"}) {
		t.Errorf("drew %v", got)
	}
}

// manyPorts is a recording of n ports of one field each, rows rows.
func manyPorts(n, rows int) string {
	var b strings.Builder
	b.WriteString("time,status,id,reply_id,reloads")
	for p := 1; p <= n; p++ {
		fmt.Fprintf(&b, ",out%d.custom%d", p, p%50+1)
	}
	b.WriteString("\n")
	for r := range rows {
		fmt.Fprintf(&b, "%.6f,3,%d,%d,0", float64(r)*0.005, r, r+1)
		for p := 1; p <= n; p++ {
			fmt.Fprintf(&b, ",%g", float64(p)*0.001+float64(r)*1.25)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// A real recording (run --record on the cruise rig, its config edited
// while running to add wheelspeed to port 3): the reload marked and
// wheelspeed drawn from there on, beside groundspeed (the same unit and
// range), apart from rpm and gear.
func TestPlotRealRecording(t *testing.T) {
	var b bytes.Buffer
	openFile := func() (io.ReadCloser, error) { return os.Open("testdata/reload.csv") }
	if _, err := Plot(&b, "reload.csv", CSVSource("reload.csv", openFile), PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.Bytes())
	if !strings.Contains(d.text(), "a reload (dashed) at 1.407 s: added out3.wheelspeed") {
		t.Errorf("texts: %s", d.text())
	}
	if got := d.panelOf(t, "out3.wheelspeed").fields(); !slices.Equal(got, []string{"out3.wheelspeed"}) {
		t.Errorf("wheelspeed shares a panel with %v", got)
	}
	if d.panelOf(t, "out3.rpm").Rect.Y == d.panelOf(t, "out3.gear").Rect.Y {
		t.Error("rpm and gear share a panel")
	}
}

// A real several-vehicle recording (run --record on examples/follow.json,
// 6 s): --fields takes the parts of its names, the time to collision's
// spikes are clipped, the speeds of both cars drawn.
func TestPlotRealFollowRecording(t *testing.T) {
	var b bytes.Buffer
	openFile := func() (io.ReadCloser, error) { return os.Open("testdata/follow.csv") }
	res, err := Plot(&b, "follow.csv", CSVSource("follow.csv", openFile), PlotOptions{Fields: []string{"ego.groundspeed", "lead.groundspeed", "gap", "timeGap", "timeToCollision", "throttle"}})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.Bytes())
	got := d.drawn()
	slices.Sort(got)
	want := []string{"in1.ego.throttle", "in2.lead.throttle", "out1.ego.groundspeed", "out2.ego.gap:lead", "out2.ego.timeGap:lead", "out2.ego.timeToCollision:lead", "out3.lead.groundspeed"}
	if !slices.Equal(got, want) {
		t.Errorf("drew %v, want %v", got, want)
	}
	if ttc := d.panelOf(t, "out2.ego.timeToCollision:lead"); ttc.Hi > 10000 || len(ttc.Clips) == 0 {
		t.Errorf("time to collision up to %g s, %d clip marks: the spikes were not clipped", ttc.Hi, len(ttc.Clips))
	}
	if len(res.Clipped) == 0 {
		t.Error("nothing said to be clipped")
	}
}

// pedalRecording is a cruise run of n rows whose brake rests at 0 but for
// a press of 107 values up to 0.5, ramped (each value between) or held (a
// step to 0.5 and back), and whose time to collision jumps to 1e5 s for a
// few rows.
func pedalRecording(n int, held bool) string {
	var b strings.Builder
	b.WriteString("time,status,id,reply_id,reloads,out1.groundspeed,out2.timeToCollision,directive,in1.throttle,in1.brake\n")
	for i := range n {
		brake := 0.0
		if k := i - n/2; k >= 0 && k < 107 {
			brake = 0.5
			if !held {
				brake = 0.5 * math.Sin(math.Pi*float64(k)/106)
			}
		}
		ttc := 40 + 10*math.Sin(float64(i)/50)
		if i%2000 == 17 {
			ttc = 1e5
		}
		fmt.Fprintf(&b, "%.6f,3,%d,%d,0,%g,%g,1,%g,%g\n", float64(i)*0.005, i, i+1, 20+0.05*math.Sin(float64(i)), ttc, 0.2, brake)
	}
	return b.String()
}

// A control's genuine excursions are never clipped, ramped or held; the
// spikes of a time to collision are; --no-clip (NoClip) draws them too.
func TestPlotClipsOnlyRareAndFar(t *testing.T) {
	for _, held := range []bool{false, true} {
		var b bytes.Buffer
		res, err := Plot(&b, "pedals.csv", CSVSource("pedals.csv", open(pedalRecording(20000, held))), PlotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d := parseSVG(t, b.Bytes())
		if brake := d.panelOf(t, "in1.brake"); brake.Hi < 0.5 || len(brake.Clips) > 0 {
			t.Errorf("held %v: the brake's panel reaches %g, %d clip marks: its press was clipped", held, brake.Hi, len(brake.Clips))
		}
		if ttc := d.panelOf(t, "out2.timeToCollision"); ttc.Hi > 1000 || len(ttc.Clips) == 0 {
			t.Errorf("held %v: the time to collision reaches %g s: its spikes were not clipped", held, ttc.Hi)
		}
		if len(res.Clipped) != 1 || !strings.HasPrefix(res.Clipped[0], "out2.timeToCollision: 10 values above") {
			t.Errorf("held %v: clipped %q", held, res.Clipped)
		}
	}
	var b bytes.Buffer
	res, err := Plot(&b, "pedals.csv", CSVSource("pedals.csv", open(pedalRecording(20000, false))), PlotOptions{NoClip: true})
	if err != nil {
		t.Fatal(err)
	}
	if ttc := parseSVG(t, b.Bytes()).panelOf(t, "out2.timeToCollision"); ttc.Hi < 1e5 || len(res.Clipped) > 0 {
		t.Errorf("without clipping the time to collision's panel reaches %g s; clipped %q", ttc.Hi, res.Clipped)
	}
}

// A settled value is drawn as the steady line it is: its panel spans what
// its unit and magnitude make meaningful (20 m/s ± 0.05 in at least 2 m/s).
func TestPlotMinimumSpan(t *testing.T) {
	var b bytes.Buffer
	if _, err := Plot(&b, "pedals.csv", CSVSource("pedals.csv", open(pedalRecording(4000, false))), PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.Bytes())
	if p := d.panelOf(t, "out1.groundspeed"); p.Hi-p.Lo < 2 {
		t.Errorf("the speed's panel spans %g to %g m/s", p.Lo, p.Hi)
	}
	if p := d.panelOf(t, "in1.throttle"); p.Hi-p.Lo < 0.1 {
		t.Errorf("a steady throttle's panel spans %g to %g", p.Lo, p.Hi)
	}
}

// A loop of beamng.quality in a recording: its setpoint is drawn dashed in
// its measured value's panel, the plot judges it as the run did, and a
// reload that changed only a parameter says so.
func TestPlotControl(t *testing.T) {
	var out bytes.Buffer
	res, err := Plot(&out, "cruise.csv", CSVSource("cruise.csv", open(cruiseRecording())), PlotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, out.Bytes())
	p := d.panelOf(t, "setpoint:out1.groundspeed")
	if !slices.Equal(p.fields(), []string{"out1.groundspeed", "setpoint:out1.groundspeed"}) {
		t.Errorf("the setpoint's panel draws %v", p.fields())
	}
	for _, pl := range p.Polylines {
		if dashed := pl.Dash != ""; dashed != (pl.Field == "setpoint:out1.groundspeed") {
			t.Errorf("%s drawn dashed %v", pl.Field, dashed)
		}
	}
	if len(res.Control) != 1 || res.Control[0].Verdict != "good" || res.Control[0].Steps != 2 || res.Control[0].Value != 25 {
		t.Fatalf("the verdict: %+v", res.Control)
	}
	all := d.text()
	for _, want := range []string{"control groundspeed: good: settled after", "a reload (dashed) at 10.000 s: the columns unchanged (model parameters or other settings)"} {
		if !strings.Contains(all, want) {
			t.Errorf("the plot does not say %q: %s", want, all)
		}
	}
}

// The lines under the title, the control verdict among them (over 200
// characters for a loop that settled after a setpoint step), are wrapped
// to the page: each within its width at the widest common fonts' letters,
// the verdict whole when read on. A field constant all along (a healthy
// run's connection status and directive, a held throttle) is a thin strip
// that says its value, not a panel.
func TestPlotFitsThePage(t *testing.T) {
	var out bytes.Buffer
	res, err := Plot(&out, "cruise.csv", CSVSource("cruise.csv", open(cruiseRecording())), PlotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, out.Bytes())
	verdict := "control " + res.Control[0].Line()
	if len(verdict) < 190 {
		t.Fatalf("the verdict is %d characters: want a long one", len(verdict))
	}
	var lines []string
	for _, tx := range d.Texts {
		half := float64(len([]rune(tx.Value))) * svgplot.TextCharWidth / 2
		if tx.Anchor == "middle" && (tx.X-half < 0 || tx.X+half > d.Width) {
			t.Errorf("%q runs off the page (%.0f to %.0f px of %.0f)", tx.Value, tx.X-half, tx.X+half, d.Width)
		}
		if tx.Class == "control" {
			lines = append(lines, tx.Value)
		}
	}
	if len(lines) < 2 || strings.Join(lines, " ") != verdict {
		t.Errorf("the verdict in %d lines %q, want %q wrapped", len(lines), lines, verdict)
	}
	for _, f := range []string{"status", "directive", "in1.throttle"} {
		if p := d.panelOf(t, f); p.Class != "strip" || p.Rect.H > 30 || len(p.Polylines) > 0 {
			t.Errorf("%s: a %s %g px high with %d traces: want a strip", f, p.Class, p.Rect.H, len(p.Polylines))
		}
	}
	if p := d.panelOf(t, "out1.groundspeed"); p.Class != "panel" || p.Rect.H < 100 {
		t.Errorf("groundspeed: a %s %g px high: want a panel", p.Class, p.Rect.H)
	}
	if s := d.text(); !strings.Contains(s, "3 all along|status") || !strings.Contains(s, "1 all along|directive") || !strings.Contains(s, "1 panels and 3 strips of constant fields") {
		t.Errorf("the strips do not say their values: %s", s)
	}
}

// cruiseRecording is a cruise loop's recording: the setpoint stepped from
// 20 to 25 m/s at 10 s by a reload of parameters, a constant throttle.
func cruiseRecording() string {
	var b strings.Builder
	header := "time,status,id,reply_id,reloads,out1.groundspeed,directive,in1.throttle,setpoint:out1.groundspeed\n"
	b.WriteString(header)
	v := 0.0
	for i := range 4000 {
		set := 20.0
		if i == 2000 {
			b.WriteString(header) // a reload: setSpeed 20 → 25, the ports unchanged
		}
		if i >= 2000 {
			set = 25
		}
		v += (set - v) * 0.005 // a first-order loop, time constant 1 s
		fmt.Fprintf(&b, "%.6f,3,%d,%d,%d,%g,1,0.3,%g\n", float64(i)*0.005, i, i+1, i/2000, v, set)
	}
	return b.String()
}

// A recording of a model's own view, as a BouncingBall draft records it:
// h and v (the fields they drive, named after them, with their units) in
// panels of their own units, never one "(no unit)" panel; the model's
// variables a group of their own, a value as small as the smallest double
// and one as large as a UInt64's largest each with round ticks that read
// apart; the time axis the simulation's; a reload of parameters (the
// reloads column counting one more, no new header) marked where it came.
func TestPlotModelView(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,status,id,reply_id,reloads,local_time,directive,in1.h [m],in1.v [m/s],model.der(v) [m/s2],model.tiny,model.huge\n")
	for i := range 300 {
		tm := float64(i) * 0.01
		h := 1 - 4.905*tm*tm
		v := -9.81 * tm
		if d := math.Mod(tm, 0.9) - 0.45; tm > 0.45 { // bouncing
			h, v = 0.99-4.905*d*d, -9.81*d
		}
		reloads := 0
		if i >= 150 {
			reloads = 1
		}
		fmt.Fprintf(&b, "%.6f,3,%d,%d,%d,%.6f,1,%g,%g,-9.81,2.2251e-308,1.8446744073709552e+19\n", tm, i, i+1, reloads, tm*1.3+0.02, h, v)
	}
	var out bytes.Buffer
	res, err := Plot(&out, "bb.csv", CSVSource("bb.csv", open(b.String())), PlotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, out.Bytes())
	h, v := d.panelOf(t, "in1.h"), d.panelOf(t, "in1.v")
	if h.Unit != "m" || v.Unit != "m/s" || h.unitLabel() != "m" || v.unitLabel() != "m/s" || slices.Equal(h.fields(), v.fields()) {
		t.Errorf("h in %q (%v), v in %q (%v): want panels of their own units", h.Unit, h.fields(), v.Unit, v.fields())
	}
	if tiny, huge := d.panelOf(t, "model.tiny"), d.panelOf(t, "model.huge"); slices.Equal(tiny.fields(), huge.fields()) {
		t.Errorf("2.2251e-308 drawn in the panel of 1.8e19 (%v): a line at 0", tiny.fields())
	}
	// Constant all along: each a strip of the model's group that says its
	// value exactly, however small or large.
	for f, value := range map[string]string{"model.tiny": "2.2251e-308 all along", "model.huge": "1.8446744073709552e+19 all along",
		"model.der(v)": "-9.81 m/s2 all along"} {
		p := d.panelOf(t, f)
		if p.Port != "model" || p.Class != "strip" || !strings.Contains(strings.Join(p.texts(), "|"), value) {
			t.Errorf("%s: port %q, a %s saying %q: want the model's group, a strip saying %q", f, p.Port, p.Class, p.texts(), value)
		}
	}
	if s := d.text(); !strings.Contains(s, "the model's own variables") || !strings.Contains(s, "simulation time [s]") {
		t.Errorf("no heading of the model's variables, or no simulation time axis:\n%s", s)
	}
	if len(res.Reloads) != 1 || !strings.HasPrefix(res.Reloads[0], "1.500 s: the columns unchanged") {
		t.Errorf("reloads %q: want the one of the reloads column at 1.5 s", res.Reloads)
	}
	if len(res.Faults) != 0 {
		t.Errorf("faults %q in a run without", res.Faults)
	}
	if os.Getenv("BEAMCONNECT_PLOT_PNG") != "" { // look at it
		os.WriteFile(os.Getenv("BEAMCONNECT_PLOT_PNG"), out.Bytes(), 0o644)
	}
}

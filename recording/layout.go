package recording

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"beamconnect/internal/svgplot"
	"beamconnect/quality"
)

// panel is one plot area: fields of one port and unit whose ranges are
// alike, on one value axis; or, where every field of it is constant (the
// connection status and directive of a healthy run), a thin strip that
// says their values.
type panel struct {
	svgplot.Panel
	port, unit string
	fields     []*field
	heading    string // the port's title, over its first panel
	strip      bool
	ticks      bool // a strip with the time axis under it: the drawing's last
}

// layout is where everything goes.
type layout struct {
	panels        []*panel
	header        []headerLine // the lines under the title
	width, height int
	left          int     // the panels' left edge: unit and tick labels fit left of it
	labelWidth    float64 // the widest value tick label
}

// headerLine is a line of text under the title, its attributes.
type headerLine struct{ text, attrs string }

// Geometry, in SVG pixels.
const (
	docWidth     = 1240
	legendWidth  = 330
	panelHeight  = 110
	stripHeight  = 22 // a strip of constant fields: one line each
	legendLine   = 15
	panelGap     = 30 // under a panel: its time tick labels
	stripGap     = 12 // under a strip: no tick labels
	headingSpace = 26 // over a port's first panel
	headerLines  = 44 // the first line under the title; the rest 18 apart
	headerMargin = 60 // left and right of the lines under the title
	maxPerPanel  = 6  // fields sharing a panel, at most
	// A field shares a panel only when its range spans at least 1/shareSpan
	// of the panel's: it then fills a fifth of the height or more.
	shareSpan = 5
)

var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d"}

// layout groups the fields into panels and places them.
func (p *plot) layout() layout {
	for _, f := range p.fields {
		f.robust(p.noClip)
	}
	var lay layout
	for _, port := range p.portOrder() {
		var mine []*panel
		for _, f := range p.fields {
			if f.name.Port != port {
				continue
			}
			pn := joinable(mine, f)
			if pn == nil {
				pn = &panel{port: port, unit: f.unit}
				mine = append(mine, pn)
			}
			pn.fields = append(pn.fields, f)
			f.panel = pn
		}
		mine[0].heading = portTitle(port)
		lay.panels = append(lay.panels, mine...)
	}
	width := 0.0
	for _, pn := range lay.panels {
		pn.setRange()
		if pn.strip = constant(pn.fields); pn.strip {
			pn.H = max(stripHeight, pn.legendLines()*legendLine+6)
			continue
		}
		pn.H = max(panelHeight, pn.legendLines()*legendLine+8)
		for _, l := range pn.ValueLabels() {
			width = max(width, float64(len(l))*svgplot.CharWidth)
		}
	}
	lay.width = docWidth
	lay.left, lay.labelWidth = int(width)+34, width
	lay.header = p.header(len(lay.panels))
	y := headerLines + 18*len(lay.header) + 4
	for k, pn := range lay.panels {
		if pn.heading != "" {
			y += headingSpace
		}
		pn.X, pn.Y, pn.W = lay.left, y, docWidth-lay.left-legendWidth
		pn.From, pn.To = p.t0, p.t1
		for i, f := range pn.fields {
			f.color = palette[i%len(palette)]
		}
		last := k == len(lay.panels)-1
		pn.ticks = pn.strip && last // the drawing ends with a time axis
		if pn.strip && !last {
			y += pn.H + stripGap
		} else {
			y += pn.H + panelGap
		}
		if last {
			y += 24 // the time axis' caption
		}
	}
	lay.height = y + 10
	return lay
}

// constant reports whether every field of a panel has one value all
// along (none that is not a number counted): it is drawn as a strip. A
// setpoint is drawn as a trace, dashed, as its measured value's is.
func constant(fs []*field) bool {
	for _, f := range fs {
		if f.n == 0 || f.min != f.max || f.name.Setpoint {
			return false
		}
	}
	return true
}

// header are the lines under the title: what the plot shows, its notes,
// and the verdict on each control loop, each wrapped to the page.
func (p *plot) header(panels int) []headerLine {
	strips := 0
	for _, f := range p.fields {
		if f.panel != nil && f.panel.strip && f.panel.fields[0] == f {
			strips++
		}
	}
	shows := fmt.Sprintf("%d panels", panels-strips)
	if strips > 0 {
		shows += fmt.Sprintf(" and %d %s of constant fields", strips, map[bool]string{true: "strip", false: "strips"}[strips == 1])
	}
	sub := fmt.Sprintf("%s s to %s s · %d fields in %s, one per unit and range of values", plain(p.t0), plain(p.t1), len(p.fields), shows)
	switch len(p.reloads) {
	case 0:
	case 1:
		sub += " · a reload (dashed) at " + p.reloadText()[0]
	default:
		sub += fmt.Sprintf(" · %d reloads (dashed): %s", len(p.reloads), strings.Join(p.reloadText(), "; "))
	}
	var out []headerLine
	add := func(text, attrs string) {
		for _, l := range svgplot.Wrap(text, docWidth-2*headerMargin) {
			out = append(out, headerLine{l, attrs})
		}
	}
	add(sub, `fill="#444"`)
	var notes []string
	for _, f := range p.fields {
		if f.n > 0 && f.panel != nil && (f.max > f.panel.Hi || f.min < f.panel.Lo) { // as legendLines counts
			notes = append(notes, "outliers are clipped at the panel's edge (▲ ▼ mark where), counted in the legend")
			break
		}
	}
	if p.omitted > 0 {
		notes = append(notes, fmt.Sprintf("%d more fields not drawn: choose them with --fields", p.omitted))
	}
	if len(notes) > 0 {
		add(strings.Join(notes, " · "), `fill="#b45309"`)
	}
	for _, r := range p.control() {
		color := "#15803d"
		switch {
		case r.Verdict == quality.Faulted:
			color = "#b45309" // it held, but the run had faults
		case !r.Good():
			color = "#b91c1c"
		}
		add("control "+r.Line(), `class="control" fill="`+color+`"`)
	}
	return out
}

// portOrder lists the ports in the order their columns came, port 0
// (status and directive) last.
func (p *plot) portOrder() []string {
	var ports []string
	for _, f := range p.fields {
		if !slices.Contains(ports, f.name.Port) {
			ports = append(ports, f.name.Port)
		}
	}
	zero := func(p string) int {
		if p == "out0" || p == "in0" {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(ports, func(a, b string) int { return zero(a) - zero(b) })
	return ports
}

// joinable is the panel of list f can share, or nil: one of the same unit
// where, with f, every field that moves still spans a fifth of the range
// or more, and every field that barely moves (less than the least span its
// unit and magnitude make meaningful, MinSpan: a setpoint, a constant)
// lies within the range of those that do, or, where none moves, spans a
// fifth of it with that least span. A setpoint joins its measured value;
// a constant 2.2e-308 does not join 1.8e19, where it would be a line at 0.
func joinable(list []*panel, f *field) *panel {
	for _, pn := range list {
		if pn.unit != f.unit || len(pn.fields) >= maxPerPanel {
			continue
		}
		if fitTogether(append(slices.Clip(pn.fields), f)) {
			return pn
		}
	}
	return nil
}

func fitTogether(fs []*field) bool {
	least := func(m *field) float64 { return MinSpan(m.unit, max(math.Abs(m.lo), math.Abs(m.hi))) }
	moves := func(m *field) bool { return m.hi-m.lo >= least(m) }
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range fs {
		if m.n > 0 && moves(m) {
			lo, hi = min(lo, m.lo), max(hi, m.hi)
		}
	}
	if lo > hi { // none moves: each with its least span
		for _, m := range fs {
			if m.n > 0 {
				lo, hi = min(lo, m.lo), max(hi, m.hi)
			}
		}
		for _, m := range fs {
			if m.n > 0 && least(m)*shareSpan < hi-lo {
				return false
			}
		}
		return true
	}
	for _, m := range fs {
		switch {
		case m.n == 0:
		case moves(m):
			if (m.hi-m.lo)*shareSpan < hi-lo {
				return false
			}
		default:
			if eff := least(m); m.lo < lo-eff || m.hi > hi+eff {
				return false // beyond what the moving fields span
			}
		}
	}
	return true
}

// setRange sets the panel's value range: its fields' ranges, with a margin.
func (pn *panel) setRange() {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range pn.fields {
		if f.n > 0 {
			lo, hi = min(lo, f.lo), max(hi, f.hi)
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	// Never narrower than what the unit and magnitude make meaningful: a
	// settled value's noise is not drawn as a swing.
	if need := MinSpan(pn.unit, max(math.Abs(lo), math.Abs(hi))); hi-lo < need {
		c := (lo + hi) / 2
		lo, hi = c-need/2, c+need/2
	}
	pad := (hi - lo) * 0.05
	pn.Lo, pn.Hi = lo-pad, hi+pad
}

// legendLines counts the legend's lines: a name per field, and a line for
// each field that will be clipped (its values reach past the panel).
func (pn *panel) legendLines() int {
	n := len(pn.fields)
	for _, f := range pn.fields {
		if f.n > 0 && (f.max > pn.Hi || f.min < pn.Lo) {
			n++
		}
	}
	return n
}

func portTitle(p string) string {
	switch p {
	case ModelPort:
		return "the model's own variables"
	case "out0":
		return "port 0 (out): connection status"
	case "in0":
		return "port 0 (in): connection directive"
	}
	if !isPort(p) {
		return "component " + p + " (its connectors)"
	}
	if strings.HasPrefix(p, "out") {
		return "output port " + p[3:] + " (from BeamNG)"
	}
	return "input port " + p[2:] + " (to BeamNG)"
}

// draw writes the SVG document.
func (p *plot) draw(lay layout, title string) string {
	var b strings.Builder
	svgplot.Begin(&b, lay.width, lay.height)
	svgplot.Text(&b, float64(lay.width)/2, 24, "middle", `font-size="16"`, title)
	for i, l := range lay.header {
		svgplot.Text(&b, float64(lay.width)/2, float64(headerLines+18*i), "middle", l.attrs, l.text)
	}
	for _, pn := range lay.panels {
		if pn.strip {
			p.drawStrip(&b, pn)
		} else {
			p.drawPanel(&b, pn, lay.labelWidth)
		}
	}
	last := lay.panels[len(lay.panels)-1]
	svgplot.Text(&b, float64(last.X+last.W/2), float64(last.Y+last.H+36), "middle", `fill="#444"`, "simulation time [s]")
	svgplot.End(&b)
	return b.String()
}

// plain writes a time with millisecond precision.
func plain(t float64) string { return fmt.Sprintf("%.3f", t) }

func (p *plot) drawPanel(b *strings.Builder, pn *panel, labelWidth float64) {
	fmt.Fprintf(b, `<g class="panel" data-port="%s" data-unit="%s" data-lo="%g" data-hi="%g">`+"\n", pn.port, svgplot.Escape(pn.unit), pn.Lo, pn.Hi)
	defer b.WriteString("</g>\n")
	if pn.heading != "" {
		svgplot.Text(b, float64(pn.X), float64(pn.Y-10), "start", `font-weight="bold"`, pn.heading)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", pn.X, pn.Y, pn.W, pn.H)
	pn.ValueAxis(b)
	pn.TimeTicks(b)
	unit := pn.unit
	if unit == "" {
		unit = "(no unit)"
	}
	pn.UnitLabel(b, unit, 16+labelWidth)
	for _, rt := range p.reloads {
		x := pn.PX(rt)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#777" stroke-dasharray="4 3"/>`+"\n", x, pn.Y, x, pn.Y+pn.H)
		svgplot.Text(b, x+3, float64(pn.Y+12), "start", `fill="#777" font-size="10"`, "reload")
	}
	line := 0
	lx := float64(pn.X + pn.W + 14)
	for _, f := range pn.fields {
		f.cut()
		attrs := `data-field="` + svgplot.Escape(f.name.Full) + `"`
		if f.name.Setpoint {
			attrs += ` stroke-dasharray="6 4"` // a setpoint, beside its measured value
		}
		for _, r := range f.trace.runs {
			svgplot.Polyline(b, r.xs, r.ys, f.color, attrs)
		}
		drawClips(b, pn, f)
		y := float64(pn.Y + 12 + legendLine*line)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, y-4, lx+14, y-4, f.color)
		svgplot.Text(b, lx+19, y, "start", `class="legend" fill="`+f.color+`"`, f.name.Full)
		line++
		if c := f.clipText(); c != "" {
			svgplot.Text(b, lx+19, float64(pn.Y+12+legendLine*line), "start", `fill="#b45309" font-size="11"`, "clipped: "+c)
			line++
		}
	}
}

// drawStrip draws a strip of constant fields: each one's value on a line
// of its own, its name in the legend.
func (p *plot) drawStrip(b *strings.Builder, pn *panel) {
	fmt.Fprintf(b, `<g class="strip" data-port="%s" data-unit="%s">`+"\n", pn.port, svgplot.Escape(pn.unit))
	defer b.WriteString("</g>\n")
	if pn.heading != "" {
		svgplot.Text(b, float64(pn.X), float64(pn.Y-10), "start", `font-weight="bold"`, pn.heading)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>`+"\n", pn.X, pn.Y, pn.W, pn.H)
	if pn.ticks {
		pn.TimeTicks(b)
	}
	for _, rt := range p.reloads {
		x := pn.PX(rt)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#777" stroke-dasharray="4 3"/>`+"\n", x, pn.Y, x, pn.Y+pn.H)
	}
	lx := float64(pn.X + pn.W + 14)
	for i, f := range pn.fields {
		y := float64(pn.Y + 15 + legendLine*i)
		value := strconv.FormatFloat(f.min, 'g', -1, 64)
		if pn.unit != "" {
			value += " " + pn.unit
		}
		svgplot.Text(b, float64(pn.X+8), y, "start", `class="constant" data-field="`+svgplot.Escape(f.name.Full)+`" fill="`+f.color+`"`, value+" all along")
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, y-4, lx+14, y-4, f.color)
		svgplot.Text(b, lx+19, y, "start", `class="legend" fill="`+f.color+`"`, f.name.Full)
	}
}

// drawClips marks where a field was clipped: a triangle at the panel's
// edge over each stretch of clipped pixel columns.
func drawClips(b *strings.Builder, pn *panel, f *field) {
	mark := func(at []int, y float64, dir float64) {
		for i, n := 0, 0; i < len(at) && n < 300; n++ {
			j := i
			for j+1 < len(at) && at[j+1]-at[j] <= 3 {
				j++
			}
			x := float64(at[i]+at[j]) / 2
			fmt.Fprintf(b, `<path class="clip" data-field="%s" d="M%.1f %.1fl-4 %.1fh8z" fill="%s"/>`+"\n", svgplot.Escape(f.name.Full), x, y, 7*dir, f.color)
			i = j + 1
		}
	}
	mark(f.aboveAt, float64(pn.Y)+1, 1)
	mark(f.belowAt, float64(pn.Y+pn.H)-1, -1)
}

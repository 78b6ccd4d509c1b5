// Package svgplot draws the parts of a time plot as SVG text: a framed
// panel with a title, a time axis and a value axis with round ticks, and
// traces. The timing analysis and the recording plots share it, so both
// kinds of figure look alike and neither needs a plotting library.
package svgplot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Panel is a framed plot area, in SVG pixels, showing times From..To and
// values Lo..Hi.
type Panel struct {
	X, Y, W, H int
	From, To   float64
	Lo, Hi     float64
}

// Begin starts a document of w × h pixels on a white ground.
func Begin(b *strings.Builder, w, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
}

// End closes the document.
func End(b *strings.Builder) { b.WriteString("</svg>\n") }

// Text writes text at x, y; anchor is start, middle or end; attrs are more
// attributes (fill="#444"), or "".
func Text(b *strings.Builder, x, y float64, anchor, attrs, s string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, attrs, Escape(s))
}

// Frame draws the panel's border and its title above it.
func (p Panel) Frame(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", p.X, p.Y, p.W, p.H)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", p.X+p.W/2, p.Y-6, Escape(title))
}

// PX is the x pixel of time t.
func (p Panel) PX(t float64) float64 {
	span := p.To - p.From
	if span <= 0 {
		span = 1
	}
	return float64(p.X) + (t-p.From)/span*float64(p.W)
}

// PY is the y pixel of value v.
func (p Panel) PY(v float64) float64 {
	span := p.Hi - p.Lo
	if span <= 0 {
		span = 1
	}
	return float64(p.Y+p.H) - (v-p.Lo)/span*float64(p.H)
}

// TimeAxis draws round time ticks under the panel and labels the axis.
func (p Panel) TimeAxis(b *strings.Builder, label string) {
	p.TimeTicks(b)
	Text(b, float64(p.X+p.W/2), float64(p.Y+p.H+34), "middle", `fill="#444"`, label)
}

// TimeTicks draws round time ticks under the panel, labelled, with light
// grid lines across it; panels stacked over one time span get the same
// ticks, so their times line up.
func (p Panel) TimeTicks(b *strings.Builder) {
	ticks, step := Ticks(p.From, p.To, max(2, p.W/110))
	for _, t := range ticks {
		xx := p.PX(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#f0f0f0"/><line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			xx, p.Y, xx, p.Y+p.H, xx, p.Y+p.H, xx, p.Y+p.H+5, xx, p.Y+p.H+17, FormatTick(t, step))
	}
}

// ValueAxis draws round value ticks left of the panel, with light grid
// lines across it.
func (p Panel) ValueAxis(b *strings.Builder) {
	ticks, step := Ticks(p.Lo, p.Hi, max(3, p.H/35))
	for _, v := range ticks {
		yy := p.PY(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n",
			p.X, yy, p.X+p.W, yy, p.X-4, yy+4, FormatTick(v, step))
	}
}

// UnitLabel writes the value axis' unit, turned, margin pixels left of the
// panel (clear of the tick labels).
func (p Panel) UnitLabel(b *strings.Builder, unit string, margin float64) {
	x, y := float64(p.X)-margin, float64(p.Y+p.H/2)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#444" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n", x, y, x, y, Escape(unit))
}

// Ticks are round values from lo to hi, about n of them (at least two
// where the span allows), and their spacing.
func Ticks(lo, hi float64, n int) ([]float64, float64) {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil, 1
	}
	step := nearStep((hi - lo) / float64(max(1, n)))
	for count(lo, hi, step) < min(3, n) && step > (hi-lo)*1e-9 {
		step = smallerStep(step)
	}
	var out []float64
	for k := math.Ceil(lo / step); ; k++ {
		v := k * step
		if v > hi+step/1e6 || len(out) > 1000 {
			break
		}
		if math.Abs(v) < step/1e6 {
			v = 0 // no "-0" tick
		}
		out = append(out, v)
	}
	return out, step
}

// count is how many multiples of step lie from lo to hi.
func count(lo, hi, step float64) int {
	return int(math.Floor(hi/step+1e-6) - math.Ceil(lo/step-1e-6) + 1)
}

// nearStep is the 1, 2 or 5 times a power of ten nearest to raw (by ratio).
func nearStep(raw float64) float64 {
	up := NiceStep(raw)
	if down := smallerStep(up); raw/down < up/raw {
		return down
	}
	return up
}

// smallerStep is the next round step below step: 5 → 2 → 1 → 0.5.
func smallerStep(step float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	switch m := math.Round(step / p); {
	case m >= 5:
		return 2 * p
	case m >= 2:
		return p
	}
	return p / 2
}

// FormatTick writes a tick value with as many digits as the tick spacing
// needs and no more, so neighbouring ticks never read the same:
// 0.5, 20.1055, 12000, 1.5e+12, 2.5e-07.
func FormatTick(v, step float64) string {
	v += 0 // no "-0"
	a := max(math.Abs(v), step)
	if a >= 1e10 || step < 1e-4 && a < 1e-3 {
		// Mantissa digits: enough to tell v from v ± step.
		digits := max(1, int(math.Ceil(math.Log10(a/step)+1e-9))+1)
		return strconv.FormatFloat(v, 'g', digits, 64)
	}
	return strconv.FormatFloat(v, 'f', Decimals(step), 64)
}

// ValueLabels are the value axis' tick labels, for sizing the margin.
func (p Panel) ValueLabels() []string {
	ticks, step := Ticks(p.Lo, p.Hi, max(3, p.H/35))
	out := make([]string, len(ticks))
	for i, v := range ticks {
		out[i] = FormatTick(v, step)
	}
	return out
}

// CharWidth is about how wide a character of the 12 px font is.
const CharWidth = 6.7

// Polyline draws a trace through the points (x pixels, y pixels); attrs
// are more attributes (data-field="x"), or "".
func Polyline(b *strings.Builder, xs, ys []float64, color, attrs string) {
	if len(xs) == 0 {
		return
	}
	if attrs != "" {
		attrs = " " + attrs
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.2"%s points="`, color, attrs)
	for i := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(b, "%.1f,%.1f", xs[i], ys[i])
	}
	b.WriteString(`"/>` + "\n")
}

// NiceStep rounds a tick spacing to 1, 2 or 5 times a power of ten.
func NiceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// Decimals is how many decimals a tick step needs: 0.25 needs 2.
func Decimals(step float64) int {
	if step <= 0 || math.IsNaN(step) || math.IsInf(step, 0) {
		return 0
	}
	d0 := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	// A step of 2.5 or 0.25 has one more significant digit than its power
	// (and a step that is not round gets two more at most).
	d := d0
	for d < d0+2 && math.Abs(step*math.Pow(10, float64(d))-math.Round(step*math.Pow(10, float64(d)))) > 1e-6 {
		d++
	}
	return d
}

// Escape makes s safe as SVG text: markup escaped, and what XML cannot
// hold (invalid UTF-8, control characters) replaced by U+FFFD.
func Escape(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// TextCharWidth is about how wide a character of running text in the 12 px
// font is, wide enough for the wider of the common sans-serif fonts
// (DejaVu Sans, Verdana): what Wrap allows for.
const TextCharWidth = 7.4

// Wrap breaks s into lines of text no wider than width pixels in the 12
// px font (TextCharWidth a character): between its parts (the phrases a
// " · " separates) where a part fits whole, else at spaces; a word longer
// than a line is a line of its own.
func Wrap(s string, width float64) []string {
	most := max(1, int(width/TextCharWidth))
	var lines []string
	line := ""
	add := func(glue, piece string) {
		switch {
		case line == "":
			line = piece // a line begins with the piece, not its glue
		case len([]rune(line))+len([]rune(glue))+len([]rune(piece)) <= most:
			line += glue + piece
		default:
			lines = append(lines, line)
			line = piece
		}
	}
	for i, part := range strings.Split(s, " · ") {
		glue := " · "
		if i == 0 {
			glue = " "
		}
		if len([]rune(part)) <= most {
			add(glue, part)
			continue
		}
		for j, w := range strings.Fields(part) {
			if j > 0 {
				glue = " "
			}
			add(glue, w)
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

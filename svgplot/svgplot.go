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
	step := NiceStep((p.To - p.From) / 6)
	for t := math.Ceil(p.From/step) * step; t <= p.To+step/1e6; t += step {
		if math.Abs(t) < step/1e6 {
			t = 0 // no "-0.0" tick
		}
		xx := p.PX(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			xx, p.Y+p.H, xx, p.Y+p.H+5, xx, p.Y+p.H+18, strconv.FormatFloat(t+0, 'f', Decimals(step), 64))
	}
	Text(b, float64(p.X+p.W/2), float64(p.Y+p.H+34), "middle", `fill="#444"`, label)
}

// ValueAxis draws round value ticks left of the panel, with light grid
// lines across it.
func (p Panel) ValueAxis(b *strings.Builder) {
	step := NiceStep((p.Hi - p.Lo) / 4)
	for v := math.Ceil(p.Lo/step) * step; v <= p.Hi+step/1e6; v += step {
		if math.Abs(v) < step/1e6 {
			v = 0
		}
		yy := p.PY(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n",
			p.X, yy, p.X+p.W, yy, p.X-4, yy+4, strconv.FormatFloat(v+0, 'g', 6, 64))
	}
}

// Polyline draws a trace through the points (x pixels, y pixels).
func Polyline(b *strings.Builder, xs, ys []float64, color string) {
	if len(xs) == 0 {
		return
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.2" points="`, color)
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

// Decimals is how many decimals a tick step needs.
func Decimals(step float64) int {
	return max(0, int(-math.Floor(math.Log10(step))))
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

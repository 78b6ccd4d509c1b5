package timing

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"beamconnect/internal/svgplot"
)

// Window is a span of time to draw.
type Window struct{ From, To float64 }

// zoomSends is how many sends a zoom spans.
const zoomSends = 4

// Windows chooses the three views: the whole run, a zoom on the start-up
// (the first sends after the first stall, or the first sends at all), and
// a zoom on the running connection (sends in the middle of the run). Zooms
// span a few sends by count, with margins of a part of their spacing, so
// neither BeamNG's idle time between frames nor its bursts of steps within
// one can leave them empty or crowded.
func Windows(l *Logs, r Report, dt float64) (all, startup, running Window) {
	first, last := l.Steps[0], l.Steps[len(l.Steps)-1]
	all = Window{first, last + dt}
	around := func(from float64) Window {
		k, _ := slices.BinarySearchFunc(l.Sends, from, cmpEvent)
		if k >= len(l.Sends) {
			return Window{from - dt, from + 20*dt}
		}
		end := min(k+zoomSends-1, len(l.Sends)-1)
		// The reply to the last send, if it came, belongs in the view.
		to := l.Sends[end].T
		if j, _ := slices.BinarySearchFunc(l.Receives, to, cmpEvent); j < len(l.Receives) {
			to = min(l.Receives[j].T, to+0.1)
		}
		start := l.Sends[k].T
		margin := max((to-start)*0.08, 2e-6)
		return Window{start - margin, to + margin}
	}
	at := r.FirstStall
	if at < 0 {
		at = first
	}
	startup = around(at)
	mid := first
	if len(l.Sends) > 0 {
		mid = l.Sends[len(l.Sends)/2].T
	}
	running = around(mid)
	return all, startup, running
}

func cmpEvent(e Event, t float64) int {
	switch {
	case e.T < t:
		return -1
	case e.T > t:
		return 1
	}
	return 0
}

// markLimit is how many events the overview draws one by one; a longer run
// is drawn as reply times and step gaps over time instead.
const markLimit = 600

// SVG draws the logs: the verdict, an overview of the whole run, a zoom on
// the start-up and one on the running connection.
func SVG(w io.Writer, l *Logs, r Report, dt float64, title string) error {
	all, startup, running := Windows(l, r, dt)
	var b strings.Builder
	const W = 1200
	lines := wrap(r.Verdict(), 150)
	H := 900 + 17*(len(lines)-1)
	svgplot.Begin(&b, W, H)
	svgplot.Text(&b, W/2, 24, "middle", `font-size="16"`, title)
	color := "#15803d"
	switch {
	case !r.Healthy:
		color = "#b91c1c"
	case len(r.Notes) > 0:
		color = "#b45309"
	}
	for i, line := range lines {
		class := ""
		if i == 0 {
			class = `class="verdict" `
		}
		svgplot.Text(&b, W/2, float64(46+17*i), "middle", class+`font-weight="bold" fill="`+color+`"`, line)
	}
	top := 17 * (len(lines) - 1) // the verdict's extra lines push the rest down
	svgplot.Text(&b, W/2, float64(64+top), "middle", `fill="#444"`,
		fmt.Sprintf("%d steps, %d sends (%d skips between), replies: %d next step, %d later step, %d blocking; %d stalls; %.3f× real time",
			r.Steps, r.Sends, r.SkipsBetweenSends, r.RepliesSameStep, r.RepliesLaterStep, r.RepliesBlocking, r.Stalls, r.RealtimeFactor))
	if len(l.Sends)+len(l.Receives) <= markLimit {
		panel(&b, l, all, 70, 96+top, W-110, 290, "Overview: physics steps, sends and receives", true)
	} else {
		overview(&b, l, r.stalls, all, 70, 96+top, W-110, dt)
	}
	startTitle := "Zoom on start-up"
	if r.Stalls > 0 {
		startTitle = "Zoom on start-up: after the first 2 s blocking receive"
	}
	panel(&b, l, startup, 70, 500+top, (W-220)/2, 330, startTitle, true)
	panel(&b, l, running, 150+(W-220)/2, 500+top, (W-220)/2, 330, "Zoom on the running connection", true)
	// Legend.
	lx, ly := 60, H-22
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#2a2" stroke-width="2"/><text x="%d" y="%d">physics step</text>`+"\n", lx, ly-8, lx, ly+8, lx+8, ly+4)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="#d22"/><text x="%d" y="%d">sent by BeamNG (id)</text>`+"\n", lx+120, ly, lx+130, ly+4)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="#22d"/><text x="%d" y="%d">received by BeamNG (reply id)</text>`+"\n", lx+290, ly, lx+300, ly+4)
	svgplot.End(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// panel draws the events of a window one by one: sends, steps and
// receives on three rows, ids as labels where they fit.
func panel(b *strings.Builder, l *Logs, win Window, x, y, w, h int, title string, labels bool) {
	p := svgplot.Panel{X: x, Y: y, W: w, H: h, From: win.From, To: win.To}
	fmt.Fprintf(b, `<g class="events" data-from="%g" data-to="%g">`, win.From, win.To)
	p.Frame(b, title)
	px := p.PX
	rowSend, rowStep, rowRecv := float64(y)+float64(h)*0.25, float64(y)+float64(h)*0.5, float64(y)+float64(h)*0.75
	for _, row := range []struct {
		y    float64
		name string
	}{{rowSend, "sent"}, {rowStep, "steps"}, {rowRecv, "received"}} {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#666">%s</text>`+"\n",
			x, row.y, x+w, row.y, x-4, row.y+4, row.name)
	}
	p.TimeAxis(b, "time [s]")

	steps := visible(l.Steps, win)
	// Too many ticks to tell apart: draw every n-th, to keep the file small.
	every := max(1, len(steps)/2000)
	for i := 0; i < len(steps); i += every {
		xx := px(steps[i])
		fmt.Fprintf(b, `<line class="step" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#2a2"/>`, xx, rowStep-10, xx, rowStep+10)
	}
	b.WriteString("\n")
	marks := func(evs []Event, row float64, color, class string, dy int) {
		vis := visibleEvents(evs, win)
		every := max(1, len(vis)/1500)
		right := math.Inf(-1) // where the last label drawn ends
		for i := 0; i < len(vis); i += every {
			e := vis[i]
			xx := px(e.T)
			fmt.Fprintf(b, `<circle class="%s" cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, class, xx, row, color)
			text := strconv.FormatFloat(e.ID, 'f', -1, 64)
			half := float64(len(text)) * 6.2 / 2
			if labels && xx-half >= right+3 {
				fmt.Fprintf(b, `<text class="id" x="%.1f" y="%.1f" text-anchor="middle" fill="%s" font-size="11">%s</text>`,
					xx, row+float64(dy), color, text)
				right = xx + half
			}
		}
		b.WriteString("\n")
	}
	marks(l.Sends, rowSend, "#d22", "send", -9)
	marks(l.Receives, rowRecv, "#22d", "receive", 18)
	b.WriteString("</g>\n")
}

// overview draws a long run over time: how long BeamNG's physics waited
// for each reply in its blocking receive (a 2 s stall stands out; a
// healthy coupling waits microseconds), on a logarithmic scale in ms, the
// range and median per pixel column; and the real-time factor, simulated
// time over wall time in quarter seconds. stalls are the steps that began
// after a stall (Report.stalls).
func overview(b *strings.Builder, l *Logs, stalls []int, win Window, x, y, w int, dt float64) {
	const h = 140
	ts, ms := blockingWaits(l)
	p := svgplot.Panel{X: x, Y: y, W: w, H: h, From: win.From, To: win.To}
	strip(b, p, ts, ms, "Overview: BeamNG waiting for each reply in its blocking receive [ms, log scale]")
	for _, i := range stalls {
		xx := p.PX(l.Steps[i])
		fmt.Fprintf(b, `<line class="stall" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#b91c1c" stroke-dasharray="3 2"/>`+"\n", xx, p.Y, xx, p.Y+h)
	}
	p.Y += h + 58
	realtime(b, p, l, dt)
}

// blockingWaits are, for each reply BeamNG took in a blocking receive, when
// it came and how long the step had waited for it, in ms.
func blockingWaits(l *Logs) (ts, ms []float64) {
	sendSteps := map[int]bool{}
	stepOf := func(t float64) int {
		i, _ := slices.BinarySearch(l.Steps, t)
		if i < len(l.Steps) && l.Steps[i] == t {
			return i
		}
		return i - 1
	}
	for _, s := range l.Sends {
		sendSteps[stepOf(s.T)] = true
	}
	for _, rc := range l.Receives {
		if st := stepOf(rc.T); st >= 0 && sendSteps[st] {
			ts = append(ts, rc.T)
			ms = append(ms, (rc.T-l.Steps[st])*1000)
		}
	}
	return ts, ms
}

// logLo and logHi bound the strip's logarithmic scale, in ms.
const logLo, logHi = 1e-3, 1e4

// strip draws values over time on a log scale: the range per pixel column
// pale, its median dark.
func strip(b *strings.Builder, p svgplot.Panel, ts, vs []float64, title string) {
	p.Lo, p.Hi = math.Log10(logLo), math.Log10(logHi)
	b.WriteString(`<g class="waits">`)
	p.Frame(b, title)
	for e := -2; e <= 3; e++ {
		yy := p.PY(float64(e))
		label := strconv.FormatFloat(math.Pow(10, float64(e)), 'g', -1, 64)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n",
			p.X, yy, p.X+p.W, yy, p.X-4, yy+4, label)
	}
	p.TimeAxis(b, "time [s]")
	cols := map[int][]float64{}
	var order []int
	for i, t := range ts {
		if t < p.From || t > p.To {
			continue
		}
		px := int(p.PX(t))
		if cols[px] == nil {
			order = append(order, px)
		}
		cols[px] = append(cols[px], math.Log10(min(max(vs[i], logLo), logHi)))
	}
	var xs, ys []float64
	for _, px := range order {
		c := cols[px]
		slices.Sort(c)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#a5b4fc"/>`, px, p.PY(c[0])+0.5, px, p.PY(c[len(c)-1])-0.5)
		xs, ys = append(xs, float64(px)), append(ys, p.PY(c[len(c)/2]))
	}
	b.WriteString("\n")
	svgplot.Polyline(b, xs, ys, "#1e3a8a", `class="median"`)
	b.WriteString("</g>\n")
}

// realtime draws the real-time factor over time: physics steps × dt over
// the wall time they took, in windows of a quarter second (or a pixel
// column, when that is longer), so frames' bursts of steps even out.
func realtime(b *strings.Builder, p svgplot.Panel, l *Logs, dt float64) {
	win := max(0.25, (p.To-p.From)/float64(p.W))
	n := max(1, int((p.To-p.From)/win)) // the last window takes the rest
	counts := make([]int, n)
	for _, t := range l.Steps {
		if k := min(n-1, int((t-p.From)/win)); k >= 0 {
			counts[k]++
		}
	}
	end := func(k int) float64 {
		if k == n-1 {
			return p.To
		}
		return p.From + float64(k+1)*win
	}
	// A window's factor: its steps' simulated time over its wall time.
	factor := func(k int) float64 {
		return float64(counts[k]) * dt / (end(k) - (p.From + float64(k)*win))
	}
	hi := 1.2
	for k := range counts {
		hi = max(hi, factor(k)*1.05)
	}
	p.Lo, p.Hi = 0, hi
	b.WriteString(`<g class="realtime">`)
	p.Frame(b, "Overview: real-time factor (simulated time / wall time, per quarter second)")
	p.ValueAxis(b)
	p.TimeAxis(b, "time [s]")
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999" stroke-dasharray="5 3"/>`+"\n", p.X, p.PY(1), p.X+p.W, p.PY(1))
	var xs, ys []float64
	for k := range counts {
		f := factor(k)
		x0, x1 := p.PX(p.From+float64(k)*win), p.PX(end(k))
		xs, ys = append(xs, x0, x1), append(ys, p.PY(f), p.PY(f))
	}
	svgplot.Polyline(b, xs, ys, "#2a2", `class="factor"`)
	b.WriteString("</g>\n")
}

func visible(ts []float64, w Window) []float64 {
	i, _ := slices.BinarySearch(ts, w.From)
	j, _ := slices.BinarySearch(ts, w.To)
	return ts[i:j]
}

func visibleEvents(evs []Event, w Window) []Event {
	i, _ := slices.BinarySearchFunc(evs, w.From, cmpEvent)
	j, _ := slices.BinarySearchFunc(evs, w.To, cmpEvent)
	if j < len(evs) && evs[j].T == w.To {
		j++
	}
	return evs[i:j]
}

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

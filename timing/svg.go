package timing

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"beamconnect/svgplot"
)

// Window is a span of time to draw.
type Window struct{ From, To float64 }

// Windows chooses seed 001's three views: the whole run, a zoom on the
// start-up (the first sends after the first stall, or the first sends at
// all), and a zoom on the running connection (three sends in the middle of
// the run). Zooms span sends by count, not a fixed time, so that BeamNG's
// idle time between frames cannot leave them empty.
func Windows(l *Logs, r Report, dt float64) (all, startup, running Window) {
	first, last := l.Steps[0], l.Steps[len(l.Steps)-1]
	all = Window{first, last + dt}
	around := func(from float64) Window {
		k, _ := slices.BinarySearchFunc(l.Sends, from, func(e Event, t float64) int {
			switch {
			case e.T < t:
				return -1
			case e.T > t:
				return 1
			}
			return 0
		})
		if k >= len(l.Sends) {
			return Window{from - dt, from + 20*dt}
		}
		end := l.Sends[min(k+2, len(l.Sends)-1)].T
		return Window{l.Sends[k].T - 2*dt, end + 4*dt}
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

// SVG draws the logs as seed 001 plots them, in three panels.
func SVG(w io.Writer, l *Logs, r Report, dt float64, title string) error {
	all, startup, running := Windows(l, r, dt)
	var b strings.Builder
	const W, H = 1200, 860
	svgplot.Begin(&b, W, H)
	svgplot.Text(&b, W/2, 24, "middle", `font-size="16"`, title)
	svgplot.Text(&b, W/2, 44, "middle", `fill="#444"`,
		fmt.Sprintf("%d steps, %d sends (%d skips between), replies: %d next step, %d later step, %d blocking; %d stalls; %.3f× real time",
			r.Steps, r.Sends, r.SkipsBetweenSends, r.RepliesSameStep, r.RepliesLaterStep, r.RepliesBlocking, r.Stalls, r.RealtimeFactor))
	panel(&b, l, all, 60, 70, W-100, 300, "Overview: physics steps, sends and receives", false)
	startTitle := "Zoom on start-up"
	if r.Stalls > 0 {
		startTitle = "Zoom on start-up: after the first 2 s blocking receive"
	}
	panel(&b, l, startup, 70, 450, (W-220)/2, 330, startTitle, true)
	panel(&b, l, running, 150+(W-220)/2, 450, (W-220)/2, 330, "Zoom on the running connection", true)
	// Legend.
	lx, ly := 60, H-30
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#2a2" stroke-width="2"/><text x="%d" y="%d">physics step</text>`+"\n", lx, ly-8, lx, ly+8, lx+8, ly+4)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="#d22"/><text x="%d" y="%d">sent by BeamNG (id)</text>`+"\n", lx+120, ly, lx+130, ly+4)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="#22d"/><text x="%d" y="%d">received by BeamNG (reply id)</text>`+"\n", lx+290, ly, lx+300, ly+4)
	svgplot.End(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func panel(b *strings.Builder, l *Logs, win Window, x, y, w, h int, title string, labels bool) {
	p := svgplot.Panel{X: x, Y: y, W: w, H: h, From: win.From, To: win.To}
	b.WriteString("<g>")
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
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#2a2"/>`, xx, rowStep-10, xx, rowStep+10)
	}
	b.WriteString("\n")
	marks := func(evs []Event, row float64, color string, dy int) {
		vis := visibleEvents(evs, win)
		every := max(1, len(vis)/1500)
		for i := 0; i < len(vis); i += every {
			e := vis[i]
			xx := px(e.T)
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, xx, row, color)
			if labels && len(vis) <= 40 {
				fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s" font-size="11">%s</text>`,
					xx, row+float64(dy), color, strconv.FormatFloat(e.ID, 'f', -1, 64))
			}
		}
		b.WriteString("\n")
	}
	marks(l.Sends, rowSend, "#d22", -9)
	marks(l.Receives, rowRecv, "#22d", 18)
	b.WriteString("</g>\n")
}

func visible(ts []float64, w Window) []float64 {
	i, _ := slices.BinarySearch(ts, w.From)
	j, _ := slices.BinarySearch(ts, w.To)
	return ts[i:j]
}

func visibleEvents(evs []Event, w Window) []Event {
	var out []Event
	for _, e := range evs {
		if e.T >= w.From && e.T <= w.To {
			out = append(out, e)
		}
	}
	return out
}

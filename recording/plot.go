package recording

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"

	"beamconnect/svgplot"
)

// PlotOptions choose what Plot draws.
type PlotOptions struct {
	// Fields are the columns to draw, by full name (out1.groundspeed) or by
	// the part after the port (groundspeed); none draws them all.
	Fields   []string
	From, To float64 // the time window (To may be +Inf); To ≤ From draws the whole run
	Title    string
}

// Plot draws a recording as SVG: one panel per port (port 0's status and
// directive last), time on x, a trace per field, a dashed line where a
// reload started a new header. A trace breaks where its column is absent
// (a reload removed it) or time went back (BeamNG reloaded). Each trace is
// reduced to its minimum and maximum per pixel column, so spikes survive
// and a long recording makes a small file. open is called twice: the file
// is streamed once for ranges and once for the traces.
func Plot(w io.Writer, file string, open func() (io.ReadCloser, error), o PlotOptions) error {
	// Pass 1: columns, ports, time and value ranges, reloads.
	var cols []*trace
	byName := map[string]*trace{}
	var reloads []float64
	headers := 0
	t0, t1 := math.Inf(1), math.Inf(-1)
	window := o.To > o.From
	var idx []*trace // this header's column → trace (nil: not drawn)
	pending := false // a reload header waits for its first row's time
	matched := map[string]bool{}
	err := scanFile(file, open, func(h *Header) error {
		headers++
		pending = headers > 1
		idx = idx[:0]
		for _, name := range h.Columns {
			port, ok := portOf(name)
			if !ok || !wanted(name, o.Fields, matched) {
				idx = append(idx, nil)
				continue
			}
			tr := byName[name]
			if tr == nil {
				tr = &trace{name: name, port: port, lo: math.Inf(1), hi: math.Inf(-1)}
				byName[name] = tr
				cols = append(cols, tr)
			}
			idx = append(idx, tr)
		}
		return nil
	}, func(h *Header, r *Row) error {
		t := r.Time()
		if window && (t < o.From || t > o.To) {
			return nil
		}
		if pending {
			reloads = append(reloads, t)
			pending = false
		}
		t0, t1 = min(t0, t), max(t1, t)
		for i, tr := range idx {
			if v := r.Values[i]; tr != nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				tr.lo, tr.hi = min(tr.lo, v), max(tr.hi, v)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range o.Fields {
		if !matched[f] {
			return fmt.Errorf("%s: --fields %q: no such column (columns: %s)", file, f, strings.Join(allColumns(file, open), ", "))
		}
	}
	if len(cols) == 0 || t0 > t1 {
		what := "no rows"
		if window {
			what = fmt.Sprintf("no rows between %g s and %g s (the run spans %s)", o.From, o.To, span(file, open))
		}
		return fmt.Errorf("%s: nothing to plot: %s", file, what)
	}
	if window {
		// The window asked for; an open end (+Inf) ends with the data.
		t0 = o.From
		if !math.IsInf(o.To, 1) {
			t1 = o.To
		}
	}
	if t1 == t0 {
		t1 = t0 + 1
	}

	// Panels, one per port, in the order the columns came, port 0 last.
	var ports []string
	for _, tr := range cols {
		if !slices.Contains(ports, tr.port) {
			ports = append(ports, tr.port)
		}
	}
	zero := func(p string) int {
		if p == "out0" || p == "in0" {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(ports, func(a, b string) int { return zero(a) - zero(b) })
	const W, left, plotW, ph, gap, top = 1200, 70, 880, 170, 70, 70
	panels := map[string]*svgplot.Panel{}
	for i, p := range ports {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, tr := range cols {
			if tr.port == p && tr.lo <= tr.hi {
				lo, hi = min(lo, tr.lo), max(hi, tr.hi)
			}
		}
		if lo > hi {
			lo, hi = 0, 1
		}
		if pad := (hi - lo) * 0.05; pad > 0 {
			lo, hi = lo-pad, hi+pad
		} else {
			lo, hi = lo-1, hi+1
		}
		panels[p] = &svgplot.Panel{X: left, Y: top + i*(ph+gap), W: plotW, H: ph, From: t0, To: t1, Lo: lo, Hi: hi}
	}
	for _, tr := range cols {
		tr.panel = panels[tr.port]
	}

	// Pass 2: the traces, min and max per pixel column.
	err = scanFile(file, open, func(h *Header) error {
		idx = idx[:0]
		for _, name := range h.Columns {
			idx = append(idx, byName[name])
		}
		for _, tr := range cols {
			if !slices.Contains(idx, tr) {
				tr.cut() // a column the reload removed: its trace breaks
			}
		}
		return nil
	}, func(h *Header, r *Row) error {
		t := r.Time()
		if t < t0 || t > t1 {
			return nil
		}
		for i, tr := range idx {
			if tr != nil {
				tr.add(t, r.Values[i])
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	var b strings.Builder
	H := top + len(ports)*(ph+gap)
	svgplot.Begin(&b, W, H)
	title := o.Title
	if title == "" {
		title = file
	}
	svgplot.Text(&b, W/2, 24, "middle", `font-size="16"`, title)
	sub := fmt.Sprintf("%.3f s to %.3f s", t0, t1)
	if len(reloads) > 0 {
		sub += fmt.Sprintf(", %d reloads that changed the ports (dashed)", len(reloads))
	}
	svgplot.Text(&b, W/2, 44, "middle", `fill="#444"`, sub)
	for _, p := range ports {
		pn := panels[p]
		pn.Frame(&b, portTitle(p))
		pn.ValueAxis(&b)
		pn.TimeAxis(&b, "time [s]")
		for _, rt := range reloads {
			x := pn.PX(rt)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#777" stroke-dasharray="4 3"/>`+"\n", x, pn.Y, x, pn.Y+pn.H)
			svgplot.Text(&b, x+3, float64(pn.Y+12), "start", `fill="#777" font-size="10"`, "reload")
		}
		k := 0
		for _, tr := range cols {
			if tr.port != p {
				continue
			}
			color := palette[k%len(palette)]
			tr.cut()
			for _, run := range tr.runs {
				svgplot.Polyline(&b, run.xs, run.ys, color)
			}
			svgplot.Text(&b, float64(pn.X+pn.W+12), float64(pn.Y+14+16*k), "start", `fill="`+color+`"`, tr.name)
			k++
		}
	}
	svgplot.End(&b)
	_, err = io.WriteString(w, b.String())
	return err
}

var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d"}

// trace is one column's drawing.
type trace struct {
	name, port string
	lo, hi     float64
	panel      *svgplot.Panel
	runs       []run
	cur        *run
	// the pixel column being gathered
	px                      int
	have                    bool
	first, last, vmin, vmax float64
	minFirst                bool
	lastT                   float64
}

type run struct{ xs, ys []float64 }

// add takes one value at time t.
func (tr *trace) add(t, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		tr.cut() // a gap, as in the live scope
		return
	}
	if tr.have && t < tr.lastT-0.5 {
		tr.cut() // time went back: BeamNG reloaded (vehicles' rows may interleave a little out of order)
	}
	tr.lastT = t
	px := int(tr.panel.PX(t))
	if tr.have && px == tr.px {
		if v < tr.vmin {
			tr.vmin, tr.minFirst = v, false
		}
		if v > tr.vmax {
			tr.vmax, tr.minFirst = v, true
		}
		tr.last = v
		return
	}
	tr.flush()
	tr.px, tr.have = px, true
	tr.first, tr.last, tr.vmin, tr.vmax, tr.minFirst = v, v, v, v, true
}

// flush draws the pixel column gathered: first, the extremes in the order
// they came, last.
func (tr *trace) flush() {
	if !tr.have {
		return
	}
	if tr.cur == nil {
		tr.runs = append(tr.runs, run{})
		tr.cur = &tr.runs[len(tr.runs)-1]
	}
	x := float64(tr.px)
	pts := []float64{tr.first, tr.vmax, tr.vmin, tr.last}
	if tr.minFirst {
		pts[1], pts[2] = tr.vmin, tr.vmax
	}
	for i, v := range pts {
		if i > 0 && v == pts[i-1] {
			continue
		}
		tr.cur.xs = append(tr.cur.xs, x)
		tr.cur.ys = append(tr.cur.ys, tr.panel.PY(v))
	}
	tr.have = false
}

// cut ends the current run.
func (tr *trace) cut() {
	tr.flush()
	tr.cur = nil
}

var portRE = regexp.MustCompile(`^(out|in)(\d+)\.`)

// portOf is the port a column belongs to; false for the bookkeeping
// columns (time, vehicle, id, reply_id, reloads).
func portOf(name string) (string, bool) {
	switch name {
	case "status":
		return "out0", true
	case "directive":
		return "in0", true
	}
	m := portRE.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1] + m[2], true
}

func portTitle(p string) string {
	switch p {
	case "out0":
		return "port 0 (out): status"
	case "in0":
		return "port 0 (in): directive"
	}
	if strings.HasPrefix(p, "out") {
		return "output port " + p[3:] + " (from BeamNG)"
	}
	return "input port " + p[2:] + " (to BeamNG)"
}

// wanted reports whether column name is asked for, noting which fields
// matched.
func wanted(name string, fields []string, matched map[string]bool) bool {
	if len(fields) == 0 {
		return true
	}
	ok := false
	for _, f := range fields {
		if name == f || strings.HasSuffix(name, "."+f) {
			matched[f], ok = true, true
		}
	}
	return ok
}

func scanFile(file string, open func() (io.ReadCloser, error), onHeader func(*Header) error, onRow func(*Header, *Row) error) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return Scan(rc, file, onHeader, onRow)
}

// allColumns lists the plottable columns, for an error message.
func allColumns(file string, open func() (io.ReadCloser, error)) []string {
	var names []string
	scanFile(file, open, func(h *Header) error {
		for _, c := range h.Columns {
			if _, ok := portOf(c); ok && !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
		return nil
	}, func(*Header, *Row) error { return nil })
	return names
}

// span says the time the recording covers, for an error message.
func span(file string, open func() (io.ReadCloser, error)) string {
	t0, t1 := math.Inf(1), math.Inf(-1)
	scanFile(file, open, func(*Header) error { return nil }, func(_ *Header, r *Row) error {
		t0, t1 = min(t0, r.Time()), max(t1, r.Time())
		return nil
	})
	if t0 > t1 {
		return "no rows"
	}
	return fmt.Sprintf("%g s to %g s", t0, t1)
}

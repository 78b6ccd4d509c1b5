package recording

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"beamconnect/internal/suggest"
	"beamconnect/quality"
)

// PlotOptions choose what Plot draws.
type PlotOptions struct {
	// Fields are the columns to draw: a full name (out1.groundspeed) or a
	// part of one (groundspeed, ego.groundspeed, out1, ego; see
	// Name.Matches); none draws them all, up to MaxFields.
	Fields   []string
	From, To float64 // the time window (To may be +Inf); To ≤ From draws the whole run
	Title    string
	// MaxFields bounds the fields drawn when Fields is empty (0: 240), so a
	// recording of thousands of ports still gives a drawing a viewer opens.
	MaxFields int
	// NoClip draws every value: no outlier is clipped.
	NoClip bool
	// Events are the recording's (an MDF 4 file's): the run's faults and
	// lost rows they tell of keep a loop that held from being called good.
	Events []Event
}

// PlotResult says what a plot shows.
type PlotResult struct {
	Fields  int      // fields drawn
	Panels  int      // panels they were drawn in
	Strips  int      // strips of fields constant all along (a healthy run's status and directive)
	Omitted int      // fields left out past MaxFields
	Clipped []string // "out2.ego.timeToCollision:lead: 41 values above 4541" for each field clipped
	// Control is the verdict on each loop the recording has a setpoint
	// for (beamng.quality), judged from its rows.
	Control []quality.Report
	// Reloads says what each reload changed, in time order.
	Reloads []string
	// Faults are what the recording tells of the run's faults (its
	// events; a status of error in its rows), a line each.
	Faults []string
}

const defaultMaxFields = 240

// Plot draws a recording as SVG. Each port is a group of panels, one per
// unit, and within a unit one per range of values: fields whose values
// span very different ranges (rpm beside gear, a serial number beside
// time, a time to collision of 1e5 s beside a 1.8 s time gap) get panels of
// their own, each with its own value axis and unit, so every trace uses
// the height it is drawn in. All panels share one time axis, aligned.
//
// The value range is robust: a field's few outliers (under 5 % of its
// values, beyond its central 90 % by more than that band's width) are
// clipped at the panel's edge and marked there, with the count in the
// legend, rather than squashing the rest into a line.
//
// A dashed line marks a reload that started a new header; a trace breaks
// where its column is absent (a reload removed it) or time went back
// (BeamNG reloaded). Each trace keeps its minimum and maximum per pixel
// column, so spikes survive and a long recording makes a small file.
// src is read twice: once for the ranges and once for the traces.
func Plot(w io.Writer, file string, src Source, o PlotOptions) (PlotResult, error) {
	if o.MaxFields <= 0 {
		o.MaxFields = defaultMaxFields
	}
	p, err := measure(file, src, o)
	if err != nil {
		return PlotResult{}, err
	}
	lay := p.layout()
	if err := p.trace(src); err != nil {
		return PlotResult{}, err
	}
	title := o.Title
	if title == "" {
		title = file
	}
	res := PlotResult{Fields: len(p.fields), Omitted: p.omitted, Control: p.control(), Reloads: p.reloadText(), Faults: p.faults}
	for _, pn := range lay.panels {
		if pn.strip {
			res.Strips++
		} else {
			res.Panels++
		}
	}
	for _, f := range p.fields {
		if c := f.clipText(); c != "" {
			res.Clipped = append(res.Clipped, f.name.Full+": "+c)
		}
	}
	_, err = io.WriteString(w, p.draw(lay, title))
	return res, err
}

// plot is one drawing's state across the two passes.
type plot struct {
	fields  []*field
	byName  map[string]*field
	omitted int // fields left out past MaxFields (the most of any header)
	reloads []float64
	t0, t1  float64
	window  bool
	from    float64
	to      float64
	idx     []*field // the current header's column → field (nil: not drawn)
	noClip  bool
	loops   loops // the control loops' verdicts, from the first pass
	// what each reload changed in the columns (first pass)
	reloadWhat []string
	columns    []string // the last header's columns
	// faults: what the run's events and rows say went wrong (first pass)
	faults []string
}

// measure is the first pass: which fields, their ranges, the time span and
// the reloads.
func measure(file string, src Source, o PlotOptions) (*plot, error) {
	p := &plot{byName: map[string]*field{}, t0: math.Inf(1), t1: math.Inf(-1),
		window: o.To > o.From, from: o.From, to: o.To, noClip: o.NoClip}
	matched := make([]bool, len(o.Fields))
	for _, e := range o.Events {
		switch e.Kind {
		case Faults, Lost, FaultBegin, Diagnosis:
			p.faults = append(p.faults, e.Name+" at "+plain(e.Time)+" s: "+e.Text)
		}
	}
	// A reload is where the reloads column counts one more; one that
	// changed the columns started a new header there.
	headers := 0
	changed := ""                               // the latest header's change, for the reload at its first row
	reloadsCol, statusCol := -1, -1             // the current header's
	lastReloads, errorSeen := math.NaN(), false // across headers
	err := src(func(h *Header) error {
		headers++
		if headers > 1 {
			changed = columnChanges(p.columns, h.Columns)
		}
		p.columns = h.Columns
		reloadsCol, statusCol = slices.Index(h.Columns, "reloads"), slices.Index(h.Columns, "status")
		p.loops.header(h)
		p.idx = p.idx[:0]
		left := 0 // fields of this header left out past MaxFields
		for i, col := range h.Columns {
			n, ok := ParseName(col, h.Vehicle >= 0)
			f, omitted := p.pick(n, ok, o, matched)
			if omitted {
				left++
			}
			if f != nil && i < len(h.Units) && h.Units[i] != "" {
				f.unit = h.Units[i] // a model's variable's, as the header says it
			}
			p.idx = append(p.idx, f)
		}
		p.omitted = max(p.omitted, left)
		return nil
	}, func(h *Header, r *Row) error {
		t := r.Time()
		if statusCol >= 0 && r.Values[statusCol] == 4 && !errorSeen {
			errorSeen = true
			p.faults = append(p.faults, "status error (4) at "+plain(t)+" s: a model fault, or a socket that failed")
		}
		if reloadsCol >= 0 {
			n := r.Values[reloadsCol]
			reload := n > lastReloads
			lastReloads = n
			if reload && (!p.window || t >= o.From && t <= o.To) {
				what := changed
				if what == "" {
					what = columnChanges(nil, nil) // the columns unchanged
				}
				p.reloads = append(p.reloads, t)
				p.reloadWhat = append(p.reloadWhat, what)
			}
			if reload {
				changed = ""
			}
		}
		if p.window && (t < o.From || t > o.To) {
			return nil
		}
		p.loops.row(r)
		p.t0, p.t1 = min(p.t0, t), max(p.t1, t)
		for i, f := range p.idx {
			if f != nil {
				f.observe(r.Values[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, spec := range o.Fields {
		if !matched[i] {
			return nil, noSuchField(file, spec, allNames(src))
		}
	}
	if len(p.fields) == 0 || p.t0 > p.t1 {
		what := "no rows"
		if p.window {
			what = fmt.Sprintf("no rows between %g s and %g s (the run spans %s)", o.From, o.To, span(src))
		}
		return nil, fmt.Errorf("%s: nothing to plot: %s", file, what)
	}
	if p.window {
		// The window asked for; an open end (+Inf) ends with the data.
		p.t0 = o.From
		if !math.IsInf(o.To, 1) {
			p.t1 = o.To
		}
	}
	if p.t1 == p.t0 {
		p.t1 = p.t0 + 1
	}
	return p, nil
}

// pick is the field a header's column is drawn as, or nil; omitted when
// it is left out for MaxFields.
func (p *plot) pick(n Name, ok bool, o PlotOptions, matched []bool) (f *field, omitted bool) {
	if !ok {
		return nil, false
	}
	want := len(o.Fields) == 0
	for i, spec := range o.Fields {
		if n.Matches(spec) {
			matched[i], want = true, true
		}
	}
	if !want {
		return nil, false
	}
	if f := p.byName[n.Full]; f != nil {
		return f, false
	}
	if len(o.Fields) == 0 && n.Port != "out0" && n.Port != "in0" && len(p.fields) >= o.MaxFields {
		return nil, true
	}
	f = newField(n, len(p.fields))
	p.byName[n.Full] = f
	p.fields = append(p.fields, f)
	return f, false
}

// allNames lists the plottable columns, for an error message.
func allNames(src Source) []Name {
	var names []Name
	seen := map[string]bool{}
	src(func(h *Header) error {
		for _, c := range h.Columns {
			if n, ok := ParseName(c, h.Vehicle >= 0); ok && !seen[c] {
				seen[c] = true
				names = append(names, n)
			}
		}
		return nil
	}, func(*Header, *Row) error { return nil })
	return names
}

// noSuchField is the error for a --fields entry that names no column:
// the closest names, and the columns there are (the first of them, when
// there are many).
func noSuchField(file, spec string, names []Name) error {
	var all, parts []string
	for _, n := range names {
		all = append(all, n.Full)
		parts = append(parts, n.Full, n.Field, n.Base(), n.Port) // a port or a system's component alone
		if n.Vehicle != "" {
			parts = append(parts, n.Vehicle, n.Vehicle+"."+n.Field)
		}
	}
	hint := ""
	if s := suggest.Closest(spec, parts); s != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", s)
	}
	list := all
	more := ""
	if len(list) > 30 {
		more = fmt.Sprintf(", … and %d more", len(list)-30)
		list = list[:30]
	}
	return fmt.Errorf("%s: --fields %q: no such column%s (columns: %s%s)", file, spec, hint, strings.Join(list, ", "), more)
}

// trace is the second pass: each field's drawing.
func (p *plot) trace(src Source) error {
	headers := 0
	return src(func(h *Header) error {
		headers++
		p.idx = p.idx[:0]
		for _, col := range h.Columns {
			f := p.byName[col]
			if f != nil {
				f.header = headers
			}
			p.idx = append(p.idx, f)
		}
		for _, f := range p.fields {
			if f.header != headers {
				f.cut() // a column the reload removed: its trace breaks
			}
		}
		return nil
	}, func(h *Header, r *Row) error {
		t := r.Time()
		if t < p.t0 || t > p.t1 {
			return nil
		}
		for i, f := range p.idx {
			if f != nil {
				f.add(t, r.Values[i])
			}
		}
		return nil
	})
}

// span says the time the recording covers, for an error message.
func span(src Source) string {
	t0, t1 := math.Inf(1), math.Inf(-1)
	src(func(*Header) error { return nil }, func(_ *Header, r *Row) error {
		t0, t1 = min(t0, r.Time()), max(t1, r.Time())
		return nil
	})
	if t0 > t1 {
		return "no rows"
	}
	return fmt.Sprintf("%g s to %g s", t0, t1)
}

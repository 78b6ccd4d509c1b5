package recording

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"beamconnect/quality"
)

// loops judge the control loops a recording has setpoints for
// (setpoint:COLUMN beside COLUMN, beamng.quality's), row by row, as the
// run judged them: the same tracker, with the band's default rule (a band
// the config gave is not in the recording).
type loops struct {
	list []*loop
	// the current header's: each loop's measured and setpoint columns,
	// and the id column
	at [][2]int
	id int
}

type loop struct {
	name     string // the measured column
	setpoint string
	vehicle  string
	opts     quality.Options
	track    *quality.Tracker
	lastID   float64 // BeamNG's id at its vehicle's last row
}

// header finds the loops of a header row, new ones and those of earlier
// headers alike.
func (ls *loops) header(h *Header) {
	ls.at = ls.at[:0]
	ls.id = slices.Index(h.Columns, "id")
	several := h.Vehicle >= 0
	for i, c := range h.Columns {
		n, ok := ParseName(c, several)
		if !ok || !n.Setpoint {
			continue
		}
		measured := strings.TrimPrefix(c, SetpointPrefix)
		if k := strings.LastIndexByte(measured, '#'); k > 0 {
			measured = measured[:k]
		}
		j := slices.Index(h.Columns, measured)
		if j < 0 {
			continue
		}
		k := slices.IndexFunc(ls.list, func(l *loop) bool { return l.setpoint == c })
		if k < 0 {
			o := quality.Options{Name: n.Field, Unit: n.Unit()}
			if n.Vehicle != "" {
				o.Name = n.Vehicle + "." + n.Field
			}
			if o.Unit == "rad" {
				o.Wrap = 2 * math.Pi
			}
			ls.list = append(ls.list, &loop{name: measured, setpoint: c, vehicle: n.Vehicle, opts: o, track: quality.New(o), lastID: math.NaN()})
			k = len(ls.list) - 1
		}
		for len(ls.at) <= k {
			ls.at = append(ls.at, [2]int{-1, -1})
		}
		ls.at[k] = [2]int{j, i}
	}
}

// row takes one row: a loop compares its measured value with its setpoint
// on its vehicle's rows. BeamNG's ids starting over (its coupling started
// again, the model with it) start the loop's figures over, as the run's
// own judging does (the recording's time goes on there).
func (ls *loops) row(r *Row) {
	for k, at := range ls.at {
		l := ls.list[k]
		if at[0] < 0 || l.vehicle != "" && r.Vehicle != l.vehicle {
			continue
		}
		if ls.id >= 0 {
			id := r.Values[ls.id]
			if id < l.lastID {
				l.track = quality.New(l.opts)
			}
			l.lastID = id
		}
		l.track.Observe(r.Time(), r.Values[at[0]], r.Values[at[1]])
	}
}

// reports are the loops' verdicts at the recording's end.
func (ls *loops) reports() []quality.Report {
	var out []quality.Report
	for _, l := range ls.list {
		r := l.track.Report(true)
		r.Signal = l.name // the setpoint is the recorded column beside it
		out = append(out, r)
	}
	return out
}

// control is the verdict on each loop whose measured value is drawn; in
// a run with faults none is good.
func (p *plot) control() []quality.Report {
	var out []quality.Report
	for _, r := range p.loops.reports() {
		if p.byName[r.Signal] != nil {
			if len(p.faults) > 0 {
				r = r.InFaultedRun(p.faults[0])
			}
			out = append(out, r)
		}
	}
	return out
}

// columnChanges says what a reload changed in the recording's columns:
// the ports added and removed, or that they stayed (a parameter, a
// setting).
func columnChanges(old, new []string) string {
	var added, removed []string
	for _, c := range new {
		if !slices.Contains(old, c) {
			added = append(added, c)
		}
	}
	for _, c := range old {
		if !slices.Contains(new, c) {
			removed = append(removed, c)
		}
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+list(added))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+list(removed))
	}
	if len(parts) == 0 {
		return "the columns unchanged (model parameters or other settings)"
	}
	return strings.Join(parts, ", ")
}

// list names a few columns, and how many more.
func list(cols []string) string {
	if len(cols) > 4 {
		return strings.Join(cols[:4], ", ") + fmt.Sprintf(" and %d more", len(cols)-4)
	}
	return strings.Join(cols, ", ")
}

// reloadText is each reload's time and what it changed.
func (p *plot) reloadText() []string {
	var out []string
	for i, t := range p.reloads {
		what := ""
		if i < len(p.reloadWhat) {
			what = ": " + p.reloadWhat[i]
		}
		out = append(out, plain(t)+" s"+what)
	}
	return out
}

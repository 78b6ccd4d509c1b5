package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/contracts"
	"beamconnect/internal/suggest"
)

// rowIndex is one vehicle's CSV rows by signal name, per direction, so a
// field finds its row without walking the whole CSV: a config that maps
// every row of a large CSV stays one pass.
type rowIndex struct {
	byName [2]map[string][]beamng.Signal
	names  [2][]string // each name once, in file order, for suggestions
}

func newRowIndex(l *beamng.Layout) rowIndex {
	var ix rowIndex
	for d := range ix.byName {
		m := map[string][]beamng.Signal{}
		for _, s := range l.Signals(beamng.Direction(d))[1:] {
			if _, seen := m[s.Name]; !seen {
				ix.names[d] = append(ix.names[d], s.Name)
			}
			m[s.Name] = append(m[s.Name], s)
		}
		ix.byName[d] = m
	}
	return ix
}

// named lists the rows of a direction called base, of group (any when "")
// and kind (any when "").
func (ix *rowIndex) named(dir beamng.Direction, base, group, kind string) []beamng.Signal {
	var out []beamng.Signal
	for _, s := range ix.byName[dir][base] {
		if (group == "" || s.Group == group) && (kind == "" || s.Kind == kind) {
			out = append(out, s)
		}
	}
	return out
}

// csvField resolves a Gen 2 field against its vehicle's CSV rows (v's, by
// name in ix): outputs name signalTo rows, inputs signalFrom rows of the
// kind params selects.
func (p *parser) csvField(v *Vehicle, ix *rowIndex, f *Field, g *Group, fptr, nameptr string) bool {
	name := f.PropertyName
	group, base, hasGroup := strings.Cut(name, "/")
	if !hasGroup {
		group, base = "", name
	}
	kind := ""
	if g.Dir == beamng.ToBeamNG {
		kind = "value"
		if f.Params != "" {
			if !slices.Contains(cosim.Kinds, f.Params) {
				p.at(Error, fptr+"/params", "%q is not a kind of signalFrom row: expected value, multiply, add or freeze", f.Params)
				return false
			}
			kind = f.Params
		}
	} else if slices.Contains(cosim.Kinds, f.Params) {
		p.at(Warning, fptr+"/params", "ignored: params selects a signalFrom row's kind, and outputs are signalTo rows")
	}
	section, other := "signalTo", "signalFrom"
	if g.Dir == beamng.ToBeamNG {
		section, other = other, section
	}
	hits := ix.named(g.Dir, base, group, kind)
	csvName := filepath.Base(v.CSV.Path)
	groups := map[string]bool{}
	for _, h := range hits {
		groups[h.Group] = true
	}
	switch {
	case len(hits) == 0 && p.jsonFirst:
		return false // layCSV has said why the catalogue has no such row
	case len(hits) == 0:
		p.explainMissing(v, ix, g.Dir, name, group, base, kind, section, other, nameptr)
		return false
	case len(groups) > 1:
		var opts []string
		for _, h := range hits {
			opts = append(opts, fmt.Sprintf("%q (%s)", h.Group+"/"+h.Name, csvPos(v.CSV, h.Line, 1)))
		}
		p.at(Error, nameptr, "%q is in more than one group of %s: expected %s", name, csvName, strings.Join(opts, " or "))
		return false
	}
	f.Signal = hits[0]
	l := v.Layout
	if end := f.Signal.Index + f.ArraySize - 1; end >= l.Len(g.Dir) {
		last, _ := l.At(g.Dir, l.Len(g.Dir)-1)
		p.at(Error, fptr+"/arraySize", "%d rows from %s run past the last %s row (%s): expected at most %d",
			f.ArraySize, csvPos(v.CSV, f.Signal.Line, 1), section, csvPos(v.CSV, last.Line, 1), l.Len(g.Dir)-f.Signal.Index)
		return false
	}
	return true
}

// explainMissing says why a Gen 2 name matches no row: it is in the other
// section, has rows of another kind, is a typo, or is a BeamNG signal the
// CSV does not list.
func (p *parser) explainMissing(v *Vehicle, ix *rowIndex, dir beamng.Direction, name, group, base, kind, section, other, nameptr string) {
	csvName := filepath.Base(v.CSV.Path)
	if m, isMeta := contracts.ParseMeta(name); isMeta && m != contracts.NotMeta {
		p.at(Error, nameptr, "%q is a meta value, not a row of %s: add \"propertyType\": \"meta\"", name, csvName)
		return
	}
	var kinds []string
	for _, s := range ix.named(dir, base, group, "") {
		kinds = append(kinds, fmt.Sprintf("%s on line %d", s.Kind, s.Line))
	}
	if len(kinds) > 0 {
		p.at(Error, nameptr, "%s has no %s row for %q (it has %s): add one in BeamNG's editor, or set params to a kind it has", csvName, kind, name, strings.Join(kinds, ", "))
		return
	}
	if rows := ix.named(dir.Other(), base, group, ""); len(rows) > 0 {
		where := "outputs, not inputs"
		if dir == beamng.FromBeamNG {
			where = "inputs, not outputs"
		}
		p.at(Error, nameptr, "%q is a %s row of %s (%s): expected it in %s", name, other, csvName, csvPos(v.CSV, rows[0].Line, 1), where)
		return
	}
	rows := "it has none"
	if n := v.Layout.Len(dir); n > 1 {
		first, _ := v.Layout.At(dir, 1)
		last, _ := v.Layout.At(dir, n-1)
		rows = fmt.Sprintf("lines %d–%d", first.Line, last.Line)
	}
	// A signal BeamNG has, whose row the CSV lacks, is said to be missing,
	// however close another row's name is (wheelSpeedRR beside wheelSpeedRL).
	if defs, msg := csvRows(name, dir, nil); msg == "" {
		d := defs[0]
		kindCol := ""
		if dir == beamng.ToBeamNG {
			kindCol = kind
		}
		p.at(Error, nameptr, "%s has no %s row for %q, a signal BeamNG has (its %s rows: %s): BeamNG sends and applies only what the CSV lists; add the row %s,%s,%s,%s,number in BeamNG's editor",
			csvName, section, name, section, rows, section, d.group, d.name, kindCol)
		return
	} else if s := suggest.Closest(base, ix.names[dir]); s != "" {
		p.at(Error, nameptr, "%q is not a %s row of %s (did you mean %q?)", name, section, csvName, s)
		return
	} else if s := suggestGen2(base, dir); s != "" {
		p.at(Error, nameptr, "%q is not a %s row of %s, nor a BeamNG signal (did you mean %q?)", name, section, csvName, s)
		return
	}
	p.at(Error, nameptr, "%q is not a %s row of %s (its %s rows: %s): expected one of its signal names, or Group/name", name, section, csvName, section, rows)
}

func suggestGen2(name string, dir beamng.Direction) string {
	return suggest.Closest(name, cosim.Names("", dir == beamng.ToBeamNG))
}

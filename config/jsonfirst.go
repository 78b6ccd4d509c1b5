package config

import (
	"fmt"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/internal/suggest"
)

// layCSV lays out a CSV from a config written JSON-first: a signalTo row
// per output signal, a signalFrom row per input field (its params the
// row's kind), names resolved against BeamNG's catalogue.
func (p *parser) layCSV(raw *rawConfig) *cosim.File {
	f := &cosim.File{Path: "(the CSV `beamconnect csv` writes)", Other: cosim.DefaultOther, BeamNG: cosim.DefaultBeamNG,
		Time: cosim.Param{Value: cosim.DefaultTime}, Ping: cosim.Param{Value: cosim.DefaultPing}}
	seen := map[string]bool{}
	for _, side := range []struct {
		groups []rawGroup
		base   string
		dir    beamng.Direction
	}{{raw.Outputs, "/outputs/", beamng.FromBeamNG}, {raw.Inputs, "/inputs/", beamng.ToBeamNG}} {
		for gi, g := range side.groups {
			if g.GroupType != nil && *g.GroupType == "commData" {
				continue
			}
			for pi, port := range g.Ports {
				for fi, rf := range port {
					if rf.PropertyType != nil && *rf.PropertyType == "meta" {
						continue
					}
					ptr := side.base + strconv.Itoa(gi) + "/ports/" + strconv.Itoa(pi) + "/" + strconv.Itoa(fi) + "/propertyName"
					defs, msg := csvRows(rf.PropertyName, side.dir, rf.ArraySize)
					if msg != "" {
						p.at(Error, ptr, "%s", msg)
						continue
					}
					kind := ""
					if side.dir == beamng.ToBeamNG {
						kind = "value"
						if rf.Params != nil && *rf.Params != "" {
							kind = *rf.Params
						}
					}
					for _, d := range defs {
						key := fmt.Sprint(side.dir, d.group, d.name, kind)
						if seen[key] {
							continue
						}
						seen[key] = true
						r := cosim.Row{Group: d.group, Name: d.name, Value: kind, Desc: d.desc}
						if side.dir == beamng.FromBeamNG {
							r.Section = "signalTo"
							f.To = append(f.To, r)
						} else {
							r.Section = "signalFrom"
							f.From = append(f.From, r)
						}
					}
				}
			}
		}
	}
	f.From = cosim.SortFrom(f.From)
	for i := range f.To {
		f.To[i].Line = 2 + i
	}
	for i := range f.From {
		f.From[i].Line = 2 + len(f.To) + i
	}
	return f
}

type csvRow struct{ group, name, desc string }

// csvRows resolves a Gen 2 propertyName ("vehicleYaw", "Driver/throttle",
// "wheelSpeedFL") against BeamNG's catalogue, with arraySize consecutive
// entries; or says why it cannot.
func csvRows(name string, dir beamng.Direction, arraySize *float64) ([]csvRow, string) {
	n := 1
	if arraySize != nil {
		n = int(*arraySize)
	}
	group, base, hasGroup := strings.Cut(name, "/")
	if !hasGroup {
		group, base = "", name
	}
	var hits []csvRow
	var hitIdx []int
	var names []string
	for i, d := range cosim.Catalogue() {
		full := []string{d.Name}
		if d.Group == "Wheels" {
			full = full[:0]
			for _, w := range beamng.Wheels {
				full = append(full, d.Name+w)
			}
		}
		for _, fn := range full {
			if dir == beamng.ToBeamNG && !d.From {
				continue
			}
			names = append(names, fn)
			if fn == base && (group == "" || cosim.Class(group) == d.Group) {
				g := d.Group
				if group != "" {
					g = group
				}
				hits = append(hits, csvRow{g, fn, d.Desc})
				hitIdx = append(hitIdx, i)
			}
		}
	}
	if len(hits) == 0 && hasGroup && (cosim.Class(group) == "Electrics" || cosim.Class(group) == "Powertrain") && dir == beamng.FromBeamNG {
		if d, _, ok := cosim.Lookup(group, base); ok {
			return []csvRow{{group, base, d.Desc}}, ""
		}
	}
	switch {
	case len(hits) == 0:
		what := "a signal BeamNG sends"
		if dir == beamng.ToBeamNG {
			what = "a signal BeamNG applies (Driver or Wheels)"
		}
		if s := suggest.Closest(base, names); s != "" {
			return nil, fmt.Sprintf("%q is not %s (did you mean %q?)", name, what, s)
		}
		return nil, fmt.Sprintf("%q is not %s: expected a name of BeamNG's co-simulation catalogue such as vehicleGroundSpeed, throttle or wheelSpeedFL (see `beamconnect banks --protocol csv`)", name, what)
	case len(hits) > 1:
		var opts []string
		for _, h := range hits {
			opts = append(opts, strconv.Quote(h.group+"/"+h.name))
		}
		return nil, fmt.Sprintf("%q is in more than one group: expected %s", name, strings.Join(opts, " or "))
	}
	out := hits
	cat := cosim.Catalogue()
	for k := 1; k < n; k++ {
		i := hitIdx[0] + k
		if i >= len(cat) || cat[i].Group != cat[hitIdx[0]].Group || cat[i].Group == "Wheels" {
			return nil, fmt.Sprintf("arraySize %d runs past the end of %s's group in BeamNG's catalogue: expected at most %d", n, name, k)
		}
		out = append(out, csvRow{hits[0].group, cat[i].Name, cat[i].Desc})
	}
	return out, ""
}

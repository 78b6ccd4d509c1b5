package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/contracts"
	"beamconnect/suggest"
)

// addCSV reports a CSV's own findings in the config's diagnostics.
func (p *parser) addCSV(ds cosim.Diags) {
	for _, d := range ds {
		sev := Error
		if d.Warning {
			sev = Warning
		}
		p.diags = append(p.diags, Diagnostic{File: d.File, Pos: Pos{d.Line, d.Col}, Severity: sev, Msg: d.Msg})
	}
}

// atCSV reports a finding placed in the config's CSV.
func (p *parser) atCSV(sev Severity, line, col int, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{File: p.csv.Path, Pos: Pos{line, max(col, 1)}, Severity: sev, Msg: fmt.Sprintf(format, args...)})
}

// csvPos is "rig.csv:12:29", for messages that point into the CSV.
func (p *parser) csvPos(line, col int) string {
	return fmt.Sprintf("%s:%d:%d", p.csv.Path, line, max(col, 1))
}

// loadInterface reads a Gen 2 config's CSV. A draft (LoadDraft) does not:
// its CSV is made from the fields.
func (p *parser) loadInterface(cfg *Config, raw *rawConfig, bn *rawBeamNG) bool {
	if p.draft {
		p.csv = p.draftCSV(raw)
		return true
	}
	if bn.Interface == nil {
		p.at(Error, "/beamng/protocol", "protocol \"csv\" needs beamng.interface: the CSV BeamNG's Co-Simulation Signal Editor saved, which both sides lay their messages out from (or write one for this config with `beamconnect csv`)")
		return false
	}
	path := *bn.Interface
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(p.file), path)
	}
	cfg.Interface = path
	f, err := cosim.Load(path)
	var ds cosim.Diags
	switch {
	case errors.As(err, &ds):
		p.addCSV(ds)
		p.at(Error, "/beamng/interface", "%s is not a usable coupling CSV (%d errors, listed with its name)", *bn.Interface, ds.Errors())
		return false
	case errors.Is(err, fs.ErrNotExist):
		p.at(Error, "/beamng/interface", "%s does not exist: expected the CSV BeamNG's Co-Simulation Signal Editor saved, or write one from this config with `beamconnect csv %s -o %s`", path, p.file, path)
		return false
	case err != nil:
		p.at(Error, "/beamng/interface", "cannot read %s: %v", path, err)
		return false
	}
	p.addCSV(f.Warnings)
	p.csv = f
	return true
}

// draftCSV lays out a CSV from a config written JSON-first: a signalTo row
// per output signal, a signalFrom row per input field (its params the
// row's kind), names resolved against BeamNG's catalogue.
func (p *parser) draftCSV(raw *rawConfig) *cosim.File {
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
					defs, msg := draftDefs(rf.PropertyName, side.dir, rf.ArraySize)
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

type draftDef struct{ group, name, desc string }

// draftDefs resolves a Gen 2 propertyName ("vehicleYaw", "Driver/throttle",
// "wheelSpeedFL") against BeamNG's catalogue, with arraySize consecutive
// entries; or says why it cannot.
func draftDefs(name string, dir beamng.Direction, arraySize *float64) ([]draftDef, string) {
	n := 1
	if arraySize != nil {
		n = int(*arraySize)
	}
	group, base, hasGroup := strings.Cut(name, "/")
	if !hasGroup {
		group, base = "", name
	}
	var hits []draftDef
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
				hits = append(hits, draftDef{g, fn, d.Desc})
				hitIdx = append(hitIdx, i)
			}
		}
	}
	if len(hits) == 0 && hasGroup && (cosim.Class(group) == "Electrics" || cosim.Class(group) == "Powertrain") && dir == beamng.FromBeamNG {
		if d, _, ok := cosim.Lookup(group, base); ok {
			return []draftDef{{group, base, d.Desc}}, ""
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
		out = append(out, draftDef{hits[0].group, cat[i].Name, cat[i].Desc})
	}
	return out, ""
}

// csvField resolves a Gen 2 field against the CSV's rows: outputs name
// signalTo rows, inputs signalFrom rows of the kind params selects.
func (p *parser) csvField(cfg *Config, f *Field, g *Group, fptr, nameptr string) bool {
	name := f.PropertyName
	group, base, hasGroup := strings.Cut(name, "/")
	if !hasGroup {
		group, base = "", name
	}
	kind := ""
	if g.Dir == beamng.ToBeamNG {
		kind = "value"
		if f.Params != "" {
			if !slicesContains(cosim.Kinds, f.Params) {
				p.at(Error, fptr+"/params", "%q is not a kind of signalFrom row: expected value, multiply, add or freeze", f.Params)
				return false
			}
			kind = f.Params
		}
	} else if slicesContains(cosim.Kinds, f.Params) {
		p.at(Warning, fptr+"/params", "ignored: params selects a signalFrom row's kind, and outputs are signalTo rows")
	}
	section, other := "signalTo", "signalFrom"
	if g.Dir == beamng.ToBeamNG {
		section, other = other, section
	}
	var hits []beamng.Signal
	for _, s := range cfg.Layout.Signals(g.Dir)[1:] {
		if s.Name == base && (group == "" || s.Group == group) && (kind == "" || s.Kind == kind) {
			hits = append(hits, s)
		}
	}
	csvName := filepath.Base(p.csv.Path)
	groups := map[string]bool{}
	for _, h := range hits {
		groups[h.Group] = true
	}
	switch {
	case len(hits) == 0 && p.draft:
		return false // draftCSV has said why the catalogue has no such row
	case len(hits) == 0:
		p.explainMissing(cfg, g.Dir, name, group, base, kind, section, other, csvName, nameptr)
		return false
	case len(groups) > 1:
		var opts []string
		for _, h := range hits {
			opts = append(opts, fmt.Sprintf("%q (%s)", h.Group+"/"+h.Name, p.csvPos(h.Line, 1)))
		}
		p.at(Error, nameptr, "%q is in more than one group of %s: expected %s", name, csvName, strings.Join(opts, " or "))
		return false
	}
	f.Signal = hits[0]
	if end := f.Signal.Index + f.ArraySize - 1; end >= cfg.Layout.Len(g.Dir) {
		last, _ := cfg.Layout.At(g.Dir, cfg.Layout.Len(g.Dir)-1)
		p.at(Error, fptr+"/arraySize", "%d rows from %s run past the last %s row (%s): expected at most %d",
			f.ArraySize, p.csvPos(f.Signal.Line, 1), section, p.csvPos(last.Line, 1), cfg.Layout.Len(g.Dir)-f.Signal.Index)
		return false
	}
	return true
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// explainMissing says why a Gen 2 name matches no row: it is in the other
// section, has rows of another kind, is a typo, or is a BeamNG signal the
// CSV does not list.
func (p *parser) explainMissing(cfg *Config, dir beamng.Direction, name, group, base, kind, section, other, csvName, nameptr string) {
	if m, isMeta := contracts.ParseMeta(name); isMeta && m != contracts.NotMeta {
		p.at(Error, nameptr, "%q is a meta value, not a row of %s: add \"propertyType\": \"meta\"", name, csvName)
		return
	}
	var kinds []string
	for _, s := range cfg.Layout.Signals(dir)[1:] {
		if s.Name == base && (group == "" || s.Group == group) {
			kinds = append(kinds, fmt.Sprintf("%s on line %d", s.Kind, s.Line))
		}
	}
	if len(kinds) > 0 {
		p.at(Error, nameptr, "%s has no %s row for %q (it has %s): add one in BeamNG's editor, or set params to a kind it has", csvName, kind, name, strings.Join(kinds, ", "))
		return
	}
	for _, s := range cfg.Layout.Signals(dir.Other())[1:] {
		if s.Name == base && (group == "" || s.Group == group) {
			where := "outputs, not inputs"
			if dir == beamng.FromBeamNG {
				where = "inputs, not outputs"
			}
			p.at(Error, nameptr, "%q is a %s row of %s (%s): expected it in %s", name, other, csvName, p.csvPos(s.Line, 1), where)
			return
		}
	}
	var names []string
	for _, s := range cfg.Layout.Signals(dir)[1:] {
		names = append(names, s.Name)
	}
	rows := "it has none"
	if n := cfg.Layout.Len(dir); n > 1 {
		first, _ := cfg.Layout.At(dir, 1)
		last, _ := cfg.Layout.At(dir, n-1)
		rows = fmt.Sprintf("lines %d–%d", first.Line, last.Line)
	}
	if s := suggest.Closest(base, names); s != "" {
		p.at(Error, nameptr, "%q is not a %s row of %s (did you mean %q?)", name, section, csvName, s)
		return
	}
	if defs, msg := draftDefs(name, dir, nil); msg == "" {
		d := defs[0]
		kindCol := ""
		if dir == beamng.ToBeamNG {
			kindCol = kind
		}
		p.at(Error, nameptr, "%q is not a %s row of %s (its %s rows: %s): BeamNG sends and applies only what the CSV lists; add the row %s,%s,%s,%s,number in BeamNG's editor",
			name, section, csvName, section, rows, section, d.group, d.name, kindCol)
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

// csvAddresses takes the CSV's connection rows as the addresses' defaults
// and refuses a config that disagrees with them: BeamNG uses the CSV's.
func (p *parser) csvAddresses(raw *rawConfig, bn *rawBeamNG, v *Vehicle) {
	if p.draft {
		p.csv.Other, p.csv.BeamNG = v.Local, v.Remote
		return
	}
	type key struct {
		set  bool
		ptr  string
		what string
		at   cosim.Param
	}
	fix := func(ap *netip.AddrPort, csvAP netip.AddrPort, ipKey, portKey key, role string) {
		ip, port := ap.Addr(), ap.Port()
		if !ipKey.set {
			ip = csvAP.Addr()
		} else if ip != csvAP.Addr() {
			p.at(Error, ipKey.ptr, "%s disagrees with %s (%s IP %s, %s): expected %s, or leave %s out",
				ip, p.csvPos(ipKey.at.Line, ipKey.at.Col), ipKey.what, csvAP.Addr(), role, csvAP.Addr(), displayKey(ipKey.ptr))
		}
		if !portKey.set {
			port = csvAP.Port()
		} else if port != csvAP.Port() {
			p.at(Error, portKey.ptr, "%d disagrees with %s (%s port %d, %s): expected %d, or leave %s out",
				port, p.csvPos(portKey.at.Line, portKey.at.Col), portKey.what, csvAP.Port(), role, csvAP.Port(), displayKey(portKey.ptr))
		}
		*ap = netip.AddrPortFrom(ip, port)
	}
	fix(&v.Local, p.csv.Other,
		key{bn.LocalIP != nil, "/beamng/localIP", "otherUDP", p.csv.OtherAt[0]},
		key{bn.LocalPort != nil, "/beamng/localPort", "otherUDP", p.csv.OtherAt[1]}, "where BeamNG sends")
	fix(&v.Remote, p.csv.BeamNG,
		key{raw.RemoteIP != nil, "/remoteIP", "beamngUDP", p.csv.BeamNGAt[0]},
		key{raw.RemotePort != nil, "/remotePort", "beamngUDP", p.csv.BeamNGAt[1]}, "where BeamNG listens")
}

// csvTiming makes the period and ping time BeamNG's: what the CSV's
// computation and ping times come to after lpack (spec §3.5), warning
// where the config's contracts expect another period.
func (p *parser) csvTiming(cfg *Config, raw *rawConfig, bn *rawBeamNG, fastest string) {
	if p.draft {
		p.csv.Time.Value, p.csv.Ping.Value = cfg.Period, cfg.PingTime
		return
	}
	t := p.csv.Time
	real := cosim.Period(t.Value, cfg.PhysicsDt)
	steps := int(math.Round(real / cfg.PhysicsDt))
	how := fmt.Sprintf("%s: 3rd Party Computation Time %s arrives in BeamNG's controller as %s, so it sends every %d physics steps",
		p.csvPos(t.Line, t.Col), cosim.LuaText(t.Value), strconv.FormatFloat(cosim.Arrived(t.Value), 'g', -1, 64), steps)
	if t.Line == 0 {
		how = fmt.Sprintf("%s sets no 3rd Party Computation Time: BeamNG's default %v arrives as %s, so it sends every %d physics steps",
			filepath.Base(p.csv.Path), cosim.DefaultTime, strconv.FormatFloat(cosim.Arrived(t.Value), 'g', -1, 64), steps)
	}
	switch {
	case fastest != "" && math.Abs(real-cfg.Period) > 1e-12:
		p.at(Warning, fastest, "BeamNG will send every %s, not every %s (%s); contracts are scheduled on BeamNG's period. For %s write the time %s in the CSV (`beamconnect csv` does)",
			ms(real), ms(cfg.Period), how, ms(cfg.Period), cosim.TimeText(int(math.Round(cfg.Period/cfg.PhysicsDt)), cfg.PhysicsDt))
	case fastest == "" && math.Abs(real-t.Value) > 1e-12:
		p.at(Warning, "/beamng/interface", "BeamNG will send every %s (%s)", ms(real), how)
	}
	if real > MaxCouplingPeriod {
		p.atCSV(Error, t.Line, t.Col, "BeamNG would send every %s: expected at most %s, since beamconnect takes 1.9 s without a message for BeamNG's 2 s blocking timeout", ms(real), ms(MaxCouplingPeriod))
	}
	cfg.Period = real
	if bn.PingTime != nil && math.Abs(*bn.PingTime-p.csv.Ping.Value) > 1e-15 {
		p.atKey(Warning, "/beamng/pingTime", "ignored: BeamNG takes its ping time from %s (Ping Time %s)", p.csvPos(p.csv.Ping.Line, p.csv.Ping.Col), cosim.LuaText(p.csv.Ping.Value))
	}
	cfg.PingTime = p.csv.Ping.Value
	cfg.Unanswered = cosim.Unanswered(p.csv.Ping.Value, t.Value)
	if cfg.Unanswered > 1 {
		p.atCSV(Warning, p.csv.Ping.Line, p.csv.Ping.Col, "BeamNG will let %d messages be in flight (ceil(Ping Time / computation time)) before it waits for a reply: it runs up to %s ahead of the model, not in lockstep",
			cfg.Unanswered, ms(float64(cfg.Unanswered)*real))
	}
}

// unmappedRows warns about signalFrom rows no inputs field writes: BeamNG
// applies whatever comes in them every step, so beamconnect sends a neutral
// value (multiply 1, add 0, freeze 0, a value row 0).
func (p *parser) unmappedRows(cfg *Config) {
	if p.draft {
		return
	}
	written := make([]bool, cfg.Layout.Len(beamng.ToBeamNG))
	for _, g := range cfg.Inputs {
		for _, port := range g.Ports {
			for _, f := range port.Fields {
				for i := f.Signal.Index; i < f.Signal.Index+f.ArraySize && i < len(written); i++ {
					written[i] = true
				}
			}
		}
	}
	for i, s := range cfg.Layout.Signals(beamng.ToBeamNG) {
		if i == 0 || written[i] {
			continue
		}
		v := Neutral(s.Kind)
		msg := fmt.Sprintf("no inputs field writes this %s row of %s: beamconnect sends %v in it every message", s.Kind, s.Name, v)
		if s.Kind == "value" {
			msg += ", and BeamNG applies it every step"
			if s.Group == "Wheels" {
				msg += " (this wheel's torque is held at 0)"
			}
		}
		p.atCSV(Warning, s.Line, 1, "%s", msg)
	}
}

// Neutral is what a Gen 2 reply carries in a signalFrom row of a kind
// that nothing writes: the value that leaves the signal as it would be
// without the row (value rows: 0).
func Neutral(kind string) float64 {
	if kind == "multiply" {
		return 1
	}
	return 0
}

// displayKey is a JSON Pointer as the config's paths read: beamng.localPort.
func displayKey(ptr string) string {
	return strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", ".")
}

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/contracts"
	"beamconnect/internal/suggest"
	"beamconnect/relative"
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

// atCSV reports a finding placed in a vehicle's CSV.
func (p *parser) atCSV(f *cosim.File, sev Severity, line, col int, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{File: f.Path, Pos: Pos{line, max(col, 1)}, Severity: sev, Msg: fmt.Sprintf(format, args...)})
}

// csvPos is "rig.csv:12:29", for messages that point into a CSV.
func csvPos(f *cosim.File, line, col int) string {
	return fmt.Sprintf("%s:%d:%d", f.Path, line, max(col, 1))
}

// interfaces reads each vehicle's CSV (protocol "csv"): the one named by
// beamng.interface, or with beamng.vehicles each vehicle's own. A vehicle
// takes its layout and its addresses from its CSV; one whose CSV cannot be
// used keeps an empty layout, and its fields are not resolved.
func (p *parser) interfaces(cfg *Config, raw *rawConfig, bn *rawBeamNG) {
	fleet := len(bn.Vehicles) > 0
	p.rows = make([]rowIndex, len(cfg.Vehicles))
	for i := range cfg.Vehicles {
		cfg.Vehicles[i].Layout = beamng.NewLayout("", nil, nil)
	}
	switch {
	case fleet && p.jsonFirst:
		p.atKey(Error, "/beamng/vehicles", "`beamconnect csv` writes the CSV of one vehicle: write each vehicle's from a config of that vehicle alone, or save each in BeamNG's editor")
		return
	case fleet && bn.Interface != nil:
		p.atKey(Error, "/beamng/interface", "with beamng.vehicles each vehicle names its own CSV, as BeamNG's editor saves one per vehicle with its own ports: expected it as beamng.vehicles.NAME.interface")
	}
	seen := map[string]string{} // CSV path → the vehicle it is already the interface of
	for i := range cfg.Vehicles {
		v := &cfg.Vehicles[i]
		iface := bn.Interface
		if fleet {
			iface = bn.Vehicles[v.Name].Interface
		}
		f := p.loadInterface(raw, iface, i, v.Name, seen)
		if f == nil {
			continue
		}
		v.CSV, v.Layout = f, f.Layout()
		p.rows[i] = newRowIndex(v.Layout)
		p.csvAddresses(raw, bn, i, v)
	}
}

// loadInterface reads vehicle i's CSV. A config written JSON-first (LoadJSONFirst) does not: its
// CSV is made from the fields.
func (p *parser) loadInterface(raw *rawConfig, iface *string, i int, name string, seen map[string]string) *cosim.File {
	if p.jsonFirst {
		return p.layCSV(raw)
	}
	ptr := p.vptrs[i] + "/interface"
	switch {
	case iface == nil && name == "":
		p.at(Error, "/beamng/protocol", "protocol \"csv\" needs beamng.interface: the CSV BeamNG's Co-Simulation Signal Editor saved, which both sides lay their messages out from (or write one for this config with `beamconnect csv`)")
		return nil
	case iface == nil:
		p.atKey(Error, p.vptrs[i], "vehicle %q needs its CSV: expected \"interface\", the CSV BeamNG's Co-Simulation Signal Editor saved for this vehicle, which lays out its messages and gives its ports", name)
		return nil
	}
	path := *iface
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(p.file), path)
	}
	if other, dup := seen[path]; dup {
		p.at(Error, ptr, "%s is also the interface of vehicle %q: expected a CSV of this vehicle's own, since a CSV names the ports its vehicle's coupling binds", *iface, other)
		return nil
	}
	seen[path] = name
	f, err := cosim.Load(path)
	var ds cosim.Diags
	switch {
	case errors.As(err, &ds):
		p.addCSV(ds)
		errs := "1 error"
		if n := ds.Errors(); n != 1 {
			errs = strconv.Itoa(n) + " errors"
		}
		p.at(Error, ptr, "%s is not a usable coupling CSV (%s, listed with its name)", *iface, errs)
		return nil
	case errors.Is(err, fs.ErrNotExist):
		p.at(Error, ptr, "%s does not exist: expected the CSV BeamNG's Co-Simulation Signal Editor saved, or write one from this config with `beamconnect csv %s -o %s`", path, p.file, path)
		return nil
	case err != nil:
		p.at(Error, ptr, "cannot read %s: %v", path, err)
		return nil
	}
	p.addCSV(f.Warnings)
	return f
}

// addrKey is one address key of the config that a CSV's connection row
// gives too: set when the config gives it.
type addrKey struct {
	set  bool
	ptr  string
	what string
	at   cosim.Param
}

// csvAddresses takes vehicle i's CSV's connection rows as its addresses'
// defaults and refuses a config that disagrees with them: BeamNG uses the
// CSV's. A vehicle of beamng.vehicles may give its own IPs or inherit
// beamng.localIP and the top-level remoteIP; its ports are its own.
func (p *parser) csvAddresses(raw *rawConfig, bn *rawBeamNG, i int, v *Vehicle) {
	f := v.CSV
	if p.jsonFirst {
		f.Other, f.BeamNG = v.Local, v.Remote
		return
	}
	localIP := addrKey{bn.LocalIP != nil, "/beamng/localIP", "otherUDP", f.OtherAt[0]}
	localPort := addrKey{bn.LocalPort != nil, "/beamng/localPort", "otherUDP", f.OtherAt[1]}
	remoteIP := addrKey{raw.RemoteIP != nil, "/remoteIP", "beamngUDP", f.BeamNGAt[0]}
	remotePort := addrKey{raw.RemotePort != nil, "/remotePort", "beamngUDP", f.BeamNGAt[1]}
	if rv := bn.Vehicles[v.Name]; len(bn.Vehicles) > 0 && rv != nil {
		vptr := p.vptrs[i]
		if rv.LocalIP != nil {
			localIP.set, localIP.ptr = true, vptr+"/localIP"
		}
		if rv.RemoteIP != nil {
			remoteIP.set, remoteIP.ptr = true, vptr+"/remoteIP"
		}
		localPort.set, localPort.ptr = rv.LocalPort != nil, vptr+"/localPort"
		remotePort.set, remotePort.ptr = rv.RemotePort != nil, vptr+"/remotePort"
	}
	p.agree(f, &v.Local, f.Other, localIP, localPort, "where BeamNG sends")
	p.agree(f, &v.Remote, f.BeamNG, remoteIP, remotePort, "where BeamNG listens")
}

// agree makes ap the CSV's address csvAP, reporting a config key that
// gives another IP or port.
func (p *parser) agree(f *cosim.File, ap *netip.AddrPort, csvAP netip.AddrPort, ipKey, portKey addrKey, role string) {
	ip, port := ap.Addr(), ap.Port()
	if !ipKey.set {
		ip = csvAP.Addr()
	} else if ip != csvAP.Addr() {
		p.at(Error, ipKey.ptr, "%s disagrees with %s (%s IP %s, %s): expected %s, or leave %s out",
			ip, csvPos(f, ipKey.at.Line, ipKey.at.Col), ipKey.what, csvAP.Addr(), role, csvAP.Addr(), displayKey(ipKey.ptr))
	}
	if !portKey.set {
		port = csvAP.Port()
	} else if port != csvAP.Port() {
		p.at(Error, portKey.ptr, "%d disagrees with %s (%s port %d, %s): expected %d, or leave %s out",
			port, csvPos(f, portKey.at.Line, portKey.at.Col), portKey.what, csvAP.Port(), role, csvAP.Port(), displayKey(portKey.ptr))
	}
	*ap = netip.AddrPortFrom(ip, port)
}

// sendTiming is how a CSV's computation time reaches BeamNG's controller:
// the period it sends at, in physics steps, and a sentence saying why.
type sendTiming struct {
	period float64
	steps  int
	how    string
}

func arrival(f *cosim.File, physicsDt float64) sendTiming {
	t := f.Time
	period := cosim.Period(t.Value, physicsDt)
	steps := int(math.Round(period / physicsDt))
	arrived := strconv.FormatFloat(cosim.Arrived(t.Value), 'g', -1, 64)
	if t.Line == 0 {
		return sendTiming{period, steps, fmt.Sprintf("%s sets no 3rd Party Computation Time: BeamNG's default %v arrives as %s, so it sends every %d physics steps",
			filepath.Base(f.Path), cosim.DefaultTime, arrived, steps)}
	}
	return sendTiming{period, steps, fmt.Sprintf("%s: 3rd Party Computation Time %s arrives in BeamNG's controller as %s, so it sends every %d physics steps",
		csvPos(f, t.Line, t.Col), cosim.LuaText(t.Value), arrived, steps)}
}

// csvTiming makes the period and ping times BeamNG's: what each CSV's
// computation and ping times come to after lpack (spec §3.5), warning
// where the config's contracts expect another period. One model steps
// every vehicle, so every CSV must come to the first one's period; each
// vehicle may have its own ping time, and so its own window.
func (p *parser) csvTiming(cfg *Config, bn *rawBeamNG, fastest string) {
	if p.jsonFirst {
		if f := cfg.Vehicles[0].CSV; f != nil {
			f.Time.Value, f.Ping.Value = cfg.Period, cfg.PingTime
		}
		return
	}
	first := -1
	var firstAt sendTiming
	var pings []string
	for i := range cfg.Vehicles {
		v := &cfg.Vehicles[i]
		f := v.CSV
		if f == nil {
			continue
		}
		at := arrival(f, cfg.PhysicsDt)
		mismatch := false
		if first < 0 {
			first, firstAt = i, at
			p.firstTiming(cfg, i, at, fastest)
		} else if mismatch = math.Abs(at.period-cfg.Period) > 1e-12; mismatch {
			p.periodMismatch(cfg, i, at, first, firstAt)
		}
		if fastest == "" && !mismatch && math.Abs(at.period-f.Time.Value) > 1e-12 {
			p.at(Warning, p.vptrs[i]+"/interface", "BeamNG will send every %s (%s)", ms(at.period), at.how)
		}
		v.Unanswered = f.Unanswered()
		if v.Unanswered > 1 {
			p.atCSV(f, Warning, f.Ping.Line, f.Ping.Col, "BeamNG will let %d messages be in flight (ceil(Ping Time / computation time)) before it waits for a reply: it runs up to %s ahead of the model, not in lockstep",
				v.Unanswered, ms(float64(v.Unanswered)*at.period))
		}
		if bn.PingTime != nil && math.Abs(*bn.PingTime-f.Ping.Value) > 1e-15 {
			pings = append(pings, fmt.Sprintf("%s (Ping Time %s)", csvPos(f, f.Ping.Line, f.Ping.Col), cosim.LuaText(f.Ping.Value)))
		}
	}
	switch {
	case len(pings) == 1 && len(bn.Vehicles) == 0:
		p.atKey(Warning, "/beamng/pingTime", "ignored: BeamNG takes its ping time from %s", pings[0])
	case len(pings) > 0:
		p.atKey(Warning, "/beamng/pingTime", "ignored: BeamNG takes each vehicle's ping time from its CSV: %s", strings.Join(pings, ", "))
	}
}

// firstTiming makes the first vehicle's CSV's period, at, the coupling's.
func (p *parser) firstTiming(cfg *Config, i int, at sendTiming, fastest string) {
	f := cfg.Vehicles[i].CSV
	if fastest != "" && math.Abs(at.period-cfg.Period) > 1e-12 {
		p.at(Warning, fastest, "BeamNG will send every %s, not every %s (%s); contracts are scheduled on BeamNG's period. For %s write the time %s in the CSV (`beamconnect csv` does)",
			ms(at.period), ms(cfg.Period), at.how, ms(cfg.Period), cosim.TimeText(int(math.Round(cfg.Period/cfg.PhysicsDt)), cfg.PhysicsDt))
	}
	if at.period > MaxCouplingPeriod {
		p.atCSV(f, Error, f.Time.Line, f.Time.Col, "BeamNG would send every %s: expected at most %s, since beamconnect takes 1.9 s without a message for BeamNG's 2 s blocking timeout", ms(at.period), ms(MaxCouplingPeriod))
	}
	cfg.Period = at.period
	cfg.PingTime = f.Ping.Value
}

// periodMismatch refuses vehicle i's CSV, whose period (at) is not the
// first vehicle's (firstAt): one model steps every vehicle at one rate,
// and BeamNG cannot be told to send one vehicle's messages at another's.
func (p *parser) periodMismatch(cfg *Config, i int, at sendTiming, first int, firstAt sendTiming) {
	v, w := cfg.Vehicles[i], cfg.Vehicles[first]
	t, wt := v.CSV.Time, w.CSV.Time
	where := "BeamNG's default"
	if wt.Line > 0 {
		where = csvPos(w.CSV, wt.Line, wt.Col)
	}
	msg := fmt.Sprintf("vehicle %q: BeamNG would send every %s (3rd Party Computation Time %s arrives as %s: %d physics steps), but vehicle %q every %s (%s): one model steps every vehicle at one rate, so every vehicle's CSV must come to the same period; expected the time %s",
		v.Name, ms(at.period), cosim.LuaText(t.Value), strconv.FormatFloat(cosim.Arrived(t.Value), 'g', -1, 64), at.steps, w.Name, ms(cfg.Period), where, cosim.TimeText(firstAt.steps, cfg.PhysicsDt))
	if t.Line > 0 {
		p.atCSV(v.CSV, Error, t.Line, t.Col, "%s here", msg)
		return
	}
	p.at(Error, p.vptrs[i]+"/interface", "%s (%s sets none, so BeamNG's default %v applies): add the row connection,,3rd Party Computation Time,%s,number to %s",
		msg, filepath.Base(v.CSV.Path), cosim.DefaultTime, cosim.TimeText(firstAt.steps, cfg.PhysicsDt), filepath.Base(v.CSV.Path))
}

// unmappedRows warns about signalFrom rows no inputs field writes: BeamNG
// applies whatever comes in them every step, so the warning says what the
// reply carries there: the protocol's Unset (multiply 1, add 0, freeze 0, a
// value row 0).
func (p *parser) unmappedRows(cfg *Config) {
	if p.jsonFirst {
		return
	}
	written := make([][]bool, len(cfg.Vehicles))
	for i, v := range cfg.Vehicles {
		written[i] = make([]bool, v.Layout.Len(beamng.ToBeamNG))
	}
	for _, g := range cfg.Inputs {
		for _, port := range g.Ports {
			for _, f := range port.Fields {
				w := written[f.Vehicle]
				for i := f.Signal.Index; i < f.Signal.Index+f.ArraySize && i < len(w); i++ {
					w[i] = true
				}
			}
		}
	}
	for vi, v := range cfg.Vehicles {
		if v.CSV == nil {
			continue
		}
		for i, s := range v.Layout.Signals(beamng.ToBeamNG) {
			if i == 0 || written[vi][i] {
				continue
			}
			msg := fmt.Sprintf("no inputs field writes this %s row of %s: beamconnect sends %v in it every message", s.Kind, s.Name, v.Layout.Protocol.Unset(s))
			if s.Kind == "value" {
				msg += ", and BeamNG applies it every step"
				if s.Group == "Wheels" {
					msg += " (this wheel's torque is held at 0)"
				}
			}
			p.atCSV(v.CSV, Warning, s.Line, 1, "%s", msg)
		}
	}
}

// cutShort refuses a CSV whose message BeamNG cuts short before a row the
// config reads. BeamNG stops building its message at a row of a group it
// does not know (cosim.File.Cut), so every later row never arrives: a field
// there, or a row a cross-vehicle field is computed from, would read
// nothing at all. Rows cut off after everything the config reads stay a
// warning (the CSV's own).
func (p *parser) cutShort(cfg *Config) {
	if p.jsonFirst {
		return
	}
	for vi, v := range cfg.Vehicles {
		if v.CSV == nil {
			continue
		}
		r, slot, ok := v.CSV.Cut()
		if !ok {
			continue
		}
		lost := p.readsFrom(cfg, vi, slot)
		if len(lost) == 0 {
			continue
		}
		p.dropCut(v.CSV)
		if len(lost) > 6 {
			lost = append(lost[:5], fmt.Sprintf("%d more", len(lost)-5))
		}
		known := ""
		if s := suggest.Closest(r.Group, cosim.Groups); s != "" {
			known = fmt.Sprintf(" (did you mean %q?)", s)
		}
		p.atCSV(v.CSV, Error, r.Line, r.Col(1), "BeamNG does not know the group %q%s: it stops building its message at this row, so this row and every later signalTo row never arrive, and %s would read nothing: expected a group BeamNG knows (%s, or a sensor's name holding IMU or GPS), or this row after every row the config reads",
			r.Group, known, andList(lost), strings.Join(cosim.Groups, ", "))
	}
}

// readsFrom lists the outputs fields that read vehicle vi's message at or
// after slot: its signal fields, and the cross-vehicle fields computed
// from its rows.
func (p *parser) readsFrom(cfg *Config, vi, slot int) []string {
	l := cfg.Vehicles[vi].Layout
	var lost []string
	for _, g := range cfg.Outputs {
		for _, port := range g.Ports {
			for _, f := range port.Fields {
				switch {
				case f.Relative != relative.None && (f.Vehicle == vi || f.Other == vi):
					ego, other := f.Relative.Needs()
					needs := other
					if f.Vehicle == vi {
						needs = ego
					}
					for _, q := range needs {
						if s, ok := l.Find(beamng.FromBeamNG, q); ok && s.Index >= slot {
							lost = append(lost, fmt.Sprintf("%s (%s, from %s on line %d)", f.Path, f.PropertyName, s.Name, s.Line))
							break
						}
					}
				case f.Relative == relative.None && f.Meta == contracts.NotMeta && f.Vehicle == vi && f.Signal.Index+f.ArraySize > slot:
					lost = append(lost, fmt.Sprintf("%s (%s)", f.Path, f.PropertyName))
				}
			}
		}
	}
	return lost
}

// dropCut removes the CSV's own warning about its cut row, which the error
// replaces.
func (p *parser) dropCut(f *cosim.File) {
	for _, d := range f.Warnings {
		if !d.Cut {
			continue
		}
		p.diags = slices.DeleteFunc(p.diags, func(x Diagnostic) bool {
			return x.Severity == Warning && x.File == d.File && x.Pos == Pos{d.Line, d.Col} && x.Msg == d.Msg
		})
	}
}

// displayKey is a JSON Pointer as the config's paths read: beamng.localPort.
func displayKey(ptr string) string {
	return strings.ReplaceAll(strings.TrimPrefix(ptr, "/"), "/", ".")
}

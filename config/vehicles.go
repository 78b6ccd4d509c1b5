package config

import (
	"fmt"
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

// vehicles resolves the socket pairs: one from the top-level and beamng keys,
// or one per entry of beamng.vehicles, in file order.
func (p *parser) vehicles(raw *rawConfig, bn *rawBeamNG) []Vehicle {
	remoteIP := p.ipv4(raw.RemoteIP, "/remoteIP", DefaultRemoteIP, false)
	localIP := p.ipv4(bn.LocalIP, "/beamng/localIP", DefaultLocalIP, true)
	if len(bn.Vehicles) == 0 {
		v := Vehicle{
			Name:   "",
			Local:  netip.AddrPortFrom(localIP, uint16(orDefault(bn.LocalPort, DefaultLocalPort))),
			Remote: netip.AddrPortFrom(remoteIP, uint16(orDefault(raw.RemotePort, DefaultRemotePort))),
		}
		if v.Local == v.Remote {
			p.at(Error, "/beamng/localPort", "beamconnect would bind %v, the address BeamNG binds; expected another port (BeamNG's default pair is 64890 and 64891)", v.Local)
		}
		p.vptrs = []string{"/beamng"}
		return []Vehicle{v}
	}
	for _, k := range []struct {
		set bool
		ptr string
	}{{raw.RemotePort != nil, "/remotePort"}, {bn.LocalPort != nil, "/beamng/localPort"}} {
		if k.set {
			p.atKey(Warning, k.ptr, "ignored: with beamng.vehicles each vehicle names its own ports")
		}
	}
	names := make([]string, 0, len(bn.Vehicles))
	for name := range bn.Vehicles {
		names = append(names, name)
	}
	// Map order is random; the file's order is what the user reads.
	slices.SortFunc(names, func(a, b string) int {
		return p.ix.nodes["/beamng/vehicles/"+escapePointer(a)].off - p.ix.nodes["/beamng/vehicles/"+escapePointer(b)].off
	})
	var out []Vehicle
	for _, name := range names {
		rv := bn.Vehicles[name]
		if rv == nil {
			// "ego": null, which the schema reports; the checks that
			// follow (here, on the CSV, on addresses) read it as empty,
			// so a reload of such an edit reports it instead of crashing.
			rv = &rawVehicle{}
			bn.Vehicles[name] = rv
		}
		ptr := "/beamng/vehicles/" + escapePointer(name)
		if name == "" {
			p.atKey(Error, ptr, "a vehicle needs a name: expected the remoteObject its fields use")
		}
		// Gen 2 vehicles may leave their ports to their CSVs (0 until read).
		v := Vehicle{
			Name:   name,
			Local:  netip.AddrPortFrom(p.ipv4(rv.LocalIP, ptr+"/localIP", localIP.String(), true), uint16(orDefault(rv.LocalPort, 0))),
			Remote: netip.AddrPortFrom(p.ipv4(rv.RemoteIP, ptr+"/remoteIP", remoteIP.String(), false), uint16(orDefault(rv.RemotePort, 0))),
		}
		out = append(out, v)
		p.vptrs = append(p.vptrs, ptr)
	}
	return out
}

// gen1Interfaces gives every vehicle Gen 1's fixed layout, and warns about
// CSVs named for Gen 2.
func (p *parser) gen1Interfaces(cfg *Config, bn *rawBeamNG) {
	for i := range cfg.Vehicles {
		cfg.Vehicles[i].Layout = beamng.Fixed
	}
	const ignored = "ignored: a CSV interface is for protocol \"csv\" (Gen 2); this config speaks Gen 1"
	if bn.Interface != nil {
		p.atKey(Warning, "/beamng/interface", ignored)
	}
	for i, v := range cfg.Vehicles {
		if rv := bn.Vehicles[v.Name]; len(bn.Vehicles) > 0 && rv != nil && rv.Interface != nil {
			p.atKey(Warning, p.vptrs[i]+"/interface", ignored)
		}
	}
}

// distinct refuses two vehicles on one address: each vehicle's coupling
// binds its own pair. It runs once every address is known, a Gen 2
// vehicle's from its CSV, and places a clash where the address is given.
func (p *parser) distinct(cfg *Config, bn *rawBeamNG) {
	if len(bn.Vehicles) == 0 {
		return
	}
	seen := map[netip.AddrPort]string{}
	for i, v := range cfg.Vehicles {
		// A Gen 2 vehicle without its CSV has no addresses (its CSV's
		// problem is reported); a Gen 1 vehicle has no CSV but its keys'.
		if cfg.Protocol == beamng.Gen2 && v.CSV == nil {
			continue
		}
		for k, ap := range []netip.AddrPort{v.Local, v.Remote} {
			at := p.addressAt(cfg, bn, i, k)
			if other, dup := seen[ap]; dup {
				at.report(p, fmt.Sprintf("%v is already used by %s; every vehicle needs its own pair of ports%s", ap, other, at.fix))
				continue
			}
			seen[ap] = fmt.Sprintf("vehicle %q%s", v.Name, at.where)
		}
	}
}

// origin is where a vehicle's address is given: a config key, or its CSV's
// connection row.
type origin struct {
	ptr        string
	file       *cosim.File
	line, col  int
	where, fix string // for messages: " (lead.csv:16:26)", and how to fix a clash
}

func (o origin) report(p *parser, msg string) {
	if o.file != nil {
		p.atCSV(o.file, Error, o.line, o.col, "%s", msg)
		return
	}
	p.at(Error, o.ptr, "%s", msg)
}

// addressAt is where vehicle i's local (k 0) or remote (k 1) address is
// given: its config key if set, else its CSV's port row, else (a CSV that
// leaves the port to BeamNG's default) its interface key.
func (p *parser) addressAt(cfg *Config, bn *rawBeamNG, i, k int) origin {
	v, rv := cfg.Vehicles[i], bn.Vehicles[cfg.Vehicles[i].Name]
	key, set, at, group := "/localPort", rv.LocalPort != nil, cosim.Param{}, "otherUDP"
	if k == 1 {
		key, set, group = "/remotePort", rv.RemotePort != nil, "beamngUDP"
	}
	if v.CSV == nil || set {
		return origin{ptr: p.vptrs[i] + key}
	}
	at = v.CSV.OtherAt[1]
	if k == 1 {
		at = v.CSV.BeamNGAt[1]
	}
	fix := fmt.Sprintf(": expected another %s port in %s (in BeamNG's editor)", group, filepath.Base(v.CSV.Path))
	if at.Line == 0 {
		return origin{ptr: p.vptrs[i] + "/interface", fix: fmt.Sprintf(" (%s sets no %s port: BeamNG's default)%s", filepath.Base(v.CSV.Path), group, fix)}
	}
	return origin{file: v.CSV, line: at.Line, col: at.Col, where: " (" + csvPos(v.CSV, at.Line, at.Col) + ")", fix: fix}
}

// ipv4 reads an address the coupling binds or sends to. BeamNG binds its
// address literally (LuaSocket setsockname), so only IPv4 literals and
// "localhost" make sense.
func (p *parser) ipv4(v *string, ptr, def string, local bool) netip.Addr {
	s := def
	if v != nil {
		s = *v
	}
	if s == "localhost" {
		s = "127.0.0.1"
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		p.at(Error, ptr, "%q is not an IPv4 address: expected one such as 127.0.0.1 (BeamNG binds the address as given)", s)
		return netip.MustParseAddr(def)
	}
	if a.IsUnspecified() {
		if !local {
			p.at(Error, ptr, "%s is no address to send to: expected the address of the machine BeamNG runs on", s)
			return netip.MustParseAddr(def)
		}
		// Every interface: a rig on DHCP keeps working when its address
		// changes. BeamNG must still send to one address of this machine.
		p.at(Warning, ptr, "%s binds every interface of this machine: BeamNG must send to this machine's address on its network (`beamconnect compile` prints the start line with it); datagrams are taken only from remoteIP", s)
		return a
	}
	if local && !a.IsLoopback() {
		p.at(Warning, ptr, "%s is not a loopback address: the coupling will accept datagrams from that network (only from the configured BeamNG host)", s)
	}
	return a
}

// remoteObject resolves which vehicle a field belongs to: its own
// remoteObject, else its group's, else the top-level one. With a single
// vehicle the name is only a label.
func (p *parser) remoteObject(cfg *Config, f *Field, own, group, top *string, fptr, gptr string) bool {
	name, ptr := "", fptr
	switch {
	case own != nil:
		name, ptr = *own, fptr+"/remoteObject"
	case group != nil:
		name, ptr = *group, gptr+"/remoteObject"
	case top != nil:
		name, ptr = *top, "/remoteObject"
	}
	f.RemoteObject = name
	if len(cfg.Vehicles) == 1 && cfg.Vehicles[0].Name == "" {
		return true
	}
	names := make([]string, len(cfg.Vehicles))
	for i, v := range cfg.Vehicles {
		if v.Name == name {
			f.Vehicle = i
			return true
		}
		names[i] = strconv.Quote(v.Name)
	}
	if name == "" && ptr == fptr {
		p.at(Error, fptr, "no remoteObject: with beamng.vehicles every field needs one (its own, its group's or the top-level one); expected one of %s", strings.Join(names, ", "))
		return false
	}
	msg, suggested := notAVehicle(cfg, name)
	if !suggested {
		msg += ": expected one of " + strings.Join(names, ", ")
	}
	p.at(Error, ptr, "%s", msg)
	return false
}

// notAVehicle says that name is not one of cfg's vehicles, with the one it
// is closest to if any (suggested).
func notAVehicle(cfg *Config, name string) (msg string, suggested bool) {
	msg = fmt.Sprintf("%q is not a vehicle of beamng.vehicles", name)
	names := make([]string, len(cfg.Vehicles))
	for i, v := range cfg.Vehicles {
		names[i] = v.Name
	}
	if s := suggest.Closest(name, names); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s), true
	}
	return msg, false
}

// inputOverlap refuses two input fields that write the same slot of the same
// vehicle's reply: one of them would silently lose.
func (p *parser) inputOverlap(cfg *Config) {
	type writer struct {
		path string
		pos  Pos
	}
	slots := make([][]*writer, len(cfg.Vehicles))
	for i, v := range cfg.Vehicles {
		slots[i] = make([]*writer, v.Layout.Len(beamng.ToBeamNG))
	}
	for _, g := range cfg.Inputs {
		for _, port := range g.Ports {
			for _, f := range port.Fields {
				if f.Meta != contracts.NotMeta {
					continue
				}
				w := &writer{f.Path, f.Pos}
				for i := f.Signal.Index; i < f.Signal.Index+f.ArraySize && i < len(slots[f.Vehicle]); i++ {
					if prev := slots[f.Vehicle][i]; prev != nil {
						s, _ := cfg.Vehicles[f.Vehicle].Layout.At(beamng.ToBeamNG, i)
						p.add(Error, f.Pos, f.Path, fmt.Sprintf("writes %s (%s), which %s (%v) already writes: expected each slot written by one field", s.Ref, s.Name, prev.path, prev.pos))
						break
					}
					slots[f.Vehicle][i] = w
				}
			}
		}
	}
}

// relativeField checks a cross-vehicle ("function") property: VS Connect's
// VSAP_DISTANCE and its kin, of the field's vehicle to the one params names.
// placed says whether the field's vehicle is known.
func (p *parser) relativeField(cfg *Config, f *Field, g *Group, rp relative.Property, fptr, nameptr string, placed bool) bool {
	switch {
	case g.Dir == beamng.ToBeamNG:
		p.at(Error, nameptr, "%s is computed from BeamNG's data: expected it in outputs, not inputs", f.PropertyName)
		return false
	case len(cfg.Vehicles) < 2:
		p.at(Error, nameptr, "%s relates two vehicles: expected a config with several vehicles in beamng.vehicles, the field's remoteObject one and params the other", f.PropertyName)
		return false
	case f.ArraySize != 1:
		p.at(Error, fptr+"/arraySize", "%d is too many: %s is a single value (expected 1)", f.ArraySize, f.PropertyName)
		return false
	}
	other := -1
	for i, v := range cfg.Vehicles {
		if v.Name == f.Params {
			other = i
		}
	}
	switch {
	case f.Params == "":
		p.at(Error, fptr, "%s needs params: the other vehicle's remoteObject, e.g. %q", f.PropertyName, cfg.Vehicles[(f.Vehicle+1)%len(cfg.Vehicles)].Name)
		return false
	case other < 0:
		msg, _ := notAVehicle(cfg, f.Params)
		p.at(Error, fptr+"/params", "%s: expected the other vehicle of %s", msg, f.PropertyName)
		return false
	case other == f.Vehicle:
		p.at(Error, fptr+"/params", "%q is the field's own vehicle: expected another one for %s", f.Params, f.PropertyName)
		return false
	}
	f.Relative, f.Other = rp, other
	return placed && p.relativeRows(cfg, f, nameptr)
}

// relativeRows refuses a cross-vehicle property that a vehicle's message
// cannot give: a Gen 2 vehicle's CSV must list the rows it is computed
// from (Gen 1's fixed message carries them all).
func (p *parser) relativeRows(cfg *Config, f *Field, nameptr string) bool {
	ego, other := f.Relative.Needs()
	var adds []string
	for _, side := range []struct {
		v     int
		needs []string
	}{{f.Vehicle, ego}, {f.Other, other}} {
		v := cfg.Vehicles[side.v]
		if v.CSV == nil {
			continue // Gen 1, or a CSV whose problems are reported
		}
		var rows []string
		for _, q := range side.needs {
			if _, ok := v.Layout.Find(beamng.FromBeamNG, q); !ok {
				rows = append(rows, "signalTo,"+kinematicsRow(q)+",,number")
			}
		}
		if len(rows) > 0 {
			adds = append(adds, fmt.Sprintf("to %s (vehicle %q) %s", filepath.Base(v.CSV.Path), v.Name, andList(rows)))
		}
	}
	if len(adds) == 0 {
		return true
	}
	p.at(Error, nameptr, "%s of %q to %q is computed from rows BeamNG sends only when a vehicle's CSV lists them: add %s, in BeamNG's editor",
		f.Relative, cfg.Vehicles[f.Vehicle].Name, cfg.Vehicles[f.Other].Name, strings.Join(adds, ", and "))
	return false
}

// kinematicsRow is how a CSV names the Kinematics signal that carries a
// Gen 1 quantity: "Kinematics,vehiclePositionX" for posX.
func kinematicsRow(q string) string {
	for _, d := range cosim.Catalogue() {
		if d.Group == "Kinematics" && d.Meaning == q {
			return "Kinematics," + d.Name
		}
	}
	return "Kinematics," + q // not reached: relative reads only Kinematics quantities
}

// andList joins items as a sentence does: "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

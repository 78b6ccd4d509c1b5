package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/internal/suggest"
	"beamconnect/relative"

	"beamconnect/ports"
)

// resolve applies defaults and aliases to a schema-valid file and runs the
// semantic checks, reporting through p.
func (p *parser) resolve(raw *rawConfig) *Config {
	cfg := &Config{
		File:         p.file,
		TimeDilation: orDefault(raw.TimeDilation, DefaultTimeDilation),
		Protocol:     beamng.Gen1,
		ReplyID:      ports.ReplyNext,
		PhysicsDt:    beamng.PhysicsDt,
		PingTime:     DefaultPingTime,
	}
	if raw.RemoteObject != nil {
		cfg.RemoteObject = *raw.RemoteObject
	}
	bn := raw.BeamNG
	if bn == nil {
		bn = &rawBeamNG{}
	}
	if bn.Protocol != nil {
		if proto, ok := beamng.ProtocolNamed(*bn.Protocol); ok {
			cfg.Protocol = proto // anything else the schema reported
		}
	}
	if bn.ReplyID != nil {
		cfg.ReplyID = ports.ReplyID(*bn.ReplyID)
	}
	cfg.PhysicsDt = orDefault(bn.PhysicsDt, beamng.PhysicsDt)
	cfg.PingTime = orDefault(bn.PingTime, DefaultPingTime)
	// Out-of-range values were reported by the schema; the checks below
	// go on with the defaults rather than compute with them.
	if !(cfg.PhysicsDt >= 1e-5 && cfg.PhysicsDt <= 0.1) {
		cfg.PhysicsDt = beamng.PhysicsDt
	}
	if !(cfg.PingTime > 0 && cfg.PingTime <= 1) {
		cfg.PingTime = DefaultPingTime
	}
	if bn.ModelTimeoutMs != nil {
		cfg.ModelTimeout = *bn.ModelTimeoutMs / 1000
	}
	if td := cfg.TimeDilation; td > 0 && td < MinTimeDilation {
		p.at(Error, "/timeDilation", "%v is too slow to pace: expected at least %v (1000× slower than real time), or 0 or less to run as fast as both sides can", td, MinTimeDilation)
	}
	cfg.DebugFile = bn.DebugFile != nil && *bn.DebugFile
	cfg.BusyPoll = bn.BusyPoll != nil && *bn.BusyPoll
	cfg.RealTime = bn.RealTime != nil && *bn.RealTime
	if t := cfg.ModelTimeout; !cfg.RealTime && t*1000 >= LockstepReplyLimitMs {
		p.at(Warning, "/beamng/modelTimeoutMs", "%v ms: a step that takes that long outlasts BeamNG's 2 s wait for a reply, so BeamNG stalls and the reply is withheld; expected less than %v ms (the default in lockstep is %v ms)",
			t*1000, LockstepReplyLimitMs, LockstepModelTimeoutMs)
	}
	cfg.Model = "hold"
	if bn.Model != nil {
		cfg.Model = *bn.Model
	}
	cfg.ModelParams = map[string]any{}
	for k, v := range bn.ModelParams {
		switch x := v.(type) {
		case []any:
			strs := make([]string, len(x))
			for i, e := range x {
				strs[i], _ = e.(string)
			}
			cfg.ModelParams[k] = strs
		default:
			cfg.ModelParams[k] = x
		}
	}

	if raw.RemotePort != nil && *raw.RemotePort == 4367 {
		p.at(Warning, "/remotePort", "4367 is VS Connect's default server port; BeamNG's coupling receives on 64891 unless its udpReceivePort says otherwise")
	}
	cfg.Vehicles = p.vehicles(raw, bn)
	if cfg.Protocol == beamng.Gen2 {
		p.interfaces(cfg, raw, bn)
	} else {
		p.gen1Interfaces(cfg, bn)
	}
	p.distinct(cfg, bn)

	in := p.groups(cfg, raw.Inputs, "/inputs", beamng.ToBeamNG, raw.RemoteObject)
	out := p.groups(cfg, raw.Outputs, "/outputs", beamng.FromBeamNG, raw.RemoteObject)
	p.schedule(cfg, raw, bn, in, out)
	p.modelTimeout(cfg, raw, in)
	if cfg.Protocol != beamng.Gen2 || p.jsonFirst {
		n := beamng.Unanswered(cfg.PingTime, cfg.Period)
		for i := range cfg.Vehicles {
			cfg.Vehicles[i].Unanswered = n
		}
		if bn.PingTime != nil && n > 1 && !p.jsonFirst {
			p.at(Warning, "/beamng/pingTime", "BeamNG will let %d messages be in flight (ceil(pingTime / %s)) before it waits for a reply: it runs up to %s ahead of the model, not in lockstep",
				n, ms(cfg.Period), ms(float64(n)*cfg.Period))
		}
	}
	cfg.Inputs, cfg.Outputs = in, out
	p.quality(cfg, bn)
	p.timeSync(raw)
	p.inputOverlap(cfg)
	if cfg.Protocol == beamng.Gen2 {
		p.unmappedRows(cfg)
		p.cutShort(cfg)
	}
	return cfg
}

// modelTimeout warns when the model timeout a run takes is shorter than
// BeamNG's period, the shortest a model is stepped at: a step that takes
// less than a period, as any may, would then be a fault, answered with
// neutral controls. (A model stepped less often, an FMU with a step of its
// own, is compared with that step where the FMU is read: fmumodel.) beamng.modelTimeoutMs says it; without it, in lockstep, an
// inputs group's overdueDataTimeout shorter than the default becomes it
// (ports.Plan.ModelTimeout), which a timeout meant for late data to BeamNG
// does silently. In real time the default is 5 periods.
func (p *parser) modelTimeout(cfg *Config, raw *rawConfig, in []Group) {
	if cfg.ModelTimeout > 0 {
		if cfg.ModelTimeout < cfg.Period {
			p.at(Warning, "/beamng/modelTimeoutMs", "%s is shorter than BeamNG's period (%s), the shortest a model is stepped at: a model step that takes longer is a fault, and BeamNG gets neutral controls for its message; expected at least %s",
				ms(cfg.ModelTimeout), ms(cfg.Period), ms(cfg.Period))
		}
		return
	}
	if cfg.RealTime {
		return
	}
	shortest := -1
	for i, g := range in {
		if g.Overdue > 0 && g.Overdue < LockstepModelTimeoutMs/1000.0 && (shortest < 0 || g.Overdue < in[shortest].Overdue) {
			shortest = i
		}
	}
	if shortest < 0 || in[shortest].Overdue >= cfg.Period {
		return
	}
	g := in[shortest]
	p.at(Warning, "/inputs/"+strconv.Itoa(shortest)+"/"+overdueKey(&raw.Inputs[shortest]),
		"%s becomes the model timeout (beamng.modelTimeoutMs is not set, and in lockstep the shortest overdueDataTimeout of the inputs below %s is taken): shorter than BeamNG's period (%s), the shortest a model is stepped at, so a model step that takes longer is a fault and BeamNG gets neutral controls for its message; expected at least %s, or beamng.modelTimeoutMs set",
		ms(g.Overdue), ms(LockstepModelTimeoutMs/1000.0), ms(cfg.Period), ms(cfg.Period))
}

func orDefault(v *float64, def float64) float64 {
	if v == nil {
		return def
	}
	return *v
}

// groups resolves the port groups of one direction.
func (p *parser) groups(cfg *Config, raws []rawGroup, base string, dir beamng.Direction, topObject *string) []Group {
	out := make([]Group, 0, len(raws))
	for gi, rg := range raws {
		gptr := base + "/" + strconv.Itoa(gi)
		pos, path := p.ix.value(gptr)
		g := Group{Path: path, Pos: pos, Dir: dir, Overdue: -1}
		g.CommData = rg.GroupType != nil && *rg.GroupType == "commData"
		g.TimeSync = rg.TimeSyncMode != nil && *rg.TimeSyncMode == "absolute"
		p.overdue(&g, &rg, gptr)
		if g.CommData {
			for _, k := range []struct {
				set bool
				key string
			}{
				{rg.UpdatePeriod != nil, "updatePeriod"}, {rg.UpdatePeriodMs != nil, "updatePeriodMs"},
				{g.Overdue >= 0, overdueKey(&rg)},
			} {
				if k.set {
					p.atKey(Warning, gptr+"/"+k.key, "has no effect: a commData group is not a contract and has no schedule")
				}
			}
			if g.TimeSync {
				p.at(Error, gptr+"/timeSyncMode", "a commData group cannot be time-synced: expected \"none\", or move timeSyncMode to a contract group")
			}
		}
		for pi, rp := range rg.Ports {
			pptr := gptr + "/ports/" + strconv.Itoa(pi)
			ppos, ppath := p.ix.value(pptr)
			port := Port{Path: ppath, Pos: ppos}
			for fi := range rp {
				fptr := pptr + "/" + strconv.Itoa(fi)
				if f, ok := p.field(cfg, &rp[fi], fptr, &g, rg.RemoteObject, topObject, gptr); ok {
					port.Fields = append(port.Fields, f)
				}
			}
			g.Ports = append(g.Ports, port)
		}
		out = append(out, g)
	}
	return out
}

func overdueKey(rg *rawGroup) string {
	switch {
	case rg.OverdueDataTimeout != nil:
		return "overdueDataTimeout"
	case rg.OverdueDataTimeoutMs != nil:
		return "overdueDataTimeoutMs"
	case rg.BlockTimeThreshold != nil:
		return "blockTimeThreshold"
	}
	return "blockTimeThresholdMs"
}

// overdue resolves the four spellings of the overdue timeout: seconds or
// milliseconds, current or deprecated name. Only one may be given.
func (p *parser) overdue(g *Group, rg *rawGroup, gptr string) {
	first := ""
	for _, k := range []struct {
		v          *float64
		key, alias string
		scale      float64
	}{
		{rg.OverdueDataTimeout, "overdueDataTimeout", "", 1},
		{rg.OverdueDataTimeoutMs, "overdueDataTimeoutMs", "", 1e-3},
		{rg.BlockTimeThreshold, "blockTimeThreshold", "overdueDataTimeout", 1},
		{rg.BlockTimeThresholdMs, "blockTimeThresholdMs", "overdueDataTimeoutMs", 1e-3},
	} {
		if k.v == nil {
			continue
		}
		ptr := gptr + "/" + k.key
		if k.alias != "" {
			p.atKey(Warning, ptr, "deprecated: write %q (same meaning)", k.alias)
		}
		if first != "" {
			p.atKey(Error, ptr, "both %s and %s are set: expected one", first, k.key)
			continue
		}
		first = k.key
		switch v := *k.v; {
		case v == -1:
			g.Overdue = -1
		case v < 0:
			p.at(Error, ptr, "%v is not allowed: expected -1 (overdue detection off) or a time ≥ 0", v)
		default:
			g.Overdue = v * k.scale
		}
	}
}

// field resolves and checks one field.
func (p *parser) field(cfg *Config, rf *rawField, fptr string, g *Group, groupObject, topObject *string, gptr string) (Field, bool) {
	pos, path := p.ix.value(fptr)
	f := Field{Path: path, Pos: pos, PropertyName: rf.PropertyName, ArraySize: 1}
	if rf.ArraySize != nil {
		f.ArraySize = int(*rf.ArraySize)
	}
	if rf.InitialValue != nil {
		f.InitialValue = *rf.InitialValue
	}
	if rf.InvalidValue != nil {
		f.InvalidValue = *rf.InvalidValue
	}
	if rf.Params != nil {
		f.Params = *rf.Params
	}
	ok := true
	if rf.DataType != nil && *rf.DataType != "float" {
		p.at(Error, fptr+"/dataType", "%q is not supported: expected \"float\" (BeamNG's messages carry only doubles)", *rf.DataType)
		ok = false
	}
	if rf.DataSize != nil && *rf.DataSize != 64 {
		p.at(Error, fptr+"/dataSize", "%v is not supported: expected 64 (BeamNG's messages carry only doubles)", *rf.DataSize)
		ok = false
	}
	placed := p.remoteObject(cfg, &f, rf.RemoteObject, groupObject, topObject, fptr, gptr)
	ok = placed && ok

	meta := g.CommData
	if rf.PropertyType != nil {
		meta = *rf.PropertyType == "meta"
	}
	nameptr := fptr + "/propertyName"
	if meta {
		return f, p.metaField(&f, g, nameptr, fptr) && ok
	}
	if g.CommData {
		p.at(Error, fptr+"/propertyType", "a commData group carries only meta fields (ping_results): expected \"meta\", or move the field to a contract group")
		return f, false
	}
	if rp, isRel := relative.Parse(f.PropertyName); isRel {
		return f, p.relativeField(cfg, &f, g, rp, fptr, nameptr, placed) && ok
	}
	if cfg.Protocol == beamng.Gen2 {
		// Gen 2: the rows of the field's vehicle's CSV, not the fixed
		// banks. A field whose vehicle is unknown, or whose vehicle's CSV
		// could not be read, has been reported already.
		return f, placed && cfg.Vehicles[f.Vehicle].CSV != nil && p.csvField(&cfg.Vehicles[f.Vehicle], &p.rows[f.Vehicle], &f, g, fptr, nameptr) && ok
	}
	if m, isMeta := contracts.ParseMeta(f.PropertyName); isMeta && m != contracts.NotMeta {
		if _, sig := beamng.Lookup(g.Dir, f.PropertyName); sig == beamng.NoMatch {
			p.at(Error, nameptr, "%q is a meta value, not a BeamNG signal: add \"propertyType\": \"meta\"", f.PropertyName)
			return f, false
		}
	}
	sig, match := beamng.Lookup(g.Dir, f.PropertyName)
	switch match {
	case beamng.NoMatch:
		p.unknownSignal(g.Dir, f.PropertyName, nameptr)
		return f, false
	case beamng.Folded:
		p.at(Warning, nameptr, "%q matches BeamNG's %q only when letter case is ignored: write %q", f.PropertyName, spelling(sig, f.PropertyName), spelling(sig, f.PropertyName))
	}
	f.Signal = sig
	if sig.Index == 0 {
		if g.Dir == beamng.ToBeamNG {
			p.at(Error, nameptr, "the message id of a reply is written by the reply policy (beamng.replyId), not by a port")
			return f, false
		}
		if f.ArraySize > 1 {
			p.at(Error, fptr+"/arraySize", "%d is too many: the message id is a single value (expected 1)", f.ArraySize)
			return f, false
		}
	}
	if g.Dir == beamng.ToBeamNG && sig.Name == "gear" {
		p.at(Warning, nameptr, "BeamNG reads gear (A4, reserved) and ignores it: nothing this field sends will shift a gear")
	}
	if end := beamng.BankEnd(g.Dir, sig.Index); f.ArraySize > 1 && sig.Index+f.ArraySize-1 > end {
		last, _ := beamng.At(g.Dir, end)
		p.at(Error, fptr+"/arraySize", "%d slots from %s (%s) run past %s, the end of bank %s: expected at most %d",
			f.ArraySize, sig.Ref, sig.Name, last.Ref, sig.Bank, end-sig.Index+1)
		return f, false
	}
	return f, ok
}

// spelling is how the user should write a signal matched case-insensitively:
// the canonical name, or the upper-case reference if they wrote a reference.
func spelling(sig beamng.Signal, written string) string {
	if strings.EqualFold(written, sig.Ref) {
		return sig.Ref
	}
	return sig.Name
}

func (p *parser) unknownSignal(dir beamng.Direction, name, ptr string) {
	if _, m := beamng.Lookup(dir.Other(), name); m == beamng.Exact || m == beamng.Folded {
		if dir == beamng.ToBeamNG {
			p.at(Error, ptr, "%q is sent by BeamNG, not accepted by it: expected it in outputs, not inputs", name)
		} else {
			p.at(Error, ptr, "%q is accepted by BeamNG, not sent by it: expected it in inputs, not outputs", name)
		}
		return
	}
	if s := beamng.Suggest(dir, name); s != "" {
		p.at(Error, ptr, "%q is not a BeamNG signal (did you mean %q?)", name, s)
		return
	}
	if dir == beamng.ToBeamNG {
		p.at(Error, ptr, "%q is not a signal BeamNG accepts: expected a name or bank reference such as throttle, driveMode or A1 (see `beamconnect banks --to`)", name)
	} else {
		p.at(Error, ptr, "%q is not a signal BeamNG sends: expected a name or bank reference such as groundspeed, rpm or B7 (see `beamconnect banks --from`)", name)
	}
}

// metaField checks a meta field against VS Connect's table of meta values.
func (p *parser) metaField(f *Field, g *Group, nameptr, fptr string) bool {
	m, ok := contracts.ParseMeta(f.PropertyName)
	if !ok {
		msg := fmt.Sprintf("%q is not a meta value", f.PropertyName)
		if s := suggest.Closest(f.PropertyName, contracts.MetaNames()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			msg += ": expected time, receive_time_offset, serial_number or ping_results"
		}
		if _, sig := beamng.Lookup(g.Dir, f.PropertyName); sig != beamng.NoMatch && !g.CommData {
			msg += "; to read the BeamNG signal, remove \"propertyType\": \"meta\""
		}
		p.at(Error, nameptr, "%s", msg)
		return false
	}
	f.Meta = m
	switch {
	case g.Dir == beamng.ToBeamNG:
		p.at(Error, nameptr, "meta values describe received data: %s belongs in an outputs group", m)
		return false
	case m.CommData() && !g.CommData:
		p.at(Error, nameptr, "%s describes the link, not a contract: expected it in a group with \"groupType\": \"commData\"", m)
		return false
	case !m.CommData() && g.CommData:
		p.at(Error, nameptr, "%s describes a contract's data: expected it in a contract group, not a commData group", m)
		return false
	case !m.CommData() && f.ArraySize != 1:
		p.at(Error, fptr+"/arraySize", "%d is too many: %s is a single value (expected 1)", f.ArraySize, m)
		return false
	}
	return true
}

// schedule resolves the update periods. BeamNG sends at one period, a whole
// number of physics steps: the fastest contract's. Slower contracts take
// part in every n-th message.
func (p *parser) schedule(cfg *Config, raw *rawConfig, bn *rawBeamNG, in, out []Group) {
	type period struct {
		g   *Group
		ptr string
		s   float64 // as BeamNG will run it
	}
	var set []period
	for _, side := range []struct {
		groups []Group
		raws   []rawGroup
		base   string
	}{{in, raw.Inputs, "/inputs/"}, {out, raw.Outputs, "/outputs/"}} {
		for i := range side.groups {
			g, rg := &side.groups[i], &side.raws[i]
			if g.CommData {
				continue
			}
			gptr := side.base + strconv.Itoa(i)
			var want float64
			var ptr string
			switch {
			case rg.UpdatePeriod != nil && rg.UpdatePeriodMs != nil:
				p.atKey(Error, gptr+"/updatePeriodMs", "both updatePeriod and updatePeriodMs are set: expected one")
				continue
			case rg.UpdatePeriod != nil:
				want, ptr = *rg.UpdatePeriod, gptr+"/updatePeriod"
			case rg.UpdatePeriodMs != nil:
				want, ptr = *rg.UpdatePeriodMs/1000, gptr+"/updatePeriodMs"
			default:
				continue
			}
			if !(want > 0 && want <= 3600) {
				continue // the schema reported it
			}
			real := beamng.SendPeriod(want, cfg.PhysicsDt)
			if real-want > 1e-12 {
				p.at(Warning, ptr, "%s is not a whole number of %s physics steps: BeamNG will really use %s (%d steps)",
					ms(want), ms(cfg.PhysicsDt), ms(real), int(math.Round(real/cfg.PhysicsDt)))
			}
			set = append(set, period{g, ptr, real})
		}
	}
	cfg.Period = beamng.SendPeriod(DefaultPeriod, cfg.PhysicsDt)
	fastest := ""
	if len(set) > 0 {
		cfg.Period, fastest = set[0].s, set[0].ptr
		for _, s := range set[1:] {
			if s.s < cfg.Period {
				cfg.Period, fastest = s.s, s.ptr
			}
		}
	}
	if cfg.Protocol == beamng.Gen2 {
		// Gen 2: BeamNG's period is the CSVs', whatever the contracts say.
		p.csvTiming(cfg, bn, fastest)
		for i := range set {
			set[i].s = max(set[i].s, cfg.Period)
		}
	}
	if cfg.Period > MaxCouplingPeriod {
		for _, s := range set {
			if s.s == cfg.Period {
				p.at(Error, s.ptr, "%s is too slow for the coupling period (the fastest contract's): expected at most %s, since beamconnect takes 1.9 s without a message for BeamNG's 2 s blocking timeout; give a faster contract, or let a slower one update every n-th message",
					ms(cfg.Period), ms(MaxCouplingPeriod))
			}
		}
	}
	for _, groups := range [][]Group{in, out} {
		for i := range groups {
			if !groups[i].CommData {
				groups[i].Schedule = contracts.NewSchedule(cfg.Period, cfg.Period)
			}
		}
	}
	for _, s := range set {
		s.g.Schedule = contracts.NewSchedule(s.s, cfg.Period)
		if s.g.Schedule.Period-s.s > 1e-12 {
			p.at(Warning, s.ptr, "%s is not a multiple of the coupling period %s (the fastest contract's): this contract will update every %d messages, every %s",
				ms(s.s), ms(cfg.Period), s.g.Schedule.Every, ms(s.g.Schedule.Period))
		}
	}
}

// ms formats seconds as milliseconds, without float noise.
func ms(s float64) string {
	return strconv.FormatFloat(math.Round(s*1e9)/1e6, 'f', -1, 64) + " ms"
}

// timeSync enforces VS Connect's rule that only one contract may be
// time-synced, keeping the first in the file, and warns about overdue
// detection on the synced contract.
func (p *parser) timeSync(raw *rawConfig) {
	type synced struct {
		ptr     string
		off     int
		overdue bool
	}
	var all []synced
	for _, side := range []struct {
		raws []rawGroup
		base string
	}{{raw.Inputs, "/inputs/"}, {raw.Outputs, "/outputs/"}} {
		for i, rg := range side.raws {
			if rg.TimeSyncMode == nil || *rg.TimeSyncMode != "absolute" || rg.GroupType != nil && *rg.GroupType == "commData" {
				continue
			}
			ptr := side.base + strconv.Itoa(i) + "/timeSyncMode"
			overdue := rg.OverdueDataTimeout != nil || rg.OverdueDataTimeoutMs != nil || rg.BlockTimeThreshold != nil || rg.BlockTimeThresholdMs != nil
			all = append(all, synced{ptr, p.ix.nodes[ptr].off, overdue})
		}
	}
	slices.SortFunc(all, func(a, b synced) int { return a.off - b.off })
	for i, s := range all {
		if i == 0 {
			if s.overdue {
				p.at(Warning, s.ptr, "time sync together with an overdue timeout can lead to unexpected results (VS Connect advises against it)")
			}
			continue
		}
		pos, path := p.ix.value(all[0].ptr)
		p.at(Error, s.ptr, "a second time-synced contract: only one contract may set \"absolute\" (the first is %s at %v); expected \"none\"",
			strings.TrimSuffix(path, ".timeSyncMode"), pos)
	}
}

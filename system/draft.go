package system

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"beamconnect/config"
	"beamconnect/fmu"
	"beamconnect/internal/suggest"
	"beamconnect/ssp"
)

// A first system for a rig (init --ssp): BeamNG's config and FMUs,
// connected by name and unit, written as an SSP that validates as written
// for the user to edit.

// Drafted is a system written for a config and FMUs: its files by their
// names in the system (SystemStructure.ssd, resources/…), and what init
// says about it.
type Drafted struct {
	Files map[string][]byte
	// Connected lists each connection made (from → to, and why when not by
	// its name); Unconnected the FMU inputs that keep their values and the
	// outputs nothing takes.
	Connected, Unconnected []string
}

// draftComp is one FMU of the draft.
type draftComp struct {
	name, file string
	desc       *fmu.Description
	st         *fmu.Structure
}

// Draft connects the FMUs at fmus to BeamNG as the config at cfgPath
// couples it: an FMU input named like one of BeamNG's signals (or a typo
// of one, or the only signal of its unit's quantity) takes it, an FMU
// output named like a control drives it, an FMU input named like another
// FMU's output takes that; units are converted where they differ. The
// FMUs' parameters go to a parameter set at their start values.
func Draft(cfgPath string, fmus []string) (*Drafted, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	plan, err := config.Compile(cfg)
	if err != nil {
		return nil, err
	}
	d := &Drafted{Files: map[string][]byte{}}
	beam := beamngNames(plan, -1)
	var comps []draftComp
	taken := map[string]bool{"beamng": true}
	for _, p := range fmus {
		f, err := fmu.Open(p)
		if err != nil {
			return nil, err
		}
		st, err := f.Structure()
		f.Close()
		if err != nil {
			return nil, err
		}
		name := identifier(f.Desc.ModelName)
		for k := 2; taken[name]; k++ {
			name = identifier(f.Desc.ModelName) + strconv.Itoa(k)
		}
		taken[name] = true
		comps = append(comps, draftComp{name: name, file: "resources/" + name + ".fmu", desc: f.Desc, st: st})
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		d.Files["resources/"+name+".fmu"] = data
	}
	cfgData, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, err
	}
	cfgName := "resources/" + filepath.Base(cfgPath)
	d.Files[cfgName] = cfgData
	for _, p := range plan.CSVPaths {
		if data, err := os.ReadFile(p); err == nil {
			if rel, err := filepath.Rel(filepath.Dir(cfgPath), p); err == nil && filepath.IsLocal(rel) {
				d.Files["resources/"+filepath.ToSlash(rel)] = data
			}
		}
	}
	w := newSSDWriter(strings.TrimSuffix(filepath.Base(cfgPath), filepath.Ext(cfgPath)))
	conns := d.connect(beam, comps, w)
	w.beamng(cfgName, beam, conns)
	for _, c := range comps {
		w.fmu(c)
	}
	w.connections(conns)
	d.Files[ssp.DefaultSSD] = w.finish()
	d.Files["resources/parameters.ssv"] = parameterSet(comps)
	return d, nil
}

// identifier makes a model's name a component's: letters, digits and _.
func identifier(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || reserved(b.String()) != "" {
		return "fmu_" + b.String()
	}
	return b.String()
}

// draftConn is a connection of the draft.
type draftConn struct{ fromComp, from, toComp, to string }

// connect finds the draft's connections.
func (d *Drafted) connect(beam map[string]beamngVar, comps []draftComp, w *ssdWriter) []draftConn {
	var out []draftConn
	var signals, controls []string
	for _, name := range slices.Sorted(maps.Keys(beam)) {
		if beam[name].input {
			controls = append(controls, name)
		} else {
			signals = append(signals, name)
		}
	}
	driven := map[string]bool{}
	outputs := map[string]string{} // an FMU output's name → its component
	for _, c := range comps {
		for _, v := range c.desc.Variables {
			if v.Causality == "output" && v.Kind.Numeric() && !v.Array {
				if _, dup := outputs[v.Name]; !dup {
					outputs[v.Name] = c.name
				}
			}
		}
	}
	for _, c := range comps {
		for _, v := range c.desc.Variables {
			if !v.Kind.Numeric() || v.Array {
				continue
			}
			switch v.Causality {
			case "input":
				if from, ok := outputs[v.Name]; ok && from != c.name {
					out = append(out, draftConn{from, v.Name, c.name, v.Name})
					d.Connected = append(d.Connected, fmt.Sprintf("%s.%s → %s.%s", from, v.Name, c.name, v.Name))
					continue
				}
				sig, why := matchBeamNG(v, signals, beam, c.st)
				if sig == "" {
					d.Unconnected = append(d.Unconnected, fmt.Sprintf("%s.%s keeps its start value %s", c.name, v.Name, orZero(v.Start)))
					continue
				}
				out = append(out, draftConn{"beamng", sig, c.name, v.Name})
				d.Connected = append(d.Connected, fmt.Sprintf("beamng.%s → %s.%s%s", sig, c.name, v.Name, why))
			case "output":
				ctl, why := matchBeamNG(v, controls, beam, nil)
				if ctl == "" || driven[ctl] {
					d.Unconnected = append(d.Unconnected, fmt.Sprintf("%s.%s drives nothing (it is recorded)", c.name, v.Name))
					continue
				}
				driven[ctl] = true
				out = append(out, draftConn{c.name, v.Name, "beamng", ctl})
				d.Connected = append(d.Connected, fmt.Sprintf("%s.%s → beamng.%s%s", c.name, v.Name, ctl, why))
			}
		}
	}
	return out
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// matchBeamNG finds BeamNG's field among names for FMU variable v: by its
// name, a case or typo of it, or for an input the one signal of its
// unit's quantity; why says how, when not by the name itself.
func matchBeamNG(v fmu.Variable, names []string, beam map[string]beamngVar, st *fmu.Structure) (string, string) {
	if slices.Contains(names, v.Name) {
		return v.Name, ""
	}
	for _, n := range names {
		if strings.EqualFold(n, v.Name) {
			return n, " (its name in another case: check it)"
		}
	}
	if s := suggest.Closest(v.Name, names); s != "" && len(v.Name) > 3 {
		return s, " (the closest name: check it)"
	}
	if st == nil || v.Unit == "" {
		return "", ""
	}
	want, ok := st.Units[v.Unit]
	if !ok {
		want, ok = commonUnits[v.Unit]
	}
	if !ok || want.Exp == (fmu.BaseUnit{}).Exp {
		return "", ""
	}
	var same []string
	for _, n := range names {
		if b, ok := commonUnits[beam[n].unit]; ok && b.SameDimension(want) {
			same = append(same, n)
		}
	}
	if len(same) == 1 {
		return same[0], fmt.Sprintf(" (the only one of BeamNG's signals of its unit's quantity, converted to %s: check it)", v.Unit)
	}
	return "", ""
}

// parameterSet is the FMUs' parameters at their start values, named
// COMPONENT.PARAMETER for the system's binding.
func parameterSet(comps []draftComp) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<ssv:ParameterSet xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues" version="2.0" name="parameters">
  <ssv:Parameters>
`)
	for _, c := range comps {
		for _, v := range c.desc.Variables {
			if v.Causality != "parameter" || !v.Kind.Numeric() || v.Array || v.Variability == "constant" {
				continue
			}
			typ, value := "Real", orZero(strings.TrimSpace(v.Start))
			switch {
			case v.Kind == fmu.Bool:
				typ = "Boolean"
				if value == "1" {
					value = "true"
				} else if value == "0" {
					value = "false"
				}
			case v.Kind.Integer() && v.Kind != fmu.Enum:
				typ = "Integer"
			case v.Kind == fmu.Enum:
				typ = "Integer"
			}
			fmt.Fprintf(&b, "    <ssv:Parameter name=%s><ssv:%s value=%s/></ssv:Parameter>\n", attr(c.name+"."+v.Name), typ, attr(value))
		}
	}
	b.WriteString("  </ssv:Parameters>\n</ssv:ParameterSet>\n")
	return b.Bytes()
}

// attr quotes an attribute's value.
func attr(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return `"` + strings.ReplaceAll(b.String(), `"`, "&quot;") + `"`
}

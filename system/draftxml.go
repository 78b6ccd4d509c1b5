package system

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"beamconnect/fmu"
)

// ssdWriter writes a draft's SystemStructure.ssd: elements, connections,
// the system's parameter binding, the units its connectors name.
type ssdWriter struct {
	name     string
	elements bytes.Buffer
	conns    bytes.Buffer
	units    map[string]fmu.BaseUnit
}

func newSSDWriter(name string) *ssdWriter {
	return &ssdWriter{name: name, units: map[string]fmu.BaseUnit{}}
}

// connector writes one connector; unit "" writes none.
func (w *ssdWriter) connector(name, kind, typ, unit string, base fmu.BaseUnit, known bool) {
	u := ""
	if unit != "" && known && (typ == "Real" || typ == "Float64" || typ == "Float32") {
		u = " unit=" + attr(unit)
		w.units[unit] = base
	}
	fmt.Fprintf(&w.elements, "          <ssd:Connector name=%s kind=%q><ssc:%s%s/></ssd:Connector>\n", attr(name), kind, typ, u)
}

// beamng writes BeamNG's component: every field of the config a
// connector, those the draft connects first.
func (w *ssdWriter) beamng(cfg string, beam map[string]beamngVar, conns []draftConn) {
	fmt.Fprintf(&w.elements, "      <ssd:Component name=\"beamng\" type=%q source=%s description=\"BeamNG, coupled as the config says\">\n        <ssd:Connectors>\n", TypeConfig, attr(cfg))
	used := map[string]bool{}
	for _, c := range conns {
		if c.fromComp == "beamng" {
			used[c.from] = true
		}
		if c.toComp == "beamng" {
			used[c.to] = true
		}
	}
	names := slices.Sorted(maps.Keys(beam))
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case used[a] && !used[b]:
			return -1
		case used[b] && !used[a]:
			return 1
		}
		return 0
	})
	for _, n := range names {
		v := beam[n]
		kind := "output"
		if v.input {
			kind = "input"
		}
		base, known := commonUnits[v.unit]
		w.connector(n, kind, "Real", v.unit, base, known)
	}
	w.elements.WriteString("        </ssd:Connectors>\n      </ssd:Component>\n")
}

// ssdTypes are the connector types of FMU variables: SSP 2.0's names
// (FMI 2.0's Real and Integer are SSP's Real and Integer).
func ssdType(v *fmu.Variable) string {
	if v.Type == "Enumeration" {
		return "Integer" // an Enumeration connector names its type, which the draft does not define
	}
	return v.Type
}

// fmu writes an FMU's component: its inputs, outputs and parameters as
// connectors.
func (w *ssdWriter) fmu(c draftComp) {
	impl := ""
	if c.desc.CoSim != nil {
		impl = ` implementation="CoSimulation"`
	}
	fmt.Fprintf(&w.elements, "      <ssd:Component name=%s source=%s%s description=%s>\n        <ssd:Connectors>\n", attr(c.name), attr(c.file), impl, attr("the FMU "+c.desc.ModelName))
	n := 0
	for i := range c.desc.Variables {
		v := &c.desc.Variables[i]
		if !v.Kind.Numeric() || v.Array || v.Kind == fmu.Enum || v.Causality != "input" && v.Causality != "output" && v.Causality != "parameter" {
			continue
		}
		base, known := c.st.Units[v.Unit]
		if !known {
			base, known = commonUnits[v.Unit]
		}
		w.connector(v.Name, v.Causality, ssdType(v), v.Unit, base, known)
		n++
	}
	if n == 0 {
		w.elements.Truncate(w.elements.Len() - len("        <ssd:Connectors>\n"))
		w.elements.WriteString("      </ssd:Component>\n")
		return
	}
	w.elements.WriteString("        </ssd:Connectors>\n      </ssd:Component>\n")
}

func (w *ssdWriter) connections(conns []draftConn) {
	for _, c := range conns {
		fmt.Fprintf(&w.conns, "      <ssd:Connection startElement=%s startConnector=%s endElement=%s endConnector=%s/>\n",
			attr(c.fromComp), attr(c.from), attr(c.toComp), attr(c.to))
	}
}

// finish is the .ssd's text.
func (w *ssdWriter) finish() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon" version="2.0" name=%s generationTool="beamconnect init --ssp">
  <ssd:System name=%s>
    <ssd:ParameterBindings>
      <ssd:ParameterBinding source="resources/parameters.ssv"/>
    </ssd:ParameterBindings>
    <ssd:Elements>
`, attr(w.name), attr(w.name))
	b.Write(w.elements.Bytes())
	b.WriteString("    </ssd:Elements>\n")
	if w.conns.Len() > 0 {
		b.WriteString("    <ssd:Connections>\n")
		b.Write(w.conns.Bytes())
		b.WriteString("    </ssd:Connections>\n")
	}
	b.WriteString("  </ssd:System>\n")
	if len(w.units) > 0 {
		b.WriteString("  <ssd:Units>\n")
		for _, name := range slices.Sorted(maps.Keys(w.units)) {
			u := w.units[name]
			var parts []string
			for i, e := range u.Exp {
				if e != 0 {
					parts = append(parts, fmt.Sprintf("%s=\"%d\"", fmu.BaseUnitNames[i], e))
				}
			}
			if u.Factor != 1 {
				parts = append(parts, fmt.Sprintf("factor=\"%s\"", num(u.Factor)))
			}
			if u.Offset != 0 {
				parts = append(parts, fmt.Sprintf("offset=\"%s\"", num(u.Offset)))
			}
			fmt.Fprintf(&b, "    <ssc:Unit name=%s><ssc:BaseUnit %s/></ssc:Unit>\n", attr(name), strings.Join(parts, " "))
		}
		b.WriteString("  </ssd:Units>\n")
	}
	b.WriteString("</ssd:SystemStructureDescription>\n")
	return b.Bytes()
}

func num(x float64) string { return fmt.Sprintf("%.17g", x) }

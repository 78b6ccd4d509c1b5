package ssp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/config"
)

func read(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// parseAny reads a fixture by its extension.
func parseAny(file string, data []byte) (ok bool, ds config.Diagnostics) {
	switch filepath.Ext(file) {
	case ".ssv":
		s, ds := ParseSSV(file, data)
		return s != nil, ds
	case ".ssm":
		m, ds := ParseSSM(file, data)
		return m != nil, ds
	}
	d, ds := ParseSSD(file, data)
	return d != nil, ds
}

// Every file the schemas refuse is refused with what is wrong, where it
// is, and what was expected.
func TestSchemaRefuses(t *testing.T) {
	for _, tt := range []struct {
		file, at, want string
	}{
		{"kind.ssd", "19:40", `<Connector kind>: "outpt" is none of input, output, parameter, calculatedParameter, structuralParameter, constant, local, inout, unspecified (did you mean "output"?)`},
		{"unexpected.ssd", "41:5", `<Connectionz> is no element of <System> (did you mean <Connections>?): expected one of <Connections>, <SignalDictionaries>, <SystemGeometry>, <GraphicalElements>, <Annotations>`},
		{"required.ssd", "42:7", `<Connection> lacks its attribute endConnector`},
		{"version.ssd", "6:5", `<SystemStructureDescription version>: "2.1" does not match 1[.]0 or 2[.]0`},
		{"double.ssd", "44:35", `<LinearTransformation factor>: "half" is not a number (xs:double)`},
		{"empty-name.ssd", "9:22", `<Component name>: expected at least one character`},
		{"order.ssd", "51:3", `<Enumerations> is not expected here in <SystemStructureDescription>: expected one of <MetaData>, <Signature>, <Annotations>`},
		{"text.ssd", "8:19", `<Elements> holds elements only, not text`},
		{"two-types.ssd", "18:75", `<Integer> is not expected here in <Connector>: expected one of <Dimension>, <Clock>, <ConnectorGeometry>, <Annotations>`},
		{"unknown-attr.ssd", "16:40", `<Component> has no attribute sorce (did you mean source?)`},
		{"duplicate-id.ssd", "9:22", `<Component id>: "a" is the id of another element too (line 7): expected ids unique in the file`},
		{"namespace.ssd", "2:1", `the root element <SystemStructureDescription> is none the schema declares: expected SystemStructureDescription (<SystemStructureDescription> is in the namespace "http://ssp-standard.org/SSP2/SystemStructureDescription": expected "http://ssp-standard.org/SSP1/SystemStructureDescription")`},
		{"not-well-formed.ssd", "40:5", `not well-formed XML: </ssd:Element> closes <ssd:Elements>`},
		{"unquoted.ssd", "11:50", `not well-formed XML: unquoted or missing attribute value in element`},
		{"no-system.ssd", "7:3", `<Enumerations> is not expected here in <SystemStructureDescription>: expected <System>`},
		{"datetime.ssd", "6:62", `<SystemStructureDescription generationDateAndTime>: "yesterday" is not a date and time such as 2024-05-17T09:30:00Z (xs:dateTime)`},
		{"unbounded.ssd", "57:55", `<DefaultExperiment> is not expected here in <SystemStructureDescription>: expected one of <MetaData>, <Signature>, <Annotations>`},
		{"inline.ssd", "30:54", `<Real> has no attribute vaIue (did you mean value?)`},
		{"real.ssv", "5:46", `<Real value>: "fast" in the list: "fast" is not a number (xs:double)`},
		{"int8.ssv", "7:43", `<Int8 value>: "300" in the list: 300 is beyond xs:byte (-128 to 127)`},
		{"no-parameters.ssv", "4:3", `<Units> is not expected here in <ParameterSet>: expected <Parameters>`},
		{"hex.ssv", "11:44", `<Binary value>: "0xff" is not hexadecimal bytes (xs:hexBinary)`},
		{"bool.ssm", "5:57", `<MappingEntry suppressUnitConversion>: "yes" is not true, false, 1 or 0 (xs:boolean)`},
		{"entry.ssm", "4:3", `<MappingEntry> lacks its attribute target`},
		{"xml-lang.ssd", "9:37", `<Component> has no attribute xml:lang: expected id, description, name, type, source, implementation`},
		{"xsi-type.ssd", "43:23", `<Connection xsi:type>: "foo" names no type the schema defines: expected no xsi:type (<Connection>'s type is the one its declaration defines)`},
		{"xsi-nil.ssd", "12:80", `<Real xsi:nil>: <Real> is not nillable (its declaration does not say nillable="true"): expected no xsi:nil`},
	} {
		t.Run(tt.file, func(t *testing.T) {
			file := filepath.Join("testdata", "invalid", tt.file)
			ok, ds := parseAny(file, read(t, file))
			if ok || ds.Errors() == 0 {
				t.Fatalf("read without an error: %v", ds)
			}
			want := file + ":" + tt.at + ": " + tt.want
			if !strings.Contains(ds.Error(), want) {
				t.Errorf("got\n%s\nwant\n%s", ds, want)
			}
		})
	}
}

// The valid fixtures read whole: what the system, its components,
// connectors, connections, units, bindings and parameters say.
func TestParseValid(t *testing.T) {
	d, ds := ParseSSD("valid.ssd", read(t, "testdata/valid.ssd"))
	if d == nil || len(ds) > 0 {
		t.Fatalf("%v", ds)
	}
	sys := d.System
	if d.Version != "2.0" || d.Name != "cruise" || sys.Name != "rig" || len(sys.Components) != 2 || len(sys.Connections) != 2 || *d.Stop != 10 {
		t.Fatalf("%+v %+v", d, sys)
	}
	veh, ctl := sys.Components[0], sys.Components[1]
	if veh.Type != "application/x-beamconnect-config" || veh.Source != "resources/vehicle.json" || ctl.Type != TypeFMU || ctl.Implementation != "CoSimulation" {
		t.Errorf("components %+v %+v", veh, ctl)
	}
	if c := ctl.Connectors[0]; c.Name != "speed" || c.Kind != "input" || c.Type != "Real" || c.Unit != "km/h" || c.Node.Pos.Line != 18 {
		t.Errorf("connector %+v at %v", c, c.Node.Pos)
	}
	if c := ctl.Connectors[2]; c.Type != "Enumeration" || c.Enum != "Mode" {
		t.Errorf("connector %+v", c)
	}
	if c := sys.Connections[1]; c.StartElement != "controller" || c.EndConnector != "throttle" || c.Transform == nil || c.Transform.Factor != 0.5 || c.Transform.Offset < 1e308 {
		t.Errorf("connection %+v %+v", c, c.Transform)
	}
	if u := d.Units["km/h"]; u == nil || u.Exp != [8]int{0, 1, -1} || u.Factor != 0.2777777777777778 {
		t.Errorf("unit %+v", u)
	}
	if len(ctl.Bindings) != 2 || ctl.Bindings[0].Source != "resources/params.ssv" || ctl.Bindings[0].Mapping.Source != "resources/params.ssm" ||
		ctl.Bindings[1].Inline == nil || ctl.Bindings[1].Inline.Parameters[0].Name != "ki" || ctl.Bindings[1].Inline.Parameters[0].Values[0] != "0.05" {
		t.Errorf("bindings %+v %+v", ctl.Bindings[0], ctl.Bindings[1])
	}
	s, ds := ParseSSV("valid.ssv", read(t, "testdata/valid.ssv"))
	if s == nil || len(ds) > 0 {
		t.Fatalf("%v", ds)
	}
	got := map[string]string{}
	for _, p := range s.Parameters {
		got[p.Name] = p.Type + " " + strings.Join(p.Values, "|") + " " + p.Unit
	}
	for name, want := range map[string]string{"setSpeed": "Real 72 km/h", "gains": "Float64 0.3|0.05 ", "limit": "Int8 -128 ",
		"on": "Boolean true ", "label": "String a b|c ", "mode": "Enumeration sport ", "blob": "Binary 0aff "} {
		if got[name] != want {
			t.Errorf("parameter %s: %q, want %q", name, got[name], want)
		}
	}
	m, ds := ParseSSM("valid.ssm", read(t, "testdata/valid.ssm"))
	if m == nil || len(ds) > 0 || len(m.Entries) != 3 || m.Entries[1].Transform.Factor != 0.2777777777777778 || !m.Entries[1].SuppressUnitConversion ||
		m.Entries[2].Transform.BoolMap[true] != false {
		t.Errorf("mapping %+v %v", m, ds)
	}
}

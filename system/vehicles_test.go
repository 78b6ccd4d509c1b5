package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/fmu/testfmu"
)

// writeSystem writes an .ssd of components and connections (XML
// fragments) beside files (name → content) into a folder of the test's.
func writeSystem(t *testing.T, elements, connections string, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	if connections != "" {
		connections = "    <ssd:Connections>\n" + connections + "\n    </ssd:Connections>"
	}
	ssd := filepath.Join(dir, "system.ssd")
	os.WriteFile(ssd, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues" version="2.0" name="test">
  <ssd:System name="test">
    <ssd:Elements>
`+elements+`
    </ssd:Elements>
`+connections+`
  </ssd:System>
</ssd:SystemStructureDescription>
`), 0o644)
	return ssd
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const cruiseComponent = `      <ssd:Component name="cruise" source="cruise.fmu">
        <ssd:Connectors>
          <ssd:Connector name="groundspeed" kind="input"/>
          <ssd:Connector name="throttle" kind="output"/>
          <ssd:Connector name="brake" kind="output"/>
        </ssd:Connectors>
      </ssd:Component>`

// Several vehicles are one component of BeamNG's (their fields as fmu
// export names them, ego.groundspeed) or one each (rig.json#ego, its own
// fields by their names); either way each connector is its vehicle's
// field, and the system, coupled with both vehicles, reads the vehicle its
// connections read.
func TestSeveralVehicles(t *testing.T) {
	files := map[string][]byte{
		"follow.json": readFile(t, "../examples/follow.json"),
		"cruise.fmu":  readFile(t, testfmu.ForTest(t, "cruise.fmu", testfmu.Options{})),
	}
	for _, tt := range []struct {
		name, elements, connections string
	}{
		{"one component", `      <ssd:Component name="beamng" type="application/x-beamconnect-config" source="follow.json">
        <ssd:Connectors>
          <ssd:Connector name="lead.groundspeed" kind="output"/>
          <ssd:Connector name="lead.throttle" kind="input"/>
          <ssd:Connector name="lead.brake" kind="input"/>
          <ssd:Connector name="ego.gap:lead" kind="output"/>
        </ssd:Connectors>
      </ssd:Component>
` + cruiseComponent, `      <ssd:Connection startElement="beamng" startConnector="lead.groundspeed" endElement="cruise" endConnector="groundspeed"/>
      <ssd:Connection startElement="cruise" startConnector="throttle" endElement="beamng" endConnector="lead.throttle"/>
      <ssd:Connection startElement="cruise" startConnector="brake" endElement="beamng" endConnector="lead.brake"/>`},
		{"a component each", `      <ssd:Component name="ego" type="application/x-beamconnect-config" source="follow.json#ego">
        <ssd:Connectors><ssd:Connector name="gap:lead" kind="output"/></ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="lead" type="application/x-beamconnect-config" source="follow.json#lead">
        <ssd:Connectors>
          <ssd:Connector name="groundspeed" kind="output"/>
          <ssd:Connector name="throttle" kind="input"/>
          <ssd:Connector name="brake" kind="input"/>
        </ssd:Connectors>
      </ssd:Component>
` + cruiseComponent, `      <ssd:Connection startElement="lead" startConnector="groundspeed" endElement="cruise" endConnector="groundspeed"/>
      <ssd:Connection startElement="cruise" startConnector="throttle" endElement="lead" endConnector="throttle"/>
      <ssd:Connection startElement="cruise" startConnector="brake" endElement="lead" endConnector="brake"/>`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSystem(t, tt.elements, tt.connections, files)
			sys, ds, err := Load(path)
			if err != nil || sys == nil || !strings.Contains(ds.Error(), `the config's model "follow" does not run in a system`) {
				t.Fatalf("%v\n%v", err, ds)
			}
			defer sys.Close()
			for _, l := range sys.Links {
				if c := sys.Components[l.From]; c.BeamNG && l.FromConn.Elem.Vehicle != 1 {
					t.Errorf("%s.%s is vehicle %d's field: want the lead's (1)", c.Name, l.FromConn.Name, l.FromConn.Elem.Vehicle)
				}
			}
			m, err := New(sys, sys.Plan, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Reads(0) || !m.Reads(1) {
				t.Errorf("reads the ego %v, the lead %v: want the lead only", m.Reads(0), m.Reads(1))
			}
			r := couple(t, sys, m, emulator.Config{Steps: 20000, FreeRunning: true}, nil, nil)
			r.run(t)
			if v := r.s.Values(); v[coupling.ModelFaults] != 0 || r.ems[1].Vehicle().V < 5 {
				t.Errorf("faults %d; the lead drives %.1f m/s: want it driven by the cruise FMU toward 20\n%s", v[coupling.ModelFaults], r.ems[1].Vehicle().V, r.log)
			}
		})
	}
	path := writeSystem(t, `      <ssd:Component name="ego" type="application/x-beamconnect-config" source="follow.json#eg0"/>`, "", files)
	if _, ds, _ := Load(path); !strings.Contains(ds.Error(), "the source's #eg0 names no vehicle of the config: it couples ego, lead (did you mean #ego?)") {
		t.Errorf("a vehicle misspelt: %v", ds)
	}
}

// An input no connection feeds keeps the value a parameter set gives it
// (an inline one here), at every step; the recording shows it as the FMU
// was given it. A model exchange FMU is a component as a co-simulation
// one is, integrated by beamconnect.
func TestUnfedInputsAndModelExchange(t *testing.T) {
	files := map[string][]byte{
		"vehicle.json": readFile(t, "testdata/vehicle.json"),
		"cruise.fmu":   readFile(t, testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 3})),
		"decay.fmu":    readFile(t, testfmu.MEForTest(t, "decay.fmu", testfmu.MEOptions{FMI: 2, Model: "decay"})),
	}
	path := writeSystem(t, `      <ssd:Component name="vehicle" type="application/x-beamconnect-config" source="vehicle.json">
        <ssd:Connectors>
          <ssd:Connector name="groundspeed" kind="output"/>
          <ssd:Connector name="throttle" kind="input"/>
        </ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="cruise" source="cruise.fmu">
        <ssd:Connectors>
          <ssd:Connector name="groundspeed" kind="input"/>
          <ssd:Connector name="throttle" kind="output"/>
        </ssd:Connectors>
        <ssd:ParameterBindings>
          <ssd:ParameterBinding>
            <ssd:ParameterValues>
              <ssv:ParameterSet version="2.0" name="held">
                <ssv:Parameters><ssv:Parameter name="groundspeed"><ssv:Real value="15"/></ssv:Parameter></ssv:Parameters>
              </ssv:ParameterSet>
            </ssd:ParameterValues>
          </ssd:ParameterBinding>
        </ssd:ParameterBindings>
      </ssd:Component>
      <ssd:Component name="decay" source="decay.fmu" implementation="ModelExchange">
        <ssd:Connectors>
          <ssd:Connector name="u" kind="input"/>
          <ssd:Connector name="x" kind="output"/>
        </ssd:Connectors>
      </ssd:Component>`,
		`      <ssd:Connection startElement="cruise" startConnector="throttle" endElement="vehicle" endConnector="throttle"/>
      <ssd:Connection startElement="vehicle" startConnector="groundspeed" endElement="decay" endConnector="u"/>`, files)
	sys := load(t, path)
	m, err := New(sys, sys.Plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rec := record(t, sys.Plan)
	r := couple(t, sys, m, emulator.Config{Steps: 10000, FreeRunning: true}, nil, func(o *coupling.Options) { o.Record = rec.rec })
	r.run(t)
	rows := rec.rows(t)
	got := rows[len(rows)-1] // the recording's last row
	if v := r.s.Values(); v[coupling.ModelFaults] != 0 || v[coupling.SolverSteps] == 0 || got["cruise.groundspeed"] != 15 || got["decay.x"] <= 0 ||
		got["decay.u"] != got["vehicle.groundspeed"] {
		t.Errorf("faults %d, solver steps %d; at the end %v\n%s", v[coupling.ModelFaults], v[coupling.SolverSteps], got, r.log)
	}
	if !slicesContain(m.Notes(), "decay: decay.fmu: FMI 2.0 model exchange, integrated by beamconnect") {
		t.Errorf("notes %q", m.Notes())
	}
	// The live page draws each component as a group of its own.
	groups := map[string]string{}
	for _, c := range coupling.ScopeColumns(sys.Plan, m.Variables()) {
		groups[c.Name] = c.Port
	}
	if groups["decay.x"] != "decay" || groups["cruise.throttle"] != "cruise" || groups["out1.groundspeed"] != "out1" {
		t.Errorf("the live page's groups: %v", groups)
	}
}

func slicesContain(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

package fmu

import (
	"slices"
	"testing"
)

// Units in SI base units, outputs' direct dependencies on inputs (listed,
// none, or by default all of them) and FMI 3.0's aliases, from both
// versions' descriptions.
func TestStructure(t *testing.T) {
	for _, tt := range []struct {
		name, xml string
	}{
		{"FMI 2.0", `<fmiModelDescription fmiVersion="2.0" modelName="m" guid="g">
  <CoSimulation modelIdentifier="m"/>
  <UnitDefinitions><Unit name="km/h"><BaseUnit m="1" s="-1" factor="0.2777777777777778"/></Unit><Unit name="plain"/></UnitDefinitions>
  <ModelVariables>
    <ScalarVariable name="u1" valueReference="1" causality="input"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="u2" valueReference="2" causality="input"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="x" valueReference="3" causality="local"><Real/></ScalarVariable>
    <ScalarVariable name="y1" valueReference="4" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="y2" valueReference="5" causality="output"><Real/></ScalarVariable>
    <ScalarVariable name="y3" valueReference="6" causality="output"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="4" dependencies="2 3"/><Unknown index="5" dependencies=""/><Unknown index="6"/></Outputs></ModelStructure>
</fmiModelDescription>`},
		{"FMI 3.0", `<fmiModelDescription fmiVersion="3.0" modelName="m" instantiationToken="g">
  <CoSimulation modelIdentifier="m"/>
  <UnitDefinitions><Unit name="km/h"><BaseUnit m="1" s="-1" factor="0.2777777777777778"/></Unit></UnitDefinitions>
  <ModelVariables>
    <Float64 name="u1" valueReference="11" causality="input" start="0"><Alias name="first"/></Float64>
    <Float64 name="u2" valueReference="12" causality="input" start="0"/>
    <Float64 name="x" valueReference="13" causality="local"/>
    <Float64 name="y1" valueReference="14" causality="output"/>
    <Float64 name="y2" valueReference="15" causality="output"/>
    <Float64 name="y3" valueReference="16" causality="output"/>
  </ModelVariables>
  <ModelStructure><Output valueReference="14" dependencies="12 13"/><Output valueReference="15" dependencies=""/><Output valueReference="16"/></ModelStructure>
</fmiModelDescription>`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseDescription([]byte(tt.xml))
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseStructure([]byte(tt.xml), d)
			if err != nil {
				t.Fatal(err)
			}
			if u := s.Units["km/h"]; u.Exp != [8]int{0, 1, -1} || u.Factor != 0.2777777777777778 {
				t.Errorf("km/h: %+v", u)
			}
			if !slices.Equal(s.Feedthrough["y1"], []string{"u2"}) || len(s.Feedthrough["y2"]) != 0 || !slices.Equal(s.Feedthrough["y3"], []string{"u1", "u2"}) {
				t.Errorf("feedthrough %v", s.Feedthrough)
			}
			if tt.name == "FMI 3.0" && s.Aliases["first"] != "u1" {
				t.Errorf("aliases %v", s.Aliases)
			}
		})
	}
}

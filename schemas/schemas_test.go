package schemas

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
)

func TestConfigCompiles(t *testing.T) {
	if Config() == nil {
		t.Fatal("no schema")
	}
}

// Editors show a property's description as help, so every property of every
// object in the schema must carry one.
func TestEveryPropertyDescribed(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(ConfigJSON, &root); err != nil {
		t.Fatal(err)
	}
	if root["$id"] != ConfigURL {
		t.Errorf("$id %v, want %s", root["$id"], ConfigURL)
	}
	var walk func(path string, node any)
	count := 0
	walk = func(path string, node any) {
		switch n := node.(type) {
		case map[string]any:
			if props, ok := n["properties"].(map[string]any); ok {
				for name, p := range props {
					count++
					pm, _ := p.(map[string]any)
					d, _ := pm["description"].(string)
					_, isRef := pm["$ref"]
					if strings.TrimSpace(d) == "" && !isRef {
						t.Errorf("%s/properties/%s has no description", path, name)
					}
				}
			}
			for k, v := range n {
				walk(path+"/"+k, v)
			}
		case []any:
			for _, v := range n {
				walk(path, v)
			}
		}
	}
	walk("#", root)
	if count < 40 {
		t.Errorf("only %d properties found; the walk is broken", count)
	}
	// A $ref'd property is described at its definition.
	defs := root["$defs"].(map[string]any)
	for name, d := range defs {
		if s, _ := d.(map[string]any)["description"].(string); s == "" {
			t.Errorf("$defs/%s has no description", name)
		}
	}
}

func TestProperties(t *testing.T) {
	for _, tt := range []struct {
		name string
		at   string
		want []string
	}{
		{"root", "#", []string{"$schema", "beamng", "inputs", "outputs", "remoteIP", "remoteObject", "remotePort", "timeDilation", "version"}},
		{"field", "#/$defs/field", []string{"arraySize", "dataSize", "dataType", "initialValue", "invalidValue", "params", "propertyName", "propertyType", "remoteObject"}},
		{"vehicle", "#/$defs/vehicle", []string{"interface", "localIP", "localPort", "remoteIP", "remotePort"}},
		{"no such definition", "#/$defs/nothing", []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Properties(tt.at)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Properties(%q) = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// Editors offer propertyName's examples as completions: they must hold every
// name of both of BeamNG's catalogues (Gen 1 banks, Gen 2 co-simulation
// signals with their wheel ids), so neither generation is left out.
func TestPropertyNameExamples(t *testing.T) {
	var root struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Examples []string `json:"examples"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(ConfigJSON, &root); err != nil {
		t.Fatal(err)
	}
	var examples []string
	for _, d := range root.Defs {
		if p, ok := d.Properties["propertyName"]; ok {
			examples = p.Examples
		}
	}
	var want []string
	for _, d := range []beamng.Direction{beamng.FromBeamNG, beamng.ToBeamNG} {
		for _, s := range beamng.Signals(d)[1:] {
			want = append(want, s.Name)
		}
	}
	for _, d := range cosim.Catalogue() {
		switch d.Group {
		case "Wheels":
			for _, w := range beamng.Wheels {
				want = append(want, d.Name+w)
			}
		case "Powertrain": // "<device> <field>": the device is the vehicle's
		default:
			want = append(want, d.Name)
		}
	}
	for _, n := range want {
		if !slices.Contains(examples, n) {
			t.Errorf("propertyName examples lack %q", n)
		}
	}
}

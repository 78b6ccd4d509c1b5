package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/config"
)

const gen2Example = "../../examples/gen2-cruise.json"

// A config written JSON-first: `csv` writes its CSV, and the config then
// loads with that CSV into the plan the draft described: the same layout,
// period, addresses and fields.
func TestCSVRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, _ := os.ReadFile(gen2Example)
	cfgPath := filepath.Join(dir, "rig.json")
	data = []byte(strings.Replace(string(data), `"interface": "gen2-cruise.csv"`, `"interface": "rig.csv"`, 1))
	data = []byte(strings.Replace(string(data), `"updatePeriodMs": 5`, `"updatePeriodMs": 2`, 2))
	os.WriteFile(cfgPath, data, 0o644)
	if _, err := config.Load(cfgPath); err == nil || !strings.Contains(err.Error(), "rig.csv does not exist") {
		t.Fatalf("before the CSV exists: %v", err)
	}
	draft, err := config.LoadJSONFirst(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := config.Compile(draft)
	csvPath := filepath.Join(dir, "rig.csv")
	_, errOut, code := exec(t, nil, "csv", cfgPath, "-o", csvPath)
	if code != exitOK || !strings.Contains(errOut, "every 2 ms") {
		t.Fatalf("csv: exit %d\n%s", code, errOut)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("the written CSV: %v", err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("warnings: %v", cfg.Warnings.Error())
	}
	got, _ := config.Compile(cfg)
	if !got.Vehicles[0].Layout.Equal(want.Vehicles[0].Layout) || got.Period != 0.002 || got.SendSkips != 3 || got.Vehicles[0].Local != want.Vehicles[0].Local ||
		got.Vehicles[0].Remote != want.Vehicles[0].Remote || len(got.Inputs) != len(want.Inputs) || len(got.Outputs) != len(want.Outputs) {
		t.Errorf("the plan changed through the CSV: period %v (skips %d), layouts equal %v", got.Period, got.SendSkips, got.Vehicles[0].Layout.Equal(want.Vehicles[0].Layout))
	}
	for i := range got.Outputs {
		for j := range got.Outputs[i].Fields {
			if got.Outputs[i].Fields[j].Slot != want.Outputs[i].Fields[j].Slot {
				t.Errorf("out %d field %d moved", i, j)
			}
		}
	}
	// Refused: writing over the config, or over a file without --force.
	if _, _, code := exec(t, nil, "csv", cfgPath, "-o", cfgPath); code != exitFailed {
		t.Error("csv wrote over its config")
	}
	if _, errOut, code := exec(t, nil, "csv", cfgPath, "-o", csvPath); code != exitFailed || !strings.Contains(errOut, "--force") {
		t.Errorf("csv overwrote an existing file: %d %s", code, errOut)
	}
	// A Gen 1 config has no CSV.
	if _, errOut, code := exec(t, nil, "csv", pedals); code != exitFailed || !strings.Contains(errOut, `"protocol": "csv"`) {
		t.Errorf("csv of a Gen 1 config: %d %s", code, errOut)
	}
}

// A Gen 2 name the catalogue does not know is refused by csv, placed.
func TestCSVDraftErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "rig.json")
	os.WriteFile(path, []byte(`{"version": 2,
  "outputs": [{"ports": [[{"propertyName": "vehicleGrundSpeed"}, {"propertyName": "throttle"}]]}],
  "inputs": [{"ports": [[{"propertyName": "vehicleYaw"}]]}],
  "beamng": {"protocol": "csv", "interface": "rig.csv"}}`), 0o644)
	_, errOut, code := exec(t, nil, "csv", path)
	for _, want := range []string{
		`rig.json:2:44: outputs[0].ports[0][0].propertyName: "vehicleGrundSpeed" is not a signal BeamNG sends (did you mean "vehicleGroundSpeed"?)`,
		`rig.json:2:83: outputs[0].ports[0][1].propertyName: "throttle" is in more than one group: expected "Driver/throttle" or "Electrics/throttle"`,
		`rig.json:3:43: inputs[0].ports[0][0].propertyName: "vehicleYaw" is not a signal BeamNG applies (Driver or Wheels)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("missing %q in\n%s", want, errOut)
		}
	}
	if code != exitFailed {
		t.Errorf("exit %d", code)
	}
}

// init --from-csv on a CSV with every group of the catalogue writes a
// config that validates as is and maps every row.
func TestInitFromCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := &cosim.File{Other: cosim.DefaultOther, BeamNG: cosim.DefaultBeamNG, Time: cosim.Param{Value: 0.001}, Ping: cosim.Param{Value: 1e-5}}
	groups := map[string]string{"IMU": "IMU0", "GPS": "Front GPS", "Roads": "Local Roads [Info]"}
	for _, d := range cosim.Catalogue() {
		if d.Trap != "" {
			continue // warned about: a config that maps it validates with a warning
		}
		g := d.Group
		if s, ok := groups[g]; ok {
			g = s
		}
		name := d.Name
		if g == "Wheels" {
			name += "FL"
		}
		f.To = append(f.To, cosim.Row{Section: "signalTo", Group: g, Name: name})
		if d.From {
			for _, k := range cosim.Kinds {
				f.From = append(f.From, cosim.Row{Section: "signalFrom", Group: g, Name: name, Value: k})
			}
		}
	}
	csvPath := filepath.Join(dir, "all.csv")
	os.WriteFile(csvPath, f.Encode(""), 0o644)
	cfgPath := filepath.Join(dir, "sub", "rig.json")
	os.Mkdir(filepath.Dir(cfgPath), 0o755)
	_, errOut, code := exec(t, nil, "init", "--from-csv", csvPath, "-o", cfgPath)
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, errOut)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("the written config does not validate:\n%v", err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("warnings:\n%v", cfg.Warnings.Error())
	}
	plan, _ := config.Compile(cfg)
	mapped := func(dir beamng.Direction) int {
		n := 0
		list := plan.Outputs
		if dir == beamng.ToBeamNG {
			list = plan.Inputs
		}
		for _, p := range list[1:] {
			n += p.Width
		}
		return n
	}
	if mapped(beamng.FromBeamNG) != len(f.To) || mapped(beamng.ToBeamNG) != len(f.From) {
		t.Errorf("mapped %d of %d signalTo rows, %d of %d signalFrom rows", mapped(beamng.FromBeamNG), len(f.To), mapped(beamng.ToBeamNG), len(f.From))
	}
	if plan.Period != 0.0015 {
		t.Errorf("period %v: want what BeamNG really sends for 0.001 (3 steps, 1.5 ms)", plan.Period)
	}
	var raw struct {
		BeamNG struct{ Interface string }
	}
	b, _ := os.ReadFile(cfgPath)
	json.Unmarshal(b, &raw)
	if raw.BeamNG.Interface != "../all.csv" {
		t.Errorf("interface %q, want the CSV relative to the config", raw.BeamNG.Interface)
	}
}

// The Gen 2 example runs on the emulator like the Gen 1 ones: healthy, and
// compile explains how to start BeamNG's side.
func TestRunGen2Example(t *testing.T) {
	t.Parallel()
	r, errOut := runJSON(t, gen2Example, "--emulate", "--free-running", "--sim-duration", "2s")
	if r.Messages != 400 || r.Replies != r.Messages || r.Dropped != 0 || r.Emulator == nil || r.Emulator.Stalls != 0 {
		t.Errorf("summary %+v\n%s", r, errOut)
	}
	out, _, code := exec(t, nil, "compile", gen2Example)
	if code != exitOK || !strings.Contains(out, "Co-Simulation Signal Editor") || !hasRow(out, "in 1 0 Driver/throttle to BeamNG 1 line 9 - inputs[0]") ||
		!strings.Contains(out, "{type='number', groupName='Driver', name='steeringWheelPosition', isValue=true, isMultiply=false, isAdd=false, isFreeze=false}") ||
		!strings.Contains(out, "time3rdParty=0.0049999999999999, pingTime=1e-05, udpSendPort=64890, udpReceivePort=64891") {
		t.Errorf("compile:\n%s", out)
	}
	out, _, code = exec(t, nil, "banks", "--protocol", "csv", "--json", "wheelSpeed")
	if code != exitOK || !strings.Contains(out, `"name": "wheelSpeed<FL|FR|RL|RR>"`) || !strings.Contains(out, `"gen1": "wheel<W>_wheelSpeed"`) {
		t.Errorf("banks --protocol csv:\n%s", out)
	}
}

// emulate --csv stands in for a Gen 2 BeamNG from a CSV alone.
func TestEmulateCSV(t *testing.T) {
	t.Parallel()
	out, errOut, code := exec(t, nil, "emulate", "--csv", "../../examples/gen2-cruise.csv", "--listen", "127.0.0.1:0", "--client", "127.0.0.1:9", "--steps", "25", "--free-running", "--json")
	if code != exitOK || !strings.Contains(errOut, "cosimulationCoupling") || !strings.Contains(errOut, "sends_doubles=8") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Nobody answers: a send, BeamNG's 2 s blocking receive when the
	// window is full, another send.
	var sum struct {
		Sent      int64
		SendSkips int64 `json:"send_skips"`
		Stalls    int64
	}
	json.Unmarshal([]byte(out), &sum)
	if sum.Sent < 2 || sum.SendSkips != 9 || sum.Stalls < 1 {
		t.Errorf("%+v: want sends 10 steps apart (the CSV's 5 ms) around a stall", sum)
	}
}

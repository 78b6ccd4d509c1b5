// Package examples holds the example rig configs; its test checks that each
// one is valid, points editors at the schema, and maps what its name says.
package examples

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/config/configtest"
	"beamconnect/ports"
	"beamconnect/relative"
)

func load(t *testing.T, name string) *ports.Plan {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		t.Fatal(err)
	}
	if head.Schema != "../schemas/config.schema.json" {
		t.Errorf("%s: $schema is %q", name, head.Schema)
	} else if _, err := os.Stat(filepath.Join(filepath.Dir(name), head.Schema)); err != nil {
		t.Errorf("%s: $schema does not point at the schema: %v", name, err)
	}
	cfg, err := config.Parse(name, data)
	if err != nil {
		t.Fatalf("%s:\n%v", name, err)
	}
	if want := expectedWarning[name]; want != "" {
		if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings.Error(), want) {
			t.Errorf("%s: want the one warning %q, got:\n%v", name, want, cfg.Warnings)
		}
	} else if len(cfg.Warnings) > 0 {
		t.Errorf("%s has warnings:\n%v", name, cfg.Warnings.Error())
	}
	p, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// expectedWarning is the warning an example is meant to give.
var expectedWarning = map[string]string{
	// BeamNG on another machine: beamconnect binds an address of its LAN.
	"two-machines.json": "192.168.10.30 is not a loopback address",
}

// slots lists the message slots the plan maps in a direction.
func slots(p *ports.Plan, dir beamng.Direction) map[string]bool {
	out := map[string]bool{}
	list := p.Outputs
	if dir == beamng.ToBeamNG {
		list = p.Inputs
	}
	for _, port := range list {
		for i := range port.Fields {
			f := &port.Fields[i]
			if f.Source != ports.Slot {
				continue
			}
			for k := range f.Width {
				out[f.Signal(dir, k).Name] = true
			}
		}
	}
	return out
}

func TestEveryExampleIsChecked(t *testing.T) {
	files, _ := filepath.Glob("*.json")
	if len(files) < 4 {
		t.Fatalf("%d examples", len(files))
	}
	for _, f := range files {
		load(t, f)
	}
}

func TestCruisePedals(t *testing.T) {
	p := load(t, "cruise-pedals.json")
	in := slots(p, beamng.ToBeamNG)
	if !in["throttle"] || !in["brake"] || !in["driveMode"] || len(in) != 3 {
		t.Errorf("inputs %v", in)
	}
	if !slots(p, beamng.FromBeamNG)["groundspeed"] {
		t.Error("the speed is not read")
	}
	if p.Vehicles[0].Template[13] != 0 {
		t.Error("drive mode does not start in pedal mode")
	}
}

func TestCruiseTorque(t *testing.T) {
	p := load(t, "cruise-torque.json")
	in := slots(p, beamng.ToBeamNG)
	for _, w := range beamng.Wheels {
		if !in["wheel"+w+"_propulsionTorque"] || !in["wheel"+w+"_brakingTorque"] {
			t.Errorf("wheel %s torques not sent", w)
		}
	}
	if in["throttle"] || in["brake"] {
		t.Error("pedals sent in a torque rig")
	}
	// BeamNG applies wheel torques only with drive mode ≥ 0.5, from the first reply.
	if p.Vehicles[0].Template[13] != 1 {
		t.Errorf("drive mode starts at %v, want 1 (torques)", p.Vehicles[0].Template[13])
	}
}

func TestHeadingHold(t *testing.T) {
	p := load(t, "heading-hold.json")
	if !slots(p, beamng.ToBeamNG)["steering"] || !slots(p, beamng.FromBeamNG)["yaw"] {
		t.Error("heading hold must read yaw and write steering")
	}
}

func TestLoggingReadsEverythingSendsNothing(t *testing.T) {
	p := load(t, "logging.json")
	got := slots(p, beamng.FromBeamNG)
	for _, s := range beamng.Signals(beamng.FromBeamNG)[1:] {
		if !got[s.Name] {
			t.Errorf("%s (%s) is not logged", s.Ref, s.Name)
		}
	}
	if n := len(slots(p, beamng.ToBeamNG)); n != 0 {
		t.Errorf("a logging rig sends %d values", n)
	}
}

// The Gen 2 fleet: each vehicle laid out and addressed by its own CSV, the
// cross-vehicle fields computed from rows both CSVs list.
func TestGen2Follow(t *testing.T) {
	p := load(t, "gen2-follow.json")
	if len(p.Vehicles) != 2 || p.Vehicles[0].CSV.Path != "gen2-follow-ego.csv" || p.Vehicles[1].CSV.Path != "gen2-follow-lead.csv" ||
		p.Vehicles[1].Local.Port() != 64892 || p.Vehicles[1].Remote.Port() != 64893 {
		t.Fatalf("vehicles %+v", p.Vehicles)
	}
	for v, veh := range p.Vehicles {
		for i, slot := range veh.State {
			if slot == 0 {
				t.Errorf("vehicle %d: no row for %s, which the cross-vehicle fields read", v, relative.Quantities[i])
			}
		}
	}
	if got := p.CSVPaths; len(got) != 2 || got[1] != "gen2-follow-lead.csv" {
		t.Errorf("CSVPaths %v", got)
	}
}

// Reloading a Gen 2 fleet config re-reads every vehicle's CSV: a CSV edit
// that changes a vehicle's layout is restart-only and names the vehicle; a
// mapping edit in the config is live.
func TestGen2FollowReload(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"gen2-follow.json", "gen2-follow-ego.csv", "gen2-follow-lead.csv"} {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	cfgPath := filepath.Join(dir, "gen2-follow.json")
	compile := func() *ports.Plan { return configtest.Plan(t, cfgPath) }
	old := compile()
	lead := filepath.Join(dir, "gen2-follow-lead.csv")
	b, _ := os.ReadFile(lead)
	os.WriteFile(lead, []byte(strings.Replace(string(b), "signalFrom,", "signalTo,Electrics,rpm,,number,,,\nsignalFrom,", 1)), 0o644)
	ch := ports.Diff(old, compile())
	if len(ch.RestartOnly) != 1 || !strings.Contains(ch.RestartOnly[0], `the CSV's message layout of vehicle "lead"`) {
		t.Errorf("the lead's CSV grew a row: %+v", ch)
	}
	os.WriteFile(lead, b, 0o644)
	c, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, []byte(strings.Replace(string(c), `{ "propertyName": "vehicleGroundSpeed" }, `, "", 1)), 0o644)
	if ch := ports.Diff(old, compile()); len(ch.RestartOnly) != 0 || len(ch.Live) == 0 {
		t.Errorf("a mapping edit: %+v", ch)
	}
}

// cruise-torque on Gen 2: the CSV lists the eight wheel torques, which
// BeamNG applies every step; there is no drive mode to send.
func TestGen2CruiseTorque(t *testing.T) {
	p := load(t, "gen2-cruise-torque.json")
	in := slots(p, beamng.ToBeamNG)
	for _, w := range beamng.Wheels {
		if !in["propulsionTorque"+w] || !in["brakingTorque"+w] {
			t.Errorf("wheel %s torques not sent", w)
		}
	}
	if len(in) != 8 {
		t.Errorf("inputs %v", in)
	}
}

// BeamNG on another machine: beamconnect binds its own LAN address, which
// BeamNG sends to, and sends to BeamNG's, which BeamNG binds; both go into
// the line that starts BeamNG's side.
func TestTwoMachines(t *testing.T) {
	p := load(t, "two-machines.json")
	v := p.Vehicles[0]
	if v.Local.String() != "192.168.10.30:64890" || v.Remote.String() != "192.168.10.20:64891" || !p.DebugFile {
		t.Errorf("local %v, remote %v, debug logs %v", v.Local, v.Remote, p.DebugFile)
	}
	cmd := p.StartCommand(0)
	for _, want := range []string{"udpSendIP='192.168.10.30'", "udpSendPort=64890", "udpReceiveIP='192.168.10.20'", "udpReceivePort=64891", "debugFile=true"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("the start command lacks %s: %s", want, cmd)
		}
	}
}

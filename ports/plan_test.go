package ports_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/contracts"
	"beamconnect/ports"
	"beamconnect/timesync"
)

func compile(t *testing.T, src string) *ports.Plan {
	t.Helper()
	cfg, err := config.Parse("rig.json", []byte(src))
	if err != nil {
		t.Fatalf("config:\n%v", err)
	}
	p, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const rig = `{
  "version": 2,
  "outputs": [
    { "updatePeriodMs": 5, "timeSyncMode": "absolute", "ports": [
      [ { "propertyName": "groundspeed" }, { "propertyName": "posX", "arraySize": 3 } ],
      [ { "propertyName": "time", "propertyType": "meta" }, { "propertyName": "G6", "invalidValue": -1 } ]
    ] },
    { "updatePeriodMs": 50, "ports": [ [ { "propertyName": "custom1", "arraySize": 50 } ] ] },
    { "groupType": "commData", "ports": [ [ { "propertyName": "ping_results", "arraySize": 6 } ] ] }
  ],
  "inputs": [
    { "ports": [
      [ { "propertyName": "throttle", "initialValue": 0.2 }, { "propertyName": "brake" } ],
      [ { "propertyName": "wheelFL_propulsionTorque", "arraySize": 4, "initialValue": 5 }, { "propertyName": "driveMode", "initialValue": 1 } ]
    ] }
  ]
}`

func TestCompileLayout(t *testing.T) {
	p := compile(t, rig)
	if p.Period != 0.005 || p.SendSkips != 9 || p.Unanswered != 1 || p.TimeSync != timesync.Slave || p.ReplyID != ports.ReplyNext {
		t.Errorf("plan header: period %v skips %d window %d sync %v reply %v", p.Period, p.SendSkips, p.Unanswered, p.TimeSync, p.ReplyID)
	}
	// Port 0 of each side: the directive (default 1: connect) and the status.
	if in0 := p.Inputs[0]; in0.Width != 1 || in0.Fields[0].Source != ports.DirectiveSource || in0.Fields[0].Initial != 1 || in0.Contract != -1 {
		t.Errorf("input port 0: %+v", in0)
	}
	if out0 := p.Outputs[0]; out0.Width != 1 || out0.Fields[0].Source != ports.StatusSource || out0.Contract != -1 {
		t.Errorf("output port 0: %+v", out0)
	}
	type want struct {
		dir          beamng.Direction
		port, field  int
		src          ports.Source
		slot, width  int
		offset       int
		meta         contracts.Meta
		initial, bad float64
	}
	for _, w := range []want{
		{beamng.FromBeamNG, 1, 0, ports.Slot, 17, 1, 0, 0, 0, 0},
		{beamng.FromBeamNG, 1, 1, ports.Slot, 11, 3, 1, 0, 0, 0},
		{beamng.FromBeamNG, 2, 0, ports.Meta, 0, 1, 0, contracts.Time, 0, 0},
		{beamng.FromBeamNG, 2, 1, ports.Slot, 60, 1, 1, 0, 0, -1},
		{beamng.FromBeamNG, 3, 0, ports.Slot, 61, 50, 0, 0, 0, 0},
		{beamng.FromBeamNG, 4, 0, ports.Meta, 0, 6, 0, contracts.PingResults, 0, 0},
		{beamng.ToBeamNG, 1, 0, ports.Slot, 1, 1, 0, 0, 0.2, 0},
		{beamng.ToBeamNG, 1, 1, ports.Slot, 2, 1, 1, 0, 0, 0},
		{beamng.ToBeamNG, 2, 0, ports.Slot, 9, 4, 0, 0, 5, 0},
		{beamng.ToBeamNG, 2, 1, ports.Slot, 13, 1, 4, 0, 1, 0},
	} {
		t.Run(fmt.Sprintf("%v port %d field %d", w.dir, w.port, w.field), func(t *testing.T) {
			port, ok := p.Port(w.dir, w.port)
			if !ok {
				t.Fatalf("no %v port %d", w.dir, w.port)
			}
			f := port.Fields[w.field]
			if f.Source != w.src || f.Width != w.width || f.Offset != w.offset || f.Initial != w.initial || f.Invalid != w.bad ||
				(w.src == ports.Slot && f.Slot != w.slot) || (w.src == ports.Meta && f.Meta != w.meta) {
				t.Errorf("%v port %d field %d = %+v, want %+v", w.dir, w.port, w.field, f, w)
			}
		})
	}
	for n, width := range []int{1, 4, 2, 50, 6} {
		if p.Outputs[n].Width != width || p.Outputs[n].Number != n {
			t.Errorf("output port %d: width %d number %d, want width %d", n, p.Outputs[n].Width, p.Outputs[n].Number, width)
		}
	}
	if _, ok := p.Port(beamng.ToBeamNG, 3); ok {
		t.Error("a third input port exists")
	}
	if s := p.Outputs[1].Fields[1].Signal(beamng.FromBeamNG, 2); s.Name != "posZ" {
		t.Errorf("third slot of posX×3 is %s", s.Name)
	}
}

func TestCompileContracts(t *testing.T) {
	p := compile(t, rig)
	if len(p.Contracts) != 4 {
		t.Fatalf("%d contracts", len(p.Contracts))
	}
	for i, w := range []struct {
		name       string
		every      int
		sync, comm bool
		dir        beamng.Direction
		ports      []int
	}{
		{"inputs[0]", 1, false, false, beamng.ToBeamNG, []int{1, 2}},
		{"outputs[0]", 1, true, false, beamng.FromBeamNG, []int{1, 2}},
		{"outputs[1]", 10, false, false, beamng.FromBeamNG, []int{3}},
		{"outputs[2]", 0, false, true, beamng.FromBeamNG, []int{4}},
	} {
		t.Run(w.name, func(t *testing.T) {
			c := p.Contracts[i]
			if c.Name != w.name || c.Schedule.Every != w.every || c.TimeSync != w.sync || c.CommData != w.comm || c.Dir != w.dir || len(c.Ports) != len(w.ports) {
				t.Errorf("contract %d = %+v, want %+v", i, c, w)
				return
			}
			for j := range c.Ports {
				if c.Ports[j] != w.ports[j] {
					t.Errorf("contract %d ports %v, want %v", i, c.Ports, w.ports)
				}
				port, _ := p.Port(c.Dir, c.Ports[j])
				if port.Contract != i {
					t.Errorf("port %d points at contract %d, want %d", c.Ports[j], port.Contract, i)
				}
			}
		})
	}
}

// The reply template holds NaN wherever no field maps a slot, so BeamNG
// keeps its previous value there, and each mapped slot's initial value.
func TestReplyTemplate(t *testing.T) {
	p := compile(t, rig)
	tpl := p.Vehicles[0].Template
	if len(tpl) != beamng.ControlLen || tpl[0] != 0 {
		t.Fatalf("template length %d id %v", len(tpl), tpl[0])
	}
	mapped := map[int]float64{1: 0.2, 2: 0, 9: 5, 10: 5, 11: 5, 12: 5, 13: 1}
	for i := 1; i < len(tpl); i++ {
		want, ok := mapped[i]
		switch {
		case ok && tpl[i] != want:
			t.Errorf("slot %d = %v, want %v", i, tpl[i], want)
		case !ok && !math.IsNaN(tpl[i]):
			t.Errorf("unmapped slot %d = %v, want NaN", i, tpl[i])
		}
	}
	logging := compile(t, `{"version": 2, "outputs": [{"ports": [[{"propertyName": "rpm"}]]}]}`)
	for i, v := range logging.Vehicles[0].Template[1:] {
		if !math.IsNaN(v) {
			t.Fatalf("a config without inputs sends %v in slot %d", v, i+1)
		}
	}
}

// Bound to every interface (0.0.0.0), the start line names where BeamNG
// must send: this machine's address on the way to BeamNG, never 0.0.0.0.
func TestStartCommandBindingAny(t *testing.T) {
	p := compile(t, `{"version": 2, "remoteIP": "127.0.0.1",
		"outputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "rpm"}]]}],
		"beamng": {"localIP": "0.0.0.0"}}`)
	if got := p.Vehicles[0].SendTo(); got.String() != "127.0.0.1:64890" {
		t.Errorf("send to %v, want 127.0.0.1:64890 (BeamNG on this machine)", got)
	}
	if got := p.StartCommand(0); !strings.Contains(got, "udpSendIP='127.0.0.1'") {
		t.Errorf("StartCommand: %s", got)
	}
}

func TestStartCommand(t *testing.T) {
	p := compile(t, rig)
	want := "extensions.load('tech/vehicleSystemsCoupling'); tech_vehicleSystemsCoupling.startCoupling({simulinkTime=0.005, pingTime=1e-05, udpSendPort=64890, udpReceivePort=64891, udpSendIP='127.0.0.1', udpReceiveIP='127.0.0.1'})"
	if got := p.StartCommand(0); got != want {
		t.Errorf("StartCommand:\n got %s\nwant %s", got, want)
	}
	p = compile(t, `{"version": 2, "remoteIP": "10.0.0.2", "remotePort": 7001,
		"outputs": [{"updatePeriodMs": 18.5, "ports": [[{"propertyName": "rpm"}]]}],
		"beamng": {"localIP": "10.0.0.1", "localPort": 7000, "pingTime": 0.002, "debugFile": true}}`)
	want = "extensions.load('tech/vehicleSystemsCoupling'); tech_vehicleSystemsCoupling.startCoupling({simulinkTime=0.0185, pingTime=0.002, udpSendPort=7000, udpReceivePort=7001, udpSendIP='10.0.0.1', udpReceiveIP='10.0.0.2', debugFile=true})"
	if got := p.StartCommand(0); got != want {
		t.Errorf("StartCommand:\n got %s\nwant %s", got, want)
	}
	if p.SendSkips != 36 || p.Unanswered != 1 {
		t.Errorf("18.5 ms: skips %d window %d, want 36 and 1", p.SendSkips, p.Unanswered)
	}
}

// Whatever period a config asks for, the simulinkTime printed in the start
// command makes BeamNG run exactly the plan's number of steps.
func TestStartCommandPeriodSurvivesBeamNG(t *testing.T) {
	for n := 1; n <= 400; n++ {
		ms := strconv.FormatFloat(float64(n)*0.5, 'f', -1, 64)
		p := compile(t, `{"version": 2, "outputs": [{"updatePeriodMs": `+ms+`, "ports": [[{"propertyName": "rpm"}]]}]}`)
		_, text, _ := strings.Cut(p.StartCommand(0), "simulinkTime=")
		text, _, _ = strings.Cut(text, ",")
		printed, err := strconv.ParseFloat(text, 64)
		if err != nil || beamng.SendSkips(printed, beamng.PhysicsDt) != n-1 || p.SendSkips != n-1 {
			t.Fatalf("%s ms: printed %s, BeamNG would skip %d steps, plan says %d; want %d",
				ms, text, beamng.SendSkips(printed, beamng.PhysicsDt), p.SendSkips, n-1)
		}
	}
}

func TestSeveralVehicles(t *testing.T) {
	p := compile(t, `{"version": 2, "remoteObject": "ego",
		"outputs": [{"ports": [[{"propertyName": "groundspeed"}], [{"propertyName": "groundspeed", "remoteObject": "lead"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle", "initialValue": 0.5}]]},
		           {"remoteObject": "lead", "ports": [[{"propertyName": "throttle", "initialValue": 0.25}]]}],
		"beamng": {"vehicles": {"ego": {"localPort": 64890, "remotePort": 64891}, "lead": {"localPort": 64892, "remotePort": 64893}}}}`)
	if len(p.Vehicles) != 2 || p.Vehicles[1].Name != "lead" || p.Vehicles[1].Local.Port() != 64892 {
		t.Fatalf("vehicles %+v", p.Vehicles)
	}
	if p.Outputs[2].Fields[0].Vehicle != 1 || p.Inputs[2].Fields[0].Vehicle != 1 || p.Inputs[1].Fields[0].Vehicle != 0 {
		t.Error("fields not bound to their vehicles")
	}
	if p.Vehicles[0].Template[1] != 0.5 || p.Vehicles[1].Template[1] != 0.25 {
		t.Errorf("templates: ego throttle %v, lead throttle %v", p.Vehicles[0].Template[1], p.Vehicles[1].Template[1])
	}
	if got := p.StartCommand(1); got != "extensions.load('tech/vehicleSystemsCoupling'); tech_vehicleSystemsCoupling.startCoupling({simulinkTime=0.005, pingTime=1e-05, udpSendPort=64892, udpReceivePort=64893, udpSendIP='127.0.0.1', udpReceiveIP='127.0.0.1'})" {
		t.Errorf("StartCommand(1) = %s", got)
	}
}

func TestCompileRejectsUncheckedConfig(t *testing.T) {
	if _, err := config.Compile(nil); err == nil {
		t.Error("config.Compile(nil) succeeded")
	}
	if _, err := config.Compile(&config.Config{}); err == nil {
		t.Error("Compile of an empty Config succeeded")
	}
}

// Every example compiles.
func TestExamplesCompile(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.json")
	for _, f := range files {
		cfg, err := config.Load(f)
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		if _, err := config.Compile(cfg); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Any config the checks accept compiles: the fuzzer hunts for one that
// slips through config.Parse but breaks the layout.
func FuzzCompile(f *testing.F) {
	f.Add([]byte(rig))
	files, _ := filepath.Glob("../config/testdata/*.good.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("fuzz.json", data)
		if err != nil {
			return
		}
		p, err := config.Compile(cfg)
		if err != nil {
			t.Fatalf("checked config does not compile: %v", err)
		}
		for _, ports := range [][]ports.Port{p.Inputs, p.Outputs} {
			for _, port := range ports {
				w := 0
				for _, fl := range port.Fields {
					if fl.Offset != w {
						t.Fatalf("port %d field offsets not contiguous", port.Number)
					}
					w += fl.Width
				}
				if w != port.Width {
					t.Fatalf("port %d width %d, fields add to %d", port.Number, port.Width, w)
				}
			}
		}
	})
}

// The warning about a signalFrom row no field writes says what the reply
// carries in it: the number it names is the template's, for every kind.
func TestUnmappedRowWarningNamesTheTemplate(t *testing.T) {
	dir := t.TempDir()
	csv := "Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes\n" +
		"signalTo,Electrics,rpm,,number,,,\n" +
		"signalFrom,Driver,throttle,value,number,,,\n" +
		"signalFrom,Driver,throttle,multiply,number,,,\n" +
		"signalFrom,Driver,throttle,add,number,,,\n" +
		"signalFrom,Driver,throttle,freeze,number,,,\n"
	os.WriteFile(filepath.Join(dir, "rig.csv"), []byte(csv), 0o644)
	path := filepath.Join(dir, "rig.json")
	os.WriteFile(path, []byte(`{"version": 2, "outputs": [{"ports": [[{"propertyName": "rpm"}]]}],
		"beamng": {"protocol": "csv", "interface": "rig.csv"}}`), 0o644)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Vehicles[0]
	warned := 0
	for _, d := range cfg.Warnings {
		_, after, ok := strings.Cut(d.Msg, "beamconnect sends ")
		if !ok {
			continue
		}
		warned++
		said, _, _ := strings.Cut(after, " ")
		for _, s := range v.Layout.Signals(beamng.ToBeamNG) {
			if s.Line == d.Pos.Line {
				if sent := strconv.FormatFloat(v.Template[s.Index], 'g', -1, 64); said != sent {
					t.Errorf("%s row: the warning says %s is sent, the reply carries %s", s.Kind, said, sent)
				}
			}
		}
	}
	if warned != 4 {
		t.Errorf("%d rows warned about, want 4:\n%v", warned, cfg.Warnings)
	}
}

// The model timeout by mode: the config's, else in lockstep BeamNG's 2 s
// wait less a margin, or the data to BeamNG's overdue timeout below that;
// in real time 5 periods, at least 25 ms. Each says where it comes from.
func TestModelTimeout(t *testing.T) {
	for _, tt := range []struct {
		name, outputs, inputs, beamng string
		realTime                      bool
		want                          float64
		from                          string
	}{
		{name: "lockstep", want: 1.5, from: "BeamNG's 2 s wait for a reply"},
		{name: "the data to BeamNG overdue sooner", inputs: `"overdueDataTimeoutMs": 100, `, want: 0.1, from: "overdueDataTimeout of inputs[0]"},
		{name: "the data to BeamNG overdue later", inputs: `"overdueDataTimeout": 3, `, want: 1.5, from: "BeamNG's 2 s wait for a reply"},
		{name: "BeamNG's data overdue", outputs: `"overdueDataTimeoutMs": 100, `, want: 1.5, from: "BeamNG's 2 s wait for a reply"},
		{name: "the config's", beamng: `, "beamng": {"modelTimeoutMs": 80}`, want: 0.08, from: "beamng.modelTimeoutMs"},
		{name: "real time", beamng: `, "beamng": {"realTime": true}`, want: 0.025, from: "5 periods, at least 25 ms (real time)"},
		{name: "real time, slow", outputs: `"updatePeriodMs": 20, `, beamng: `, "beamng": {"realTime": true}`, want: 0.1, from: "5 periods, at least 25 ms (real time)"},
		{name: "real time by the command line", realTime: true, want: 0.025, from: "5 periods, at least 25 ms (real time)"},
		{name: "the config's, by the command line", beamng: `, "beamng": {"modelTimeoutMs": 80}`, realTime: true, want: 0.08, from: "beamng.modelTimeoutMs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := compile(t, `{"version": 2, "outputs": [{`+tt.outputs+`"ports": [[{"propertyName": "groundspeed"}]]}],
				"inputs": [{`+tt.inputs+`"ports": [[{"propertyName": "throttle"}]]}]`+tt.beamng+`}`)
			if tt.realTime {
				p = p.InRealTime()
			}
			if math.Abs(p.ModelTimeout-tt.want) > 1e-12 || p.ModelTimeoutFrom != tt.from {
				t.Errorf("model timeout %v s from %q, want %v s from %q", p.ModelTimeout, p.ModelTimeoutFrom, tt.want, tt.from)
			}
			if want := map[bool]string{false: "lockstep", true: "real time"}[p.RealTime]; p.Mode() != want {
				t.Errorf("mode %q, want %q", p.Mode(), want)
			}
		})
	}
}

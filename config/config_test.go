package config

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/ports"
	"beamconnect/schemas"
)

var update = flag.Bool("update", false, "rewrite the expected output files in testdata/")

// golden compares got with the file want (creating it under -update).
func golden(t *testing.T, want, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// The fixtures name their files with slashes, as given on Linux;
	// Windows joins a config's folder and its CSV with a backslash.
	got = strings.ReplaceAll(got, "testdata"+string(filepath.Separator), "testdata/")
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update to create it, then read it)", err)
	}
	if string(b) != got {
		t.Errorf("output differs from %s\n--- got\n%s--- want\n%s", want, got, b)
	}
}

func lines(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Each bad fixture fails with exactly the messages in its .err file: every
// error (and warning) at once, in file order, each with file:line:col.
func TestBadConfigs(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.json")
	if len(files) < 20 {
		t.Fatalf("only %d bad fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			var ds Diagnostics
			if !errors.As(err, &ds) || ds.Errors() == 0 {
				t.Fatalf("error %T %v is not a list of diagnostics", err, err)
			}
			for _, d := range ds {
				// A Gen 2 config's findings may be placed in its CSV.
				inCSV := strings.HasSuffix(d.File, ".csv") && filepath.Dir(d.File) == filepath.Dir(f)
				if d.File != f && !inCSV || d.Pos.Line < 1 || d.Pos.Col < 1 || d.Msg == "" {
					t.Errorf("unplaced diagnostic %+v", d)
				}
			}
			golden(t, strings.TrimSuffix(f, ".json")+".err", lines(ds))
		})
	}
}

// Each good fixture loads, with exactly the warnings in its .warn file.
// (The examples are checked, with the warnings they are meant to give, by
// package examples' own test.)
func TestGoodConfigs(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.json")
	if len(files) == 0 {
		t.Fatal("no good fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			if err != nil {
				t.Fatalf("rejected:\n%v", err)
			}
			golden(t, strings.TrimSuffix(f, ".json")+".warn", lines(cfg.Warnings))
		})
	}
}

// A config written for a CarSim peer has the memo's shape, so the schema
// accepts it unchanged; only its CarSim variable names are not BeamNG's.
func TestVSConnectConfigShape(t *testing.T) {
	data, err := os.ReadFile("testdata/carsim-names.json")
	if err != nil {
		t.Fatal(err)
	}
	p := &parser{file: "carsim-names.json"}
	p.ix, err = newIndex(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := jsonUnmarshalNumber(data, &doc); err != nil {
		t.Fatal(err)
	}
	if p.validateSchema(doc); len(p.diags) > 0 {
		t.Fatalf("the schema rejects a memo-shaped config:\n%s", lines(p.diags))
	}
	_, err = Parse("carsim-names.json", data)
	var ds Diagnostics
	errors.As(err, &ds)
	for _, d := range ds {
		// VSAP_DISTANCE is beamconnect's too, but between two of beamng.vehicles.
		if d.Severity == Error && !strings.Contains(d.Msg, "is not a signal BeamNG") && !strings.Contains(d.Msg, "relates two vehicles") {
			t.Errorf("unexpected error: %v", d)
		}
	}
	// "Yaw" is BeamNG's yaw in another letter case: a warning, not an error.
	if ds.Errors() != 4 {
		t.Errorf("want the 4 CarSim names reported, got:\n%s", lines(ds))
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Parse("rig.json", []byte(`{"version": 2, "outputs": [{"ports": [[{"propertyName": "rpm"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle"}]]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TimeDilation != 1 || cfg.ReplyID != ports.ReplyNext || cfg.Protocol != beamng.Gen1 ||
		cfg.PhysicsDt != 0.0005 || cfg.PingTime != 1e-5 || cfg.Period != 0.005 || cfg.DebugFile {
		t.Errorf("defaults: %+v", cfg)
	}
	if len(cfg.Vehicles) != 1 || cfg.Vehicles[0].Local.String() != "127.0.0.1:64890" || cfg.Vehicles[0].Remote.String() != "127.0.0.1:64891" {
		t.Errorf("vehicles: %+v", cfg.Vehicles)
	}
	g := cfg.Outputs[0]
	f := g.Ports[0].Fields[0]
	if g.Overdue != -1 || g.TimeSync || g.CommData || g.Schedule.Every != 1 || g.Dir != beamng.FromBeamNG {
		t.Errorf("group: %+v", g)
	}
	if f.ArraySize != 1 || f.Signal.Index != 33 || f.Meta != contracts.NotMeta || f.InitialValue != 0 || f.Path != "outputs[0].ports[0][0]" {
		t.Errorf("field: %+v", f)
	}
	if cfg.Inputs[0].Ports[0].Fields[0].Signal.Index != 1 || cfg.Inputs[0].Dir != beamng.ToBeamNG {
		t.Errorf("input: %+v", cfg.Inputs[0])
	}
}

func TestAliases(t *testing.T) {
	for _, tt := range []struct {
		group   string
		period  float64
		every   int
		overdue float64
	}{
		{`"updatePeriod": 0.01`, 0.01, 1, -1},
		{`"updatePeriodMs": 10`, 0.01, 1, -1},
		{`"overdueDataTimeout": 0.25`, 0.005, 1, 0.25},
		{`"overdueDataTimeoutMs": 250`, 0.005, 1, 0.25},
		{`"blockTimeThreshold": 0.25`, 0.005, 1, 0.25},
		{`"blockTimeThresholdMs": 250`, 0.005, 1, 0.25},
		{`"overdueDataTimeoutMs": -1`, 0.005, 1, -1},
		{`"overdueDataTimeout": 0`, 0.005, 1, 0},
	} {
		t.Run(strings.NewReplacer(`"`, "", ":", "").Replace(tt.group), func(t *testing.T) {
			src := `{"version": 2, "outputs": [{` + tt.group + `, "ports": [[{"propertyName": "rpm"}]]}]}`
			cfg, err := Parse("rig.json", []byte(src))
			if err != nil {
				t.Errorf("%s: %v", tt.group, err)
				return
			}
			g := cfg.Outputs[0]
			if math.Abs(cfg.Period-tt.period) > 1e-15 || g.Schedule.Every != tt.every || math.Abs(g.Overdue-tt.overdue) > 1e-15 {
				t.Errorf("%s: period %v every %d overdue %v", tt.group, cfg.Period, g.Schedule.Every, g.Overdue)
			}
		})
	}
}

// The fastest contract sets BeamNG's send period; slower ones take part in
// every n-th message.
func TestCouplingPeriod(t *testing.T) {
	cfg, err := Parse("rig.json", []byte(`{"version": 2,
		"outputs": [{"updatePeriodMs": 50, "ports": [[{"propertyName": "rpm"}]]},
		            {"ports": [[{"propertyName": "yaw"}]]}],
		"inputs": [{"updatePeriodMs": 2, "ports": [[{"propertyName": "throttle"}]]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Period != 0.002 {
		t.Errorf("coupling period %v, want 0.002", cfg.Period)
	}
	if e := cfg.Outputs[0].Schedule.Every; e != 25 {
		t.Errorf("50 ms contract every %d messages, want 25", e)
	}
	if e := cfg.Outputs[1].Schedule.Every; e != 1 {
		t.Errorf("a contract without a period updates every %d messages, want 1", e)
	}
}

func TestIndexPositions(t *testing.T) {
	src := []byte("{\n  \"a\": [1, {\"b\": \"ü\"}],\r\n\t\"c d\": {\"e\":true}\n}")
	ix, err := newIndex(src, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		ptr, path string
		value     Pos
		key       Pos
	}{
		{"root", "", "", Pos{1, 1}, Pos{1, 1}},
		{"member", "/a", "a", Pos{2, 8}, Pos{2, 3}},
		{"array element", "/a/0", "a[0]", Pos{2, 9}, Pos{2, 9}},
		{"member of an element", "/a/1/b", "a[1].b", Pos{2, 18}, Pos{2, 13}},
		{"key with a space", "/c d", `["c d"]`, Pos{3, 9}, Pos{3, 2}},
		{"member of a spaced key", "/c d/e", `["c d"].e`, Pos{3, 14}, Pos{3, 10}},
		{"missing member", "/c d/missing", `["c d"]`, Pos{3, 9}, Pos{3, 9}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vp, vpath := ix.value(tt.ptr)
			kp, _ := ix.key(tt.ptr)
			if vp != tt.value || kp != tt.key || vpath != tt.path {
				t.Errorf("%q: value %v key %v path %q; want %v %v %q", tt.ptr, vp, kp, vpath, tt.value, tt.key, tt.path)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-file.json")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "no-such-file.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// FuzzParse feeds arbitrary bytes through the whole pipeline: it must never
// panic, every finding must be placed in the file, and a config it accepts
// must validate against the schema on its own.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	examples, _ := filepath.Glob("../examples/*.json")
	for _, name := range append(files, examples...) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"version": 2, "outputs": [{"ports": [[{"propertyName": "H50", "arraySize": 1}]]}]}`))
	// null where an object is expected: the schema reports it, and the
	// semantic checks that still run must not dereference it.
	f.Add([]byte(`{"version": 2, "beamng": {"protocol": "csv", "vehicles": {"ego": null, "": {}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// In testdata, so a Gen 2 config's interfaces are the fixtures' CSVs.
		const name = "testdata/fuzz.json"
		cfg, err := Parse(name, data)
		if err != nil {
			var ds Diagnostics
			if !errors.As(err, &ds) || ds.Errors() == 0 {
				t.Fatalf("error is not diagnostics: %v", err)
			}
			lines := strings.Count(string(data), "\n") + 1
			for _, d := range ds {
				if d.File != name {
					continue // placed in a Gen 2 config's CSV
				}
				if d.Pos.Line < 1 || d.Pos.Line > lines || d.Pos.Col < 1 {
					t.Fatalf("diagnostic outside the file (%d lines): %v", lines, d)
				}
			}
			return
		}
		if cfg.Period <= 0 || len(cfg.Vehicles) == 0 {
			t.Fatalf("accepted config without period or vehicle: %+v", cfg)
		}
		var doc any
		if err := jsonUnmarshalNumber(data[len(data)-len(trimBOM(data)):], &doc); err != nil {
			t.Fatalf("accepted invalid JSON: %v", err)
		}
		if err := schemas.Config().Validate(doc); err != nil {
			t.Fatalf("accepted a config the schema rejects: %v", err)
		}
		for _, groups := range [][]Group{cfg.Inputs, cfg.Outputs} {
			for _, g := range groups {
				for _, p := range g.Ports {
					for _, f := range p.Fields {
						if f.Meta == contracts.NotMeta && f.Signal.Index+f.ArraySize > cfg.Vehicles[f.Vehicle].Layout.Len(g.Dir) {
							t.Fatalf("accepted a field past the message end: %+v", f)
						}
					}
				}
			}
		}
	})
}

// BenchmarkParse measures a whole load of the largest example (every slot
// BeamNG sends): what a hot reload pays before the new plan can go live.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("../examples/logging.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("logging.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// Several vehicles on Gen 2: each vehicle's addresses, layout and window
// come from its own CSV, and each field resolves against its vehicle's.
func TestGen2Fleet(t *testing.T) {
	cfg, err := Load("testdata/gen2-fleet.good.json")
	if err != nil {
		t.Fatal(err)
	}
	ego, lead := cfg.Vehicles[0], cfg.Vehicles[1]
	if ego.Local.String() != "127.0.0.1:64890" || ego.Remote.String() != "127.0.0.1:64891" ||
		lead.Local.String() != "127.0.0.1:64892" || lead.Remote.String() != "127.0.0.1:64893" {
		t.Errorf("addresses %v %v, %v %v", ego.Local, ego.Remote, lead.Local, lead.Remote)
	}
	if ego.Layout.Len(beamng.FromBeamNG) != 8 || lead.Layout.Len(beamng.FromBeamNG) != 5 || ego.Layout.Source != ego.CSV.Path {
		t.Errorf("layouts: ego %d, lead %d doubles", ego.Layout.Len(beamng.FromBeamNG), lead.Layout.Len(beamng.FromBeamNG))
	}
	if ego.Unanswered != 1 || lead.Unanswered != 3 || cfg.Period != 0.005 || cfg.PingTime != 1e-5 {
		t.Errorf("windows %d and %d, period %v, ping %v", ego.Unanswered, lead.Unanswered, cfg.Period, cfg.PingTime)
	}
	want := []string{filepath.Join("testdata", "gen2-ego.csv"), filepath.Join("testdata", "gen2-lead.csv")}
	if got := cfg.CSVPaths(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("CSVPaths %v, want %v", got, want)
	}
	rpm := cfg.Outputs[0].Ports[1].Fields[1]
	if rpm.Vehicle != 1 || rpm.Signal.Index != 4 || rpm.Signal.Line != 5 {
		t.Errorf("lead's rpm resolved to vehicle %d slot %d (line %d), want lead's slot 4 (line 5)", rpm.Vehicle, rpm.Signal.Index, rpm.Signal.Line)
	}
	if gap := cfg.Outputs[0].Ports[0].Fields[1]; gap.Relative.String() != "gap" || gap.Vehicle != 0 || gap.Other != 1 {
		t.Errorf("gap %+v", gap)
	}
	// `beamconnect csv` writes one vehicle's CSV: a JSON-first fleet is refused.
	if _, err := LoadJSONFirst("testdata/gen2-fleet.good.json"); err == nil || !strings.Contains(err.Error(), "beamng.vehicles: `beamconnect csv` writes the CSV of one vehicle") {
		t.Errorf("a JSON-first fleet: %v", err)
	}
	g1, err := Load("testdata/vehicles.good.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(g1.CSVPaths()) != 0 || g1.Vehicles[1].Unanswered != 1 || g1.Vehicles[1].Layout != beamng.Fixed {
		t.Errorf("Gen 1: CSVs %v, window %d", g1.CSVPaths(), g1.Vehicles[1].Unanswered)
	}
}

// BenchmarkLoadRows loads a Gen 2 config that maps every row of a CSV of
// n signalTo rows, the most a message holds: each field finds its row
// through the index, so the time per row stays flat.
func BenchmarkLoadRows(b *testing.B) {
	for _, n := range []int{100, 1023} {
		dir := b.TempDir()
		var csv, fields strings.Builder
		csv.WriteString("Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes")
		for i := range n {
			fmt.Fprintf(&csv, "\nsignalTo,Electrics,custom%d,,number,,,", i)
			if i > 0 {
				fields.WriteString(", ")
			}
			fmt.Fprintf(&fields, `{"propertyName": "custom%d"}`, i)
		}
		os.WriteFile(filepath.Join(dir, "rig.csv"), []byte(csv.String()), 0o644)
		cfgPath := filepath.Join(dir, "rig.json")
		os.WriteFile(cfgPath, []byte(`{"version": 2, "outputs": [{"ports": [[`+fields.String()+`]]}], "beamng": {"protocol": "csv", "interface": "rig.csv"}}`), 0o644)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(cfgPath); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
		})
	}
}

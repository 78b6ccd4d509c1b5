package fmuexport

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"beamconnect/config"
	"beamconnect/config/configtest"
	"beamconnect/fmu"
	"beamconnect/ports"
)

// configs are every config of the examples and the config tests that
// compiles: Gen 1 and Gen 2, one vehicle and several, arrays, meta and
// cross-vehicle fields.
func configs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pattern := range []string{"../examples/*.json", "../config/testdata/*.good.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, files...)
	}
	if len(out) < 10 {
		t.Fatalf("only %d configs", len(out))
	}
	return out
}

func plan(t *testing.T, file string) *ports.Plan { return configtest.Plan(t, file) }

// The description reads back through beamconnect's own reader of
// modelDescription.xml (package fmu) as the interface says, for every
// config, in FMI 2.0 and 3.0: names, value references, causality,
// variability, type, start, unit, description; a co-simulation FMU that
// takes steps of any size, suggesting BeamNG's period.
func TestDescriptionReadsBack(t *testing.T) {
	types := map[int]map[Type]string{2: {Real: "Real", Integer: "Integer", String: "String"}, 3: {Real: "Float64", Integer: "Int32", String: "String"}}
	for _, file := range configs(t) {
		p := plan(t, file)
		in := New(p)
		for _, major := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s FMI %d", filepath.Base(file), major), func(t *testing.T) {
				d, err := fmu.ParseDescription(in.Description(major, "rig", "rig", `a rig's "FMU" <of> BeamNG & co`))
				if err != nil {
					t.Fatal(err)
				}
				if d.Major != major || d.Token != in.Token || d.CoSim == nil || d.CoSim.ModelIdentifier != "rig" || !d.CoSim.VariableStep || d.ME != nil {
					t.Fatalf("FMI %d, token %q, co-simulation %+v, model exchange %+v", d.Major, d.Token, d.CoSim, d.ME)
				}
				if d.Default.StepSize == nil || *d.Default.StepSize != p.Period {
					t.Errorf("default step %v, want BeamNG's period %v", d.Default.StepSize, p.Period)
				}
				if major == 3 && d.CoSim.FixedInternalStepSize != p.Period {
					t.Errorf("fixedInternalStepSize %v, want BeamNG's period %v", d.CoSim.FixedInternalStepSize, p.Period)
				}
				if len(d.Variables) != len(in.Vars) {
					t.Fatalf("%d variables read back, %d written", len(d.Variables), len(in.Vars))
				}
				for i, v := range in.Vars {
					got := d.Variables[i]
					variability := map[bool]string{true: "continuous", false: "discrete"}[v.Type == Real]
					if v.Causality == Parameter {
						variability = "fixed"
					}
					if got.Name != v.Name || got.VR != v.VR || got.Causality != v.Causality.String() || got.Variability != variability ||
						got.Type != types[major][v.Type] || got.Start != v.Start || got.Unit != v.Unit || got.Description != v.Description {
						t.Errorf("variable %d read back as %+v, written as %+v", i, got, v)
					}
				}
			})
		}
	}
}

// Names are the config's fields as a recording names them without their
// port, unique: qualified by the port where a name is both BeamNG's
// signal and a control (throttle), or is time, which is the independent
// variable's; the vehicle's name first with several vehicles, the
// parameters' too.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   []string
		not    []string
	}{
		{"../examples/cruise-pedals.json",
			[]string{"groundspeed", "out2.throttle", "out2.brake", "rpm", "gear", "out4.time", "serial_number", "in1.throttle", "in1.brake", "driveMode",
				"localIP", "localPort", "remoteIP", "remotePort", "recordFile", "connectTimeout", "silenceTimeout", "processTimeout"},
			[]string{"time", "throttle"}},
		{"../examples/follow.json",
			[]string{"ego.groundspeed", "ego.gap:lead", "lead.groundspeed", "ego.throttle", "lead.throttle", "ego.localPort", "lead.remotePort"},
			[]string{"groundspeed", "localPort"}},
		{"../examples/gen2-cruise.json",
			[]string{"vehicleGroundSpeed", "out2.throttle", "rpm", "gearIndex", "in1.throttle", "steeringWheelPosition"},
			nil},
	} {
		t.Run(filepath.Base(tc.config), func(t *testing.T) {
			in := New(plan(t, tc.config))
			var names []string
			for _, v := range in.Vars {
				names = append(names, v.Name)
			}
			for _, n := range tc.want {
				if !slices.Contains(names, n) {
					t.Errorf("no variable %q among %q", n, names)
				}
			}
			for _, n := range tc.not {
				if v, ok := in.Variable(n); ok && v.Causality != Independent {
					t.Errorf("a field is named %q, which would be ambiguous", n)
				}
			}
			if v, ok := in.Variable("time"); !ok || v.Causality != Independent || v != &in.Vars[len(in.Vars)-1] {
				t.Errorf("time is not the independent variable, the last")
			}
			if len(in.Vars) != len(names) || len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
				t.Errorf("names not unique: %q", names)
			}
		})
	}
}

// The token changes with what the master sees (a start value), and only
// with it.
func TestToken(t *testing.T) {
	a := New(plan(t, "../examples/cruise-pedals.json"))
	b := New(plan(t, "../examples/cruise-pedals.json"))
	if a.Token != b.Token {
		t.Errorf("the same config, two tokens: %s %s", a.Token, b.Token)
	}
	p := plan(t, "../examples/cruise-pedals.json")
	p.Inputs[1].Fields[0].Initial = 0.1
	if c := New(p); c.Token == a.Token {
		t.Error("another start value, the same token")
	}
}

// fmusim validates modelDescription.xml against the FMI schemas (and
// checks causality, variability and initial) as it loads an FMU, before it
// instantiates it; asked for the interface the FMU lacks (model exchange)
// it stops right there: what it printed says whether the description
// passed. Every config's, FMI 2.0 and 3.0.
func TestDescriptionsValidate(t *testing.T) {
	fmusim := os.Getenv("BEAMCONNECT_FMUSIM")
	if fmusim == "" {
		if os.Getenv("BEAMCONNECT_REQUIRE_FMUSIM") == "1" {
			t.Fatal("BEAMCONNECT_FMUSIM names no fmusim (bash fmu/testdata/oracle/build builds it)")
		}
		t.Skip("BEAMCONNECT_FMUSIM names no fmusim (bash fmu/testdata/oracle/build builds it)")
	}
	for _, file := range configs(t) {
		in := New(plan(t, file))
		for _, major := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s FMI %d", filepath.Base(file), major), func(t *testing.T) {
				var buf bytes.Buffer
				zw := zip.NewWriter(&buf)
				w, _ := zw.Create("modelDescription.xml")
				w.Write(in.Description(major, "rig", "rig", "a rig"))
				zw.Close()
				path := filepath.Join(t.TempDir(), "rig.fmu")
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				out, _ := exec.Command(fmusim, "--interface-type", "me", path).CombinedOutput()
				if got := strings.TrimSpace(string(out)); got != "Selected interface type is not supported by the FMU." {
					t.Errorf("fmusim:\n%s", out)
				}
			})
		}
	}
}

// Every config's description, FMI 2.0 and 3.0, passes the FMI standard's
// rules that masters check at load time (fmu.CheckDescription): one
// independent variable, legal causality, variability and initial, starts
// where they belong, units defined, ModelStructure complete.
func TestDescriptionsPassCheck(t *testing.T) {
	for _, file := range configs(t) {
		in := New(plan(t, file))
		for _, major := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s FMI %d", filepath.Base(file), major), func(t *testing.T) {
				for _, p := range fmu.CheckDescription(in.Description(major, "rig", "rig", "a rig")) {
					t.Error(p)
				}
			})
		}
	}
}

// The config as the FMU keeps it: CSVs within the config's folder at
// their place beside it, others (a parent folder, an absolute path) under
// interfaces/, the config's text pointing there and otherwise unchanged;
// loaded from the FMU's resources it makes the same FMU.
func TestResources(t *testing.T) {
	dir := t.TempDir()
	csvText, err := os.ReadFile("../examples/gen2-cruise.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"shared/ego.csv", "rig/csv/lead.csv", "elsewhere/ego.csv"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		text := csvText
		if strings.Contains(p, "lead") {
			text = bytes.ReplaceAll(text, []byte("64890"), []byte("64892"))
			text = bytes.ReplaceAll(text, []byte("64891"), []byte("64893"))
		}
		os.WriteFile(filepath.Join(dir, p), text, 0o644)
	}
	abs := filepath.ToSlash(filepath.Join(dir, "elsewhere", "ego.csv"))
	for _, tc := range []struct {
		name, ego string
		want      map[string]string // file in the FMU → the config's value for it
	}{
		{"a parent folder", "../shared/ego.csv", map[string]string{"interfaces/ego.csv": "interfaces/ego.csv", "csv/lead.csv": "csv/lead.csv"}},
		{"an absolute path", abs, map[string]string{"interfaces/ego.csv": "interfaces/ego.csv", "csv/lead.csv": "csv/lead.csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := fmt.Sprintf(`{
  "version": 2,
  "outputs": [ { "groupType": "contract", "updatePeriodMs": 5, "remoteObject": "ego",
    "ports": [ [ { "propertyName": "vehicleGroundSpeed" } ] ] },
    { "groupType": "contract", "updatePeriodMs": 5, "remoteObject": "lead",
    "ports": [ [ { "propertyName": "vehicleGroundSpeed" } ] ] } ],
  "inputs": [ { "groupType": "contract", "updatePeriodMs": 5, "remoteObject": "ego",
    "ports": [ [ { "propertyName": "throttle" } ] ] } ],
  "beamng": { "protocol": "csv", "vehicles": {
    "ego": { "interface": %q },
    "lead": { "interface": "csv/lead.csv" } } }
}
`, tc.ego)
			file := filepath.Join(dir, "rig", "rig.json")
			os.WriteFile(file, []byte(text), 0o644)
			cfg, err := config.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := config.Compile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			files, err := resources(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]byte{}
			for _, f := range files {
				got[strings.TrimPrefix(f.Name, "resources/")] = f.Data
			}
			kept := string(got[ConfigName])
			for name, ref := range tc.want {
				if got[name] == nil {
					t.Errorf("no resources/%s among %v", name, slices.Sorted(func(y func(string) bool) {
						for k := range got {
							if !y(k) {
								return
							}
						}
					}))
				}
				if !strings.Contains(kept, fmt.Sprintf("%q", ref)) {
					t.Errorf("the config as kept does not name %s:\n%s", ref, kept)
				}
			}
			if want := strings.Replace(text, fmt.Sprintf("%q", tc.ego), `"interfaces/ego.csv"`, 1); kept != want {
				t.Errorf("the config's text changed beyond the interface:\n%s\nwant\n%s", kept, want)
			}
			if err := sameFromResources(files, New(p)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestReplaceString(t *testing.T) {
	for _, tc := range []struct {
		name, text, ptr, s, want, err string
	}{
		{"top level", `{"a": "x", "b": "y"}`, "/b", "z", `{"a": "x", "b": "z"}`, ""},
		{"nested, after arrays and objects", `{"o": [1, {"b": "n"}], "beamng": {"x": {"interface": "q"}, "interface": "old.csv"}}`,
			"/beamng/interface", "new.csv", `{"o": [1, {"b": "n"}], "beamng": {"x": {"interface": "q"}, "interface": "new.csv"}}`, ""},
		{"an escaped key", `{"v": {"a/b": {"i": "1"}, "c~d": {"i": "2"}}}`, "/v/c~0d/i", "3", `{"v": {"a/b": {"i": "1"}, "c~d": {"i": "3"}}}`, ""},
		{"a slash in a key", `{"v": {"a/b": {"i": "1"}}}`, "/v/a~1b/i", "x\"y", `{"v": {"a/b": {"i": "x\"y"}}}`, ""},
		{"escapes in the old value", `{"i" : "C:\\rigs\\x.csv"}`, "/i", "x.csv", `{"i" : "x.csv"}`, ""},
		{"absent", `{"a": "x"}`, "/b", "z", "", "/b: not in the config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := replaceString([]byte(tc.text), tc.ptr, tc.s)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("%s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

func TestIdentifier(t *testing.T) {
	for in, want := range map[string]string{
		"rig.fmu": "rig", "out/rig-2.fmu": "rig_2", "2rig.fmu": "_2rig", "Rig Ö.FMU": "Rig__", ".fmu": "beamconnect_rig",
	} {
		if got := Identifier(in); got != want {
			t.Errorf("Identifier(%q) = %q, want %q", in, got, want)
		}
	}
}

// An executable that is not beamconnect built for the platform is
// refused, saying which; a beamconnect for the other platform that is not
// beside this one is missing, not an error.
func TestExecutables(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a program"), 0o644)
	test, err := os.Executable() // a Go program, but not beamconnect
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "beamconnect")
	for _, tc := range []struct {
		name  string
		given map[string]string
		want  string
	}{
		{"text for Linux", map[string]string{"linux": text}, "is not an x86-64 Linux executable"},
		{"text for Windows", map[string]string{"windows": text}, "is not an x86-64 Windows executable"},
		{"another Go program", map[string]string{runtime.GOOS: test}, "is not beamconnect"},
		{"a missing file", map[string]string{"linux": filepath.Join(dir, "none")}, "beamconnect for linux"},
		{"another system", map[string]string{"plan9": text, "linux": test}, "is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.given[runtime.GOOS]; ok && runtime.GOOS != "linux" && runtime.GOOS != "windows" {
				t.Skip("this test's binary is no x86-64 Linux or Windows executable")
			}
			_, _, _, err := Executables(self, "darwin", tc.given)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	found, _, missing, err := Executables(self, "darwin", nil)
	if err != nil || len(found) != 0 || !slices.Equal(missing, []string{"linux", "windows"}) {
		t.Errorf("nothing beside a beamconnect for darwin: found %v, missing %v, %v", found, missing, err)
	}
}

// An FMU of as many outputs and inputs as a step carries between the
// library and the child exports; one more of either is refused, saying
// the limit.
func TestVariableLimits(t *testing.T) {
	in := New(plan(t, "../examples/cruise-pedals.json"))
	grow := func(c Causality, n int) *Interface {
		out := &Interface{Vars: slices.Clone(in.Vars)}
		for out.Count(c) < n {
			out.Vars = append(out.Vars, Variable{Name: fmt.Sprint("extra", len(out.Vars)), Causality: c})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   *Interface
		want string
	}{
		{"the most outputs", grow(Output, MaxOutputs), ""},
		{"the most inputs", grow(Input, MaxInputs), ""},
		{"an output more", grow(Output, MaxOutputs+1), "the config makes 16385 outputs (the fields of its outputs: BeamNG's signals, an array field's each element), more than the 16384 an exported FMU can have"},
		{"an input more", grow(Input, MaxInputs+1), "the config makes 16385 inputs (the fields of its inputs: the controls, an array field's each element), more than the 16384 an exported FMU can have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Fits()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
}

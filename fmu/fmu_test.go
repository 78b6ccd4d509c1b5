package fmu

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/proctree"
)

func readDesc(t *testing.T, name string) *Description {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDescription(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseFMI2(t *testing.T) {
	d := readDesc(t, "fmi2-cruise.good.xml")
	if d.Major != 2 || d.Token != "{g}" || d.ModelName != "cruise" || d.Generator != "Hand" ||
		d.CoSim == nil || d.CoSim.ModelIdentifier != "cruise" || !d.CoSim.VariableStep ||
		d.Default.StepSize == nil || *d.Default.StepSize != 0.005 || d.Default.StopTime == nil || d.Default.Tolerance != nil {
		t.Errorf("%+v %+v %+v", d, d.CoSim, d.Default)
	}
	want := []Variable{
		{Name: "setSpeed", VR: 0, Type: "Real", Kind: Float64, Causality: "parameter", Variability: "tunable", Unit: "m/s", Start: "20", DeclaredType: "Speed"},
		{Name: "groundspeed", VR: 4, Type: "Real", Kind: Float64, Causality: "input", Variability: "continuous", Unit: "km/h", Start: "0"},
		{Name: "gear", VR: 1, Type: "Integer", Kind: Int32, Causality: "output", Variability: "discrete"},
		{Name: "on", VR: 2, Type: "Boolean", Kind: Bool, Causality: "input", Variability: "discrete", Start: "true"},
		{Name: "label", VR: 3, Type: "String", Kind: String, Causality: "local", Variability: "fixed", Start: "x", Starts: []string{"x"}},
	}
	if len(d.Variables) != len(want) {
		t.Fatalf("%d variables", len(d.Variables))
	}
	for i, w := range want {
		t.Run(w.Name, func(t *testing.T) {
			if !reflect.DeepEqual(d.Variables[i], w) {
				t.Errorf("variable %d:\n got %+v\nwant %+v", i, d.Variables[i], w)
			}
		})
	}
}

func TestParseFMI3(t *testing.T) {
	d := readDesc(t, "fmi3-cruise.good.xml")
	if d.Major != 3 || d.Token != "{t}" || d.CoSim.ModelIdentifier != "cruise3" || d.CoSim.VariableStep ||
		d.CoSim.FixedInternalStepSize != 0.001 || strings.Join(d.Interfaces, ",") != "CoSimulation,ModelExchange" {
		t.Errorf("%+v %+v", d, d.CoSim)
	}
	want := []Variable{
		{Name: "setSpeed", VR: 0, Type: "Float64", Kind: Float64, Causality: "parameter", Variability: "fixed", Unit: "m/s", Start: "20", DeclaredType: "Speed"},
		{Name: "throttle", VR: 5, Type: "Float32", Kind: Float32, Causality: "output", Variability: "continuous"},
		{Name: "mode", VR: 6, Type: "Int32", Kind: Int32, Causality: "input", Variability: "discrete", Start: "1"},
		{Name: "on", VR: 7, Type: "Boolean", Kind: Bool, Causality: "input", Variability: "discrete", Start: "false"},
		{Name: "big", VR: 8, Type: "Int64", Kind: Int64, Causality: "output", Variability: "discrete"},
		{Name: "table", VR: 9, Type: "Float64", Kind: Float64, Causality: "parameter", Variability: "tunable", Start: "1 2 3", Array: true, Dims: []Dimension{{Start: 3}}},
	}
	for i, w := range want {
		t.Run(w.Name, func(t *testing.T) {
			if i >= len(d.Variables) || !reflect.DeepEqual(d.Variables[i], w) {
				t.Errorf("variable %d:\n got %+v\nwant %+v", i, d.Variables[i], w)
			}
		})
	}
	v, _ := d.Variable("setSpeed")
	if !v.Settable() || v.Tunable() {
		t.Errorf("a fixed parameter: settable %v tunable %v", v.Settable(), v.Tunable())
	}
	if v, _ := d.Variable("mode"); !v.Settable() || !v.Tunable() {
		t.Error("an input can be set at any time")
	}
	if v, _ := d.Variable("throttle"); v.Settable() {
		t.Error("an output cannot be set")
	}
}

// Every bad description fails with the message in its .err file.
func TestParseBad(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.xml")
	if len(files) < 10 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		want, err := os.ReadFile(strings.TrimSuffix(f, ".xml") + ".err")
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseDescription(data)
		if err == nil || err.Error() != strings.TrimSpace(string(want)) {
			t.Errorf("%s:\n got %v\nwant %s", f, err, want)
		}
	}
}

func FuzzParseDescription(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.xml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDescription(data)
		if err != nil {
			return
		}
		if d.Major != 2 && d.Major != 3 {
			t.Fatalf("major %d accepted", d.Major)
		}
		seen := map[string]bool{}
		for _, v := range d.Variables {
			if v.Name == "" || seen[v.Name] {
				t.Fatalf("variable %q accepted", v.Name)
			}
			seen[v.Name] = true
		}
	})
}

func writeZip(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range files {
		w, _ := zw.Create(name)
		w.Write([]byte(data))
	}
	zw.Close()
	out := filepath.Join(t.TempDir(), "m.fmu")
	os.WriteFile(out, buf.Bytes(), 0o644)
	return out
}

func TestOpenAndUnpack(t *testing.T) {
	md, _ := os.ReadFile("testdata/fmi2-cruise.good.xml")
	file := writeZip(t, map[string]string{
		"modelDescription.xml":        string(md),
		"binaries/linux64/cruise.so":  "lib",
		"binaries/win64/cruise.dll":   "dll",
		"binaries/win64/helper.dll":   "not the model's",
		"binaries/darwin64/other.so":  "not the model's",
		"resources/table.csv":         "1,2",
		"documentation/index.html":    "<p>",
		"binaries/linux64/extra/x.so": "deeper",
	})
	f, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.Join(f.Platforms, ",") != "linux64,win64" {
		t.Errorf("platforms %v", f.Platforms)
	}
	folder, _, ok := Platform(2)
	if !ok || (folder != "linux64" && folder != "win64") {
		t.Skipf("this machine (%s) runs no FMUs", folder)
	}
	u, err := f.Unpack(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(u.Library); err != nil || (string(b) != "lib" && string(b) != "dll") {
		t.Errorf("library %s: %q %v", u.Library, b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(u.Resources, "table.csv")); string(b) != "1,2" {
		t.Errorf("resources: %q", b)
	}
}

// An archive with an entry that would land outside the unpacking folder
// is refused when it is opened, before anything could be unpacked: by
// validate and inspect as by run.
func TestOpenRefusesEscapes(t *testing.T) {
	md, _ := os.ReadFile("testdata/fmi2-cruise.good.xml")
	for _, escape := range []string{"../escape.txt", "resources/../../escape.txt", "/etc/escape.txt"} {
		file := writeZip(t, map[string]string{
			"modelDescription.xml":       string(md),
			"binaries/linux64/cruise.so": "lib",
			"binaries/win64/cruise.dll":  "lib",
			escape:                       "out",
		})
		if _, err := Open(file); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("entry %q lies outside the archive's folder", escape)) {
			t.Errorf("%s: %v", escape, err)
		}
	}
}

func TestPlatformNames(t *testing.T) {
	for _, tt := range []struct {
		major       int
		goos, arch  string
		folder, ext string
	}{
		{2, "linux", "amd64", "linux64", ".so"},
		{3, "linux", "amd64", "x86_64-linux", ".so"},
		{2, "windows", "amd64", "win64", ".dll"},
		{3, "windows", "amd64", "x86_64-windows", ".dll"},
		{3, "darwin", "arm64", "", ""},
		{2, "linux", "arm64", "", ""},
	} {
		t.Run(fmt.Sprintf("FMI %d %s %s", tt.major, tt.goos, tt.arch), func(t *testing.T) {
			folder, ext, ok := platformOf(tt.major, tt.goos, tt.arch)
			if folder != tt.folder || ext != tt.ext || ok != (tt.folder != "") {
				t.Errorf("%+v: %q %q %v", tt, folder, ext, ok)
			}
		})
	}
}

// The unpack folders of runs that ended without removing theirs (killed
// outright) are removed by the next; those of runs still going, and
// folders that are not beamconnect's, are not.
func TestRemoveStaleUnpackDirs(t *testing.T) {
	ended := exec.Command(os.Args[0], "-test.run=^$")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, "binaries"), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := dir(fmt.Sprintf("beamconnect-fmu-%d-123", ended.Process.Pid))
	keep := []string{
		dir(fmt.Sprintf("beamconnect-fmu-%d-456", os.Getpid())), // this run's
		dir("beamconnect-fmu-2546998461"),                       // no pid in its name
		dir("someone-else"),
	}
	// Another run, going on: the test's parent, where it has one to see
	// (under Wine a process's parent is pid 0).
	if ppid := os.Getppid(); proctree.Alive(ppid) {
		keep = append(keep, dir(fmt.Sprintf("beamconnect-fmu-%d-789", ppid)))
	}
	removeStale(tmp)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the folder of an ended run is still there: %v", err)
	}
	for _, d := range keep {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", filepath.Base(d), err)
		}
	}
}

// A model description with more variables than beamconnect reads, or
// larger than it reads, is refused with the limit and the way out, before
// the time and memory it would take: a 1.9 M-variable description took
// 37 s and 2.2 GB to validate. The limits can be raised.
func TestDescriptionLimits(t *testing.T) {
	over := testfmu.Description(testfmu.Options{Locals: MaxVariables})
	_, err := ParseDescription([]byte(over))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d variables, the most beamconnect reads", MaxVariables)) ||
		!strings.Contains(err.Error(), "BEAMCONNECT_FMU_MAX_VARIABLES") {
		t.Errorf("%d variables: %v", MaxVariables+7, err)
	}
	if _, err := ParseDescription([]byte(testfmu.Description(testfmu.Options{Locals: MaxVariables - 7}))); err != nil {
		t.Errorf("%d variables, the most: %v", MaxVariables, err)
	}
	t.Setenv("BEAMCONNECT_FMU_MAX_VARIABLES", strconv.Itoa(2*MaxVariables))
	if _, err := ParseDescription([]byte(over)); err != nil {
		t.Errorf("with the limit raised: %v", err)
	}
	t.Setenv("BEAMCONNECT_FMU_MAX_VARIABLES", "many")
	if _, err := ParseDescription([]byte(over)); err == nil || !strings.Contains(err.Error(), `BEAMCONNECT_FMU_MAX_VARIABLES "many": expected a whole number`) {
		t.Errorf("a limit that is not a number: %v", err)
	}

	// The size: only declared, as a zip bomb would (the description is
	// not read before it is refused).
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: "modelDescription.xml", Method: zip.Store, UncompressedSize64: 200 << 20, CompressedSize64: 1})
	w.Write([]byte{'<'})
	zw.Close()
	file := filepath.Join(t.TempDir(), "big.fmu")
	os.WriteFile(file, buf.Bytes(), 0o644)
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "modelDescription.xml is 209715200 bytes, more than the 67108864 (64 MB) beamconnect reads") ||
		!strings.Contains(err.Error(), "BEAMCONNECT_FMU_MAX_DESCRIPTION_MB") {
		t.Errorf("200 MB: %v", err)
	}
	t.Setenv("BEAMCONNECT_FMU_MAX_DESCRIPTION_MB", "300")
	if _, err := Open(file); err == nil || strings.Contains(err.Error(), "more than") {
		t.Errorf("200 MB, the limit raised: %v", err)
	}
}

// Every FMI 3.0 type, enumerations with their items, bounds of the
// variable or its declared type, arrays of fixed size and sized by a
// structural parameter, String and Binary start values, both interfaces.
func TestParseFMI3Types(t *testing.T) {
	d := readDesc(t, "fmi3-types.good.xml")
	if d.ME == nil || d.ME.ModelIdentifier != "types_me" || !d.ME.CompletedIntegratorStep || !d.CoSim.CanGetAndSetState ||
		d.States != 1 || d.EventIndicators != 1 || strings.Join(d.Identifiers(), ",") != "types,types_me" {
		t.Errorf("%+v %+v %+v", d, d.ME, d.CoSim)
	}
	get := func(name string) *Variable {
		v, ok := d.Variable(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return v
	}
	if v := get("steer"); v.Unit != "rad" || *v.Min != -3.2 || *v.Max != 3.2 {
		t.Errorf("bounds from the declared type: %+v", v)
	}
	if v := get("gain"); *v.Min != 0 || *v.Max != 10 {
		t.Errorf("own bounds: %+v", v)
	}
	if v := get("i8"); v.Kind != Int8 || !v.Kind.Integer() || v.Min != nil {
		t.Errorf("Int8: %+v", v)
	}
	if lo, hi := get("u16").Kind.Limits(); lo != 0 || hi != 65535 || *get("u16").Max != 1000 {
		t.Errorf("UInt16 limits %v..%v", lo, hi)
	}
	mode := get("mode")
	if it, ok := mode.Item(5); mode.Kind != Enum || len(mode.Items) != 3 || !ok || it.Name != "Sport" || mode.Items[1].Description != "saves fuel" {
		t.Errorf("enumeration %+v", mode)
	}
	if _, ok := mode.Item(2); ok {
		t.Error("2 is no item of Mode")
	}
	u := get("u")
	if n, err := u.Size(d, nil); err != nil || n != 3 || !u.Array || !u.Dims[0].Param || u.Dims[0].VR != 6 {
		t.Errorf("u sized by n: %d %v %+v", n, err, u.Dims)
	}
	if n, err := u.Size(d, func(vr uint32) (uint64, bool) { return 5, vr == 6 }); err != nil || n != 5 {
		t.Errorf("u with n set to 5: %d %v", n, err)
	}
	if n, err := get("m").Size(d, nil); err != nil || n != 6 {
		t.Errorf("m[2,3]: %d %v", n, err)
	}
	if v := get("label"); v.Kind != String || v.Start != "left wheel" || !reflect.DeepEqual(v.Starts, []string{"left wheel"}) {
		t.Errorf("String start: %+v", v)
	}
	if v := get("blob"); v.Kind != Binary || v.Start != "0a1bff" {
		t.Errorf("Binary start: %+v", v)
	}
	if iface, err := d.Interface(""); iface != CoSim || err != nil {
		t.Errorf("default interface %q %v", iface, err)
	}
	if iface, err := d.Interface("ModelExchange"); iface != ME || err != nil || d.Identifier(iface) != "types_me" {
		t.Errorf("model exchange %q %v", iface, err)
	}
	if want := []Derivative{{"der(x)", "x"}}; !reflect.DeepEqual(d.Derivatives, want) {
		t.Errorf("derivatives %v, want %v", d.Derivatives, want)
	}
}

// An FMI 2.0 Model Exchange FMU: its states from the Derivatives, its
// event indicators from numberOfEventIndicators, enumerations as Integers
// with their items.
func TestParseFMI2ModelExchange(t *testing.T) {
	d := readDesc(t, "fmi2-me.good.xml")
	if d.CoSim != nil || d.ME == nil || d.ME.CompletedIntegratorStep || d.States != 2 || d.EventIndicators != 1 {
		t.Fatalf("%+v %+v", d, d.ME)
	}
	if iface, err := d.Interface(""); iface != ME || err != nil {
		t.Errorf("default interface %q %v", iface, err)
	}
	if _, err := d.Interface("CoSimulation"); err == nil || err.Error() != "the FMU has no CoSimulation interface: it has ModelExchange" {
		t.Errorf("co-simulation asked of a model exchange FMU: %v", err)
	}
	gear, _ := d.Variable("gear")
	if it, ok := gear.Item(-1); gear.Kind != Enum || !ok || it.Name != "R" || gear.Variability != "discrete" {
		t.Errorf("gear %+v", gear)
	}
	if h, _ := d.Variable("h"); h.Unit != "m" || h.Min == nil || *h.Min != 0 || h.Max != nil {
		t.Errorf("h %+v", h)
	}
	// The states named, for messages, in the order of the Derivatives.
	if want := []Derivative{{"der(h)", "h"}, {"der(v)", "v"}}; !reflect.DeepEqual(d.Derivatives, want) {
		t.Errorf("derivatives %v, want %v", d.Derivatives, want)
	}
}

// A path to no file names the FMU that is there: the closest name, the
// only one, or those there are.
func TestOpenNamesTheFMUThere(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cruise_controller.fmu")
	for _, tt := range []struct{ path, want string }{
		{"controller.fmu", " (" + dir + " has one FMU: cruise_controller.fmu)"},
		{"cruise_controler.fmu", " (" + dir + " has one FMU: cruise_controller.fmu)"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			_, err := Open(filepath.Join(dir, tt.path))
			if err == nil || !strings.HasSuffix(err.Error(), "no such file"+tt.want) {
				t.Errorf("%v; want it to end %q", err, "no such file"+tt.want)
			}
		})
	}
	write("lateral.fmu")
	write("readme.txt")
	if _, err := Open(filepath.Join(dir, "cruise_controler.fmu")); err == nil || !strings.HasSuffix(err.Error(), "(did you mean "+filepath.Join(dir, "cruise_controller.fmu")+"?)") {
		t.Errorf("a misspelt name: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "pid.fmu")); err == nil || !strings.HasSuffix(err.Error(), "("+dir+" has cruise_controller.fmu, lateral.fmu)") {
		t.Errorf("another name: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "pid.fmu")); err == nil || !strings.HasSuffix(err.Error(), "no such file") {
		t.Errorf("a folder without FMUs: %v", err)
	}
}

package fmu

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
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
		{Name: "setSpeed", VR: 0, Type: "Real", Kind: Float64, Causality: "parameter", Variability: "tunable", Unit: "m/s", Start: "20"},
		{Name: "groundspeed", VR: 4, Type: "Real", Kind: Float64, Causality: "input", Variability: "continuous", Unit: "km/h", Start: "0"},
		{Name: "gear", VR: 1, Type: "Integer", Kind: Int32, Causality: "output", Variability: "discrete"},
		{Name: "on", VR: 2, Type: "Boolean", Kind: Bool, Causality: "input", Variability: "discrete", Start: "true"},
		{Name: "label", VR: 3, Type: "String", Kind: Unsupported, Causality: "local", Variability: "fixed", Start: "x"},
	}
	if len(d.Variables) != len(want) {
		t.Fatalf("%d variables", len(d.Variables))
	}
	for i, w := range want {
		if d.Variables[i] != w {
			t.Errorf("variable %d:\n got %+v\nwant %+v", i, d.Variables[i], w)
		}
	}
}

func TestParseFMI3(t *testing.T) {
	d := readDesc(t, "fmi3-cruise.good.xml")
	if d.Major != 3 || d.Token != "{t}" || d.CoSim.ModelIdentifier != "cruise3" || d.CoSim.VariableStep ||
		d.CoSim.FixedInternalStepSize != 0.001 || strings.Join(d.Interfaces, ",") != "CoSimulation,ModelExchange" {
		t.Errorf("%+v %+v", d, d.CoSim)
	}
	want := []Variable{
		{Name: "setSpeed", VR: 0, Type: "Float64", Kind: Float64, Causality: "parameter", Variability: "fixed", Unit: "m/s", Start: "20"},
		{Name: "throttle", VR: 5, Type: "Float32", Kind: Float32, Causality: "output", Variability: "continuous"},
		{Name: "mode", VR: 6, Type: "Int32", Kind: Int32, Causality: "input", Variability: "discrete", Start: "1"},
		{Name: "on", VR: 7, Type: "Boolean", Kind: Bool, Causality: "input", Variability: "discrete", Start: "false"},
		{Name: "big", VR: 8, Type: "Int64", Kind: Unsupported, Causality: "output", Variability: "discrete"},
		{Name: "table", VR: 9, Type: "Float64", Kind: Float64, Causality: "parameter", Variability: "tunable", Start: "1 2 3", Array: true},
	}
	for i, w := range want {
		if i >= len(d.Variables) || d.Variables[i] != w {
			t.Errorf("variable %d:\n got %+v\nwant %+v", i, d.Variables[i], w)
		}
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
	u, err := f.Unpack(t.TempDir())
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
		folder, ext, ok := platformOf(tt.major, tt.goos, tt.arch)
		if folder != tt.folder || ext != tt.ext || ok != (tt.folder != "") {
			t.Errorf("%+v: %q %q %v", tt, folder, ext, ok)
		}
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
		dir(fmt.Sprintf("beamconnect-fmu-%d-456", os.Getpid())),  // this run's
		dir(fmt.Sprintf("beamconnect-fmu-%d-789", os.Getppid())), // another run, going on
		dir("beamconnect-fmu-2546998461"),                        // no pid in its name
		dir("someone-else"),
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
		_, err := Open(filepath.Join(dir, tt.path))
		if err == nil || !strings.HasSuffix(err.Error(), "no such file"+tt.want) {
			t.Errorf("%s: %v; want it to end %q", tt.path, err, "no such file"+tt.want)
		}
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

package examples

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/recording/recordingtest"
)

// fmu-cruise.json as a user runs it: the FMU built with the example's own
// command, validated and coupled to the emulated BeamNG by the beamconnect
// program (its FMU in a child process, the program itself as fmu-host),
// holding 20 m/s.
func TestFMUCruise(t *testing.T) {
	if testing.Short() {
		t.Skip("builds beamconnect and the FMU")
	}
	if testfmu.Platform(2) == "" {
		t.Skipf("the example FMU is built for x86-64 Linux; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := testfmu.Compiler(); err != nil {
		t.Skip("building the example FMU needs a C compiler (cc, or $CC): none found")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "beamconnect")
	// The documented build, into the test's folder: steps the run below
	// needs, not rows to test one by one.
	for _, args := range [][]string{
		{"run", "./fmu-cruise", "-o", filepath.Join(dir, "cruise.fmu")},
		{"build", "-o", bin, "../cmd/beamconnect"},
	} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	src, err := os.ReadFile("fmu-cruise/cruise.json")
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := filepath.Abs("../schemas/config.schema.json")
	rig := filepath.Join(dir, "cruise.json")
	os.WriteFile(rig, []byte(strings.Replace(string(src), "../schemas/config.schema.json", filepath.ToSlash(schema), 1)), 0o644)

	if out, err := exec.Command(bin, "validate", rig).CombinedOutput(); err != nil || !strings.HasSuffix(string(out), "cruise.json: valid\n") {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	fmuPassesChecks(t, bin, filepath.Join(dir, "cruise.fmu"))
	rec := filepath.Join(dir, "run.csv")
	// 10 s of simulation, however long the machine takes: in lockstep a
	// loaded machine slows the run, and changes nothing else.
	cmd := exec.Command(bin, "run", rig, "--emulate", "--free-running", "--sim-duration", "10s", "--json", "--record", rec)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr.String())
	}
	var sum struct {
		Messages    int64    `json:"messages"`
		Model       string   `json:"model"`
		ModelFaults int64    `json:"model_faults"`
		Faults      []string `json:"faults"`
	}
	if err := json.Unmarshal(out, &sum); err != nil || sum.Model != "fmu" || sum.Messages != 2000 || sum.ModelFaults != 0 || len(sum.Faults) != 0 {
		t.Errorf("%v %+v\n%s", err, sum, stderr.String())
	}
	if v := recordingtest.Last(t, rec, "out1.groundspeed"); v < 19 || v > 21 {
		t.Errorf("speed at the end %v m/s, want 20", v)
	}
}

// The example FMU, FMI 2.0 and 3.0 (the -fmi 3 build), passes `fmu check`
// (the FMI standard's rules masters check at load time, FMPy's among
// them), and runs in fmusim, the Modelica Association's reference master,
// with its defaults.
func fmuPassesChecks(t *testing.T, bin, fmu2 string) {
	t.Helper()
	fmu3 := filepath.Join(filepath.Dir(fmu2), "cruise3.fmu")
	if out, err := exec.Command("go", "run", "./fmu-cruise", "-fmi", "3", "-o", fmu3).CombinedOutput(); err != nil {
		t.Fatalf("go run ./fmu-cruise -fmi 3: %v\n%s", err, out)
	}
	for _, f := range []string{fmu2, fmu3} {
		if out, err := exec.Command(bin, "fmu", "check", f).CombinedOutput(); err != nil {
			t.Errorf("fmu check %s: %v\n%s", f, err, out)
		}
		sim := os.Getenv("BEAMCONNECT_FMUSIM")
		if sim == "" {
			continue
		}
		out := filepath.Join(t.TempDir(), "out.csv")
		if msg, err := exec.Command(sim, "--output-file", out, f).CombinedOutput(); err != nil {
			t.Errorf("fmusim %s: %v\n%s", f, err, msg)
		}
		if data, err := os.ReadFile(out); err != nil || strings.Count(string(data), "\n") < 100 {
			t.Errorf("fmusim %s wrote %d lines: %v", f, strings.Count(string(data), "\n"), err)
		}
	}
}

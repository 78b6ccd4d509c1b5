package examples

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
)

var docs = flag.Bool("docs", false, "write docs/systems-cruise.svg, the plot of the example system's run")

// system-cruise as a user runs it (docs/systems.md): the two FMUs built
// and the archive packed by the example's own command, the system checked
// by validate (as the archive and as the .ssd with its files), its .ssd
// and parameter set valid against the SSP 2.0 schemas by xmllint, run
// against the emulated BeamNG by the beamconnect program (each FMU in its
// child process) for 15 s: healthy, the car at 20 m/s, every component's
// connectors recorded; plotted by component.
func TestSystemCruise(t *testing.T) {
	if testing.Short() {
		t.Skip("builds beamconnect and the FMUs")
	}
	if testfmu.Platform(2) == "" {
		t.Skipf("the example's FMUs are built for x86-64 Linux; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := testfmu.Compiler(); err != nil {
		t.Skip("building the example's FMUs needs a C compiler (cc, or $CC): none found")
	}
	dir := t.TempDir()
	for _, f := range []string{"SystemStructure.ssd", "resources/vehicle.json", "resources/tuning.ssv"} {
		data, err := os.ReadFile(filepath.Join("system-cruise", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, "resources"), 0o755)
		os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), data, 0o644)
	}
	bin := filepath.Join(dir, "beamconnect")
	for _, args := range [][]string{
		{"run", "./system-cruise", "-dir", dir},
		{"build", "-o", bin, "../cmd/beamconnect"},
	} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	archive, ssd := filepath.Join(dir, "cruise.ssp"), filepath.Join(dir, "SystemStructure.ssd")
	if out, err := exec.Command(bin, "validate", archive, ssd).CombinedOutput(); err != nil || string(out) != archive+": valid\n"+ssd+": valid\n" {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	if lint, err := exec.LookPath("xmllint"); err == nil {
		for _, f := range []struct{ file, schema string }{
			{"system-cruise/SystemStructure.ssd", "SystemStructureDescription.xsd"},
			{"system-cruise/resources/tuning.ssv", "SystemStructureParameterValues.xsd"},
		} {
			if out, err := exec.Command(lint, "--noout", "--schema", filepath.Join("..", "ssp", "schema", f.schema), f.file).CombinedOutput(); err != nil {
				t.Errorf("xmllint %s: %v\n%s", f.file, err, out)
			}
		}
	} else if os.Getenv("BEAMCONNECT_REQUIRE_XMLLINT") == "1" {
		t.Error("BEAMCONNECT_REQUIRE_XMLLINT=1, but there is no xmllint (apt-get install libxml2-utils)")
	}
	rec := filepath.Join(dir, "run.csv")
	cmd := exec.Command(bin, "run", archive, "--emulate", "--free-running", "--sim-duration", "15s", "--json", "--record", rec)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr.String())
	}
	var sum struct {
		Healthy  bool   `json:"healthy"`
		Messages int64  `json:"messages"`
		Model    string `json:"model"`
	}
	if err := json.Unmarshal(out, &sum); err != nil || !sum.Healthy || sum.Model != "system" || sum.Messages != 3000 {
		t.Errorf("%v %+v\n%s", err, sum, stderr.String())
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	header, last := strings.Split(lines[0], ","), strings.Split(lines[len(lines)-1], ",")
	speed := -1.0
	for i, c := range header {
		if c == "vehicle.groundspeed [m/s]" {
			speed, _ = strconv.ParseFloat(last[i], 64)
		}
	}
	if speed < 19.5 || speed > 20.5 {
		t.Errorf("the car at %v m/s at the end, want 20; columns %v", speed, header)
	}
	svg := filepath.Join(dir, "run.svg")
	fields := "vehicle.groundspeed,controller.speed,controller.demand,actuator.position,vehicle.throttle,vehicle.brake"
	if out, err := exec.Command(bin, "plot", rec, "--fields", fields, "-o", svg).CombinedOutput(); err != nil {
		t.Fatalf("plot: %v\n%s", err, out)
	}
	plot, _ := os.ReadFile(svg)
	for _, want := range []string{"component vehicle (its connectors)", "component controller (its connectors)", "component actuator (its connectors)", "controller.demand"} {
		if !strings.Contains(string(plot), want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	if *docs {
		if err := os.WriteFile(filepath.Join("..", "docs", "systems-cruise.svg"), plot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package main

import (
	"encoding/json"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/recording"
	"beamconnect/ssp"
)

// exampleSystem copies the example system (examples/system-cruise) into a
// folder of the test's, its two FMUs built, and packs it as cruise.ssp
// beside: the .ssd and the .ssp.
func exampleSystem(t *testing.T) (ssd, archive string) {
	t.Helper()
	ctl, act := testfmu.SystemForTest(t)
	dir := t.TempDir()
	files := map[string][]byte{}
	for name, from := range map[string]string{
		"SystemStructure.ssd":      "../../examples/system-cruise/SystemStructure.ssd",
		"resources/vehicle.json":   "../../examples/system-cruise/resources/vehicle.json",
		"resources/tuning.ssv":     "../../examples/system-cruise/resources/tuning.ssv",
		"resources/controller.fmu": ctl,
		"resources/actuator.fmu":   act,
	} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	ssd, archive = filepath.Join(dir, "unpacked", "SystemStructure.ssd"), filepath.Join(dir, "cruise.ssp")
	os.MkdirAll(filepath.Dir(ssd), 0o755)
	if err := ssp.Write(ssd, files); err != nil {
		t.Fatal(err)
	}
	if err := ssp.Write(archive, files); err != nil {
		t.Fatal(err)
	}
	return ssd, archive
}

// The run: the example system (BeamNG, the controller FMU, the
// actuator FMU) against the emulated BeamNG, free-running for 10 s of its
// time, as an .ssp and as an .ssd with its files: healthy, in strict
// lockstep (every message answered with controls every FMU computed for
// it, BeamNG never stalled), the car on its way to 20 m/s; the recording,
// CSV and MDF 4 alike, holds every connector of every component under its
// component's name and with its unit, on simulation time.
func TestRunExampleSystem(t *testing.T) {
	ssd, archive := exampleSystem(t)
	for _, tt := range []struct{ name, system, record string }{
		{"the .ssp, recorded as CSV", archive, "run.csv"},
		{"the .ssd, recorded as MDF 4", ssd, "run.mf4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), tt.record)
			out, errOut, code := exec(t, nil, "run", "--json", tt.system, "--emulate", "--free-running", "--sim-duration", "10s", "--record", rec)
			var s struct {
				Healthy        bool     `json:"healthy"`
				Model          string   `json:"model"`
				Messages       int64    `json:"messages"`
				NeutralReplies int64    `json:"neutral_replies"`
				ModelFaults    int64    `json:"model_faults"`
				Faults         []string `json:"faults"`
				ModelNotes     []string `json:"model_notes"`
			}
			if err := json.Unmarshal([]byte(out), &s); err != nil || code != exitOK {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errOut)
			}
			if !s.Healthy || s.Model != "system" || s.Messages != 2000 || s.NeutralReplies != 0 || s.ModelFaults != 0 || len(s.Faults) != 0 {
				t.Errorf("%+v\n%s", s, errOut)
			}
			if !slices.ContainsFunc(s.ModelNotes, func(n string) bool {
				return strings.Contains(n, "actuator: actuator.fmu: FMI 2.0 co-simulation, stepped every 2 messages")
			}) {
				t.Errorf("the notes do not say the actuator's rate: %q", s.ModelNotes)
			}
			src, err := recording.Open(rec)
			if err != nil {
				t.Fatal(err)
			}
			var units map[string]string
			rows, lastTime, lastSpeed := 0, 0.0, 0.0
			err = src(func(h *recording.Header) error {
				units = map[string]string{}
				for i, c := range h.Columns {
					if i < len(h.Units) {
						units[c] = h.Units[i]
					}
				}
				return nil
			}, func(h *recording.Header, r *recording.Row) error {
				rows++
				lastTime, lastSpeed = r.Time(), r.Values[slices.Index(h.Columns, "vehicle.groundspeed")]
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"vehicle.groundspeed": "m/s", "vehicle.throttle": "", "vehicle.brake": "",
				"controller.speed": "km/h", "controller.demand": "", "controller.setSpeed": "km/h", "controller.kp": "", "controller.ki": "",
				"actuator.command": "", "actuator.position": "", "actuator.throttle": "", "actuator.brake": "", "actuator.rateLimit": "1/s", "actuator.delay": "s",
			}
			for col, unit := range want {
				if got, ok := units[col]; !ok || got != unit {
					t.Errorf("column %s: unit %q (there: %v), want %q; columns %v", col, got, ok, unit, units)
				}
			}
			if rows != 2000 || math.Abs(lastTime-9.995) > 1e-9 || lastSpeed < 15 {
				t.Errorf("%d rows, the last at %v s, the car at %v m/s", rows, lastTime, lastSpeed)
			}
		})
	}
}

// validate on systems as a user meets it: the example valid, as an .ssp
// and an .ssd; an algebraic loop and a misspelt connector refused with
// where and what (package system's fixtures), exit 1; --json lists them.
func TestValidateSystem(t *testing.T) {
	ssd, archive := exampleSystem(t)
	dir := filepath.Dir(ssd)
	for _, f := range []string{"loop.ssd", "misspelt-connection.ssd", "vehicle.json", "tuning.ssv"} {
		data, err := os.ReadFile(filepath.Join("../../system/testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".ssd") {
			data = []byte(strings.NewReplacer(`"controller.fmu"`, `"resources/controller.fmu"`, `"actuator.fmu"`, `"resources/actuator.fmu"`,
				`"vehicle.json"`, `"resources/vehicle.json"`, `"tuning.ssv"`, `"resources/tuning.ssv"`).Replace(string(data)))
		} else {
			f = "resources/" + f
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"the example", []string{archive, ssd}, exitOK, archive + ": valid\n" + ssd + ": valid\n"},
		{"an algebraic loop", []string{filepath.Join(dir, "loop.ssd")}, exitFailed,
			"loop.ssd:47:7: Connection[governor.demand → controller.speed]: an algebraic loop: governor.demand → controller.speed → controller.demand → governor.speed → governor.demand"},
		{"a misspelt connector", []string{filepath.Join(dir, "misspelt-connection.ssd")}, exitFailed,
			`misspelt-connection.ssd:41:99: Connection[vehicle.groundspeed → controller.sped]: the component "controller" has no connector "sped" (did you mean "speed"?)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := exec(t, nil, append([]string{"validate"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want %d\n%s%s\nwant %s", code, tt.code, out, errOut, tt.want)
			}
		})
	}
	out, _, code := exec(t, nil, "validate", "--json", filepath.Join(dir, "loop.ssd"))
	var r struct {
		Valid bool `json:"valid"`
		Files []struct {
			Diagnostics []struct {
				Line    int    `json:"line"`
				Message string `json:"message"`
			} `json:"diagnostics"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailed || r.Valid || len(r.Files[0].Diagnostics) != 1 || r.Files[0].Diagnostics[0].Line != 47 ||
		!strings.HasPrefix(r.Files[0].Diagnostics[0].Message, "an algebraic loop") {
		t.Errorf("--json: exit %d, %v\n%s", code, err, out)
	}
}

// compile shows a system: its components and how each FMU runs, the
// connections with their conversions, the order of steps, the parameters
// and where they are set, then BeamNG's plan and how to start the system
// against a real BeamNG. Paths are the platform's own (Windows'
// backslashes), the archive's inside with slashes.
func TestCompileSystem(t *testing.T) {
	_, archive := exampleSystem(t)
	out, errOut, code := exec(t, nil, "compile", archive)
	for _, want := range []string{
		`system "cruise": 3 components, 4 connections`,
		"controller (" + archive + "!/resources/controller.fmu): FMI 3.0 co-simulation, stepped at every message",
		"actuator (" + archive + "!/resources/actuator.fmu): FMI 2.0 co-simulation, stepped every 2 messages by 0.01 s",
		"vehicle.groundspeed [m/s] → controller.speed [km/h]: converted from m/s to km/h",
		"then the FMUs stepped in this order, each taking what those before it computed: 1. controller, 2. actuator",
		"then the reply carries vehicle.throttle, vehicle.brake",
		"controller.setSpeed = 72 (" + archive + "!/resources/tuning.ssv:5)",
		"out 1  0     groundspeed  from BeamNG  17    B7    m/s   outputs[0]",
		// The guide starts the system, not its config inside the archive.
		"Start beamconnect first; it waits for BeamNG:\n       beamconnect run " + archive + "\n",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d; compile lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
}

// init --ssp writes a system of BeamNG and the FMUs, connected by name and
// unit, that validates as written and runs.
func TestInitSSP(t *testing.T) {
	ssd, _ := exampleSystem(t)
	res := filepath.Join(filepath.Dir(ssd), "resources")
	out := filepath.Join(t.TempDir(), "rig.ssp")
	_, errOut, code := exec(t, nil, "init", "--ssp", filepath.Join(res, "vehicle.json"), filepath.Join(res, "controller.fmu"), filepath.Join(res, "actuator.fmu"), "-o", out)
	errOut = strings.Join(strings.Fields(errOut), " ") // as wrapped for the terminal
	if code != exitOK || !strings.Contains(errOut, "BeamNG and 2 FMUs, 3 connections") ||
		!strings.Contains(errOut, "beamng.groundspeed → speedctl.speed (the only one of BeamNG's signals of its unit's quantity, converted to km/h: check it)") ||
		!strings.Contains(errOut, "actuator.throttle → beamng.throttle") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if o, e, code := exec(t, nil, "validate", out); code != exitOK || o != out+": valid\n" {
		t.Errorf("the draft: exit %d\n%s%s", code, o, e)
	}
	if o, e, code := exec(t, nil, "run", "--json", out, "--emulate", "--free-running", "--sim-duration", "1s"); code != exitOK {
		t.Errorf("the draft runs: exit %d\n%s%s", code, o, e)
	}
	// Unpacked, the draft's .ssd and parameter set are what xmllint takes
	// as SSP 2.0.
	unpacked := filepath.Join(t.TempDir(), "rig.ssd")
	if _, e, code := exec(t, nil, "init", "--ssp", filepath.Join(res, "vehicle.json"), filepath.Join(res, "controller.fmu"), filepath.Join(res, "actuator.fmu"), "-o", unpacked); code != exitOK {
		t.Fatalf("-o rig.ssd: exit %d\n%s", code, e)
	}
	if lint, err := osexec.LookPath("xmllint"); err == nil {
		for _, f := range []struct{ file, schema string }{
			{unpacked, "SystemStructureDescription.xsd"},
			{filepath.Join(filepath.Dir(unpacked), "resources", "parameters.ssv"), "SystemStructureParameterValues.xsd"},
		} {
			if o, err := osexec.Command(lint, "--noout", "--schema", filepath.Join("..", "..", "ssp", "schema", f.schema), f.file).CombinedOutput(); err != nil {
				t.Errorf("xmllint %s: %v\n%s", f.file, err, o)
			}
		}
	} else if os.Getenv("BEAMCONNECT_REQUIRE_XMLLINT") == "1" {
		t.Error("BEAMCONNECT_REQUIRE_XMLLINT=1, but there is no xmllint (apt-get install libxml2-utils)")
	}
	if _, e, code := exec(t, nil, "init", "--ssp", filepath.Join(res, "vehicle.json"), "-o", out); code != exitUsage || !strings.Contains(e, "needs the FMUs") {
		t.Errorf("no FMUs: exit %d\n%s", code, e)
	}
}

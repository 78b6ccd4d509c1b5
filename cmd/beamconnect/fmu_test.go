//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/recording/recordingtest"
)

// fmuRig writes the cruise-pedals rig with an FMU as its model, beside
// the FMU, and returns the config's path. The model timeout is 500 ms, so
// that a hung FMU is a fault well within a test's run.
func fmuRig(t *testing.T, o testfmu.Options, modelParams string) string {
	t.Helper()
	fmuPath := testfmu.ForTest(t, "cruise.fmu", o)
	src, err := os.ReadFile(pedals)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `"model": "cruise-pedals",
    "modelParams": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 }`, `"model": "fmu",
    "modelTimeoutMs": 500,
    "modelParams": `+modelParams, 1)
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, `"`+mustAbs(t, "../../schemas/config.schema.json")+`"`, 1)
	rig := filepath.Join(filepath.Dir(fmuPath), "rig.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return rig
}

// The cruise FMU holds 20 m/s against the emulated BeamNG, as the built-in
// cruise-pedals does: FMI 2.0 and 3.0, in a child process and in process.
func TestRunFMUHoldsSpeed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		o      testfmu.Options
		params string
	}{
		{"FMI 2.0", testfmu.Options{FMI: 2}, `{ "path": "cruise.fmu" }`},
		{"FMI 3.0", testfmu.Options{FMI: 3}, `{ "path": "cruise.fmu", "parameters": { "setSpeed": 20 } }`},
		{"FMI 2.0 in process", testfmu.Options{FMI: 2}, `{ "path": "cruise.fmu", "inProcess": true }`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rig := fmuRig(t, tt.o, tt.params)
			rec := filepath.Join(t.TempDir(), "run.csv")
			r, errOut := runJSON(t, rig, "--emulate", "--free-running", "--sim-duration", "10s", "--record", rec)
			// The FMU judged as the built-ins are: beamng.quality's loop, its
			// setpoint the FMU's parameter (its start value when the config
			// sets none), in --json and beside the ports in the recording.
			if c := r.Control; len(c) != 1 || c[0].Name != "groundspeed" || c[0].Signal != "out1.groundspeed" ||
				c[0].Setpoint != "setSpeed (model parameter)" || c[0].Value != 20 || c[0].Verdict != "good" {
				t.Errorf("control %+v", r.Control)
			}
			if v := recordingtest.Last(t, rec, "setpoint:out1.groundspeed"); v != 20 {
				t.Errorf("the recorded setpoint %v, want 20", v)
			}
			if r.Model != "fmu" || r.Messages != 2000 || r.Replies != r.Messages || r.Emulator == nil || r.Emulator.Stalls != 0 {
				t.Errorf("summary %+v\n%s", r, errOut)
			}
			if v := recordingtest.Last(t, rec, "out1.groundspeed"); v < 19 || v > 21 {
				t.Errorf("speed at the end %v m/s, want the set speed 20\n%s", v, errOut)
			}
		})
	}
}

// A crashing, hanging, erroring or NaN-writing FMU gives BeamNG neutral
// controls, is logged as a model fault when it happens, and run exits 1.
func TestRunFMUFaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fault, params, log string
	}{
		{"crash", `{ "path": "cruise.fmu" }`, "the FMU's host process ended: SIGSEGV: segmentation violation"},
		{"hang", `{ "path": "cruise.fmu", "restart": false }`, "the FMU's step has not returned after"},
		{"error", `{ "path": "cruise.fmu" }`, "the FMU failed: fmi2DoStep returned fmi2Error at t = "},
		{"nan", `{ "path": "cruise.fmu" }`, "the FMU's output throttle is NaN: not a usable control value"},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			t.Parallel()
			rig := fmuRig(t, testfmu.Options{Fault: tt.fault, After: 100}, tt.params)
			s, errOut := runFaulty(t, rig, "--emulate", "--free-running", "--sim-duration", "2s")
			if n, _ := s["model_faults"].(float64); n < 1 {
				t.Errorf("model faults %v\n%s", s["model_faults"], errOut)
			}
			if n, _ := s["neutral_replies"].(float64); n < 1 {
				t.Errorf("neutral replies %v: BeamNG kept the FMU's last controls\n%s", s["neutral_replies"], errOut)
			}
			if !hasFault(s, "model") {
				t.Errorf("faults %v", s["faults"])
			}
			// An FMU is no program of the user's: the verdict says what it did.
			if hasFault(s, "program") || (tt.fault == "nan" || tt.fault == "error") && !hasFault(s, "the FMU failed or gave NaN or infinite outputs") {
				t.Errorf("faults %v", s["faults"])
			}
			if !strings.Contains(errOut, "model fault") || !strings.Contains(errOut, tt.log) {
				t.Errorf("log lacks the fault %q:\n%s", tt.log, errOut)
			}
		})
	}
}

// validate opens the FMU and reports every mismatch at its line and
// column in the config.
func TestValidateFMUPositions(t *testing.T) {
	t.Parallel()
	rig := fmuRig(t, testfmu.Options{}, `{
      "path": "cruise.fmu",
      "inputs": { "grondspeed": "groundspeed" },
      "outputs": { "throttle": "throtle" },
      "parameters": { "maxThrotle": 0.5, "brake": 1 }
    }`)
	out, _, code := exec(t, nil, "validate", rig)
	if code != exitFailed {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		`:45:33: beamng.modelParams.inputs.grondspeed: the FMU has no variable "grondspeed" (did you mean "groundspeed"?)`,
		`:46:32: beamng.modelParams.outputs.throttle: "throtle" is not a field of the config's inputs (data to BeamNG) (did you mean "throttle"?)`,
		`:47:51: beamng.modelParams.parameters.brake: the FMU's "brake" is an output with variability continuous: it cannot be set`,
		`:47:37: beamng.modelParams.parameters.maxThrotle: the FMU has no variable "maxThrotle" (did you mean "maxThrottle"?)`,
		": invalid: 4 errors, 0 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	os.Remove(filepath.Join(filepath.Dir(rig), "cruise.fmu"))
	out, _, _ = exec(t, nil, "validate", rig)
	if !strings.Contains(out, ":44:15: beamng.modelParams.path: FMU ") || !strings.Contains(out, "cruise.fmu: no such file") {
		t.Errorf("a missing FMU:\n%s", out)
	}
}

func TestFMUInspect(t *testing.T) {
	t.Parallel()
	path := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 3, VariableStep: true, StepSize: 0.001})
	out, errOut, code := exec(t, nil, "fmu", "inspect", path)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		`FMI 3.0 FMU "cruise", generated by beamconnect testfmu`,
		"binary cruise, variable step sizes yes",
		"x86_64-linux: runs here",
		"default experiment: start 0 s, step 1 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if !hasRow(out, "groundspeed input continuous Float64 m/s 0 the vehicle's speed") ||
		!hasRow(out, "maxThrottle parameter fixed Float64 - 1 the throttle's upper limit") {
		t.Errorf("variables:\n%s", out)
	}
	out, _, _ = exec(t, nil, "fmu", "inspect", "--json", path)
	var info fmuInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.FMIVersion != "3.0" || !info.Runs ||
		len(info.Variables) != 8 || info.Variables[4].Name != "groundspeed" || info.Variables[4].Unit != "m/s" ||
		info.Variables[7].Name != "time" || info.Variables[7].Causality != "independent" {
		t.Errorf("%v %+v", err, info)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"fmu", "inspect"}, exitUsage, "expected 'inspect FILE'"},
		{"a missing file", []string{"fmu", "inspect", "nope.fmu"}, exitFailed, "FMU nope.fmu: no such file"},
		{"not an FMU", []string{"fmu", "inspect", pedals}, exitFailed, "is not an FMU: expected a zip archive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := exec(t, nil, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, %q", tt.args, code, errOut)
			}
		})
	}
	// The host is for beamconnect itself: not in the command list.
	if out, _, _ := exec(t, nil, "--help"); strings.Contains(out, "fmu-host") || !strings.Contains(out, "fmu ") {
		t.Errorf("command list:\n%s", out)
	}
}

// fmu check passes an FMU that keeps the FMI standard's load-time rules
// (exit 0) and lists, by file and line, every problem of one that does
// not (exit 1): a description's and a binary's; --json says the same.
func TestFMUCheck(t *testing.T) {
	t.Parallel()
	good := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 2, StepSize: 0.005})
	bad := filepath.Join(t.TempDir(), "bad.fmu")
	err := testfmu.Fake(bad, testfmu.Options{FMI: 2, Extra: []string{
		`<ScalarVariable name="extra" valueReference="50" causality="output"><Real/></ScalarVariable>`}}, "linux64")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"a good FMU", []string{"fmu", "check", good}, exitOK, []string{good + ": passes the FMI standard's checks"}},
		{"a bad FMU", []string{"fmu", "check", good, bad}, exitFailed, []string{
			good + ": passes",
			bad + `: modelDescription.xml:13: variable "extra" is an output, but ModelStructure's Outputs do not list it`,
			bad + `: modelDescription.xml:13: variable "extra" is an output with initial="calculated", but ModelStructure's InitialUnknowns do not list it`,
			bad + ": binaries/linux64/cruise.so: not a shared library",
			bad + ": 3 problems: masters may refuse to load it"}},
		{"no file", []string{"fmu", "check"}, exitUsage, []string{"expected 'inspect FILE', 'check FILE...'"}},
		{"a missing file", []string{"fmu", "check", "nope.fmu"}, exitFailed, []string{"FMU nope.fmu: no such file"}},
		{"not an FMU", []string{"fmu", "check", pedals}, exitFailed, []string{"is not an FMU: expected a zip archive"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := exec(t, nil, tt.args...)
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("missing %q", w)
				}
			}
			if code != tt.code || t.Failed() {
				t.Errorf("%v: exit %d\n%s%s", tt.args, code, out, errOut)
			}
		})
	}
	out, _, code := exec(t, nil, "fmu", "check", "--json", good, bad)
	var checks fmuChecks
	if err := json.Unmarshal([]byte(out), &checks); err != nil || code != exitFailed || checks.Passes || len(checks.FMUs) != 2 ||
		!checks.FMUs[0].Passes || checks.FMUs[1].Passes || len(checks.FMUs[1].Problems) != 3 {
		t.Errorf("--json: exit %d, %v\n%s", code, err, out)
	}
}

// init --from-fmu writes a config that validates with no warning, binds by
// name, sends an output that matches nothing to a free custom field, and
// proposes the control loop of a setpoint parameter and its signal
// (setSpeed and groundspeed); it runs as written, recording the FMU's
// outputs under their names, and judges the loop.
func TestInitFromFMU(t *testing.T) {
	t.Parallel()
	path := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{TimeOutput: true})
	rig := filepath.Join(filepath.Dir(path), "rig.json")
	_, errOut, code := exec(t, nil, "init", "--from-fmu", path, "-o", rig)
	if code != exitOK || !strings.Contains(errOut, "1 FMU inputs and 3 outputs bound") || strings.Contains(errOut, "is bound to no field") ||
		!strings.Contains(errOut, "fmuTime → custom1") || !strings.Contains(errOut, "beamng.quality judges how well groundspeed follows setSpeed") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	out, _, code := exec(t, nil, "validate", rig)
	if code != exitOK || strings.TrimSpace(out) != rig+": valid" {
		t.Errorf("exit %d\n%s", code, out)
	}
	data, _ := os.ReadFile(rig)
	for _, want := range []string{`"propertyName": "groundspeed"`, `"propertyName": "throttle"`, `"propertyName": "custom1"`, `"fmuTime": "custom1"`,
		`"path": "cruise.fmu"`, `"setSpeed": 20`, `"measured": "groundspeed"`, `"setpoint": "setSpeed"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config lacks %s:\n%s", want, data)
		}
	}
	// The addresses of a config of the user's instead of the defaults.
	tm := filepath.Join(filepath.Dir(path), "two.json")
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", path, "--addresses-from", "../../examples/two-machines.json", "-o", tm); code != exitOK {
		t.Fatalf("--addresses-from: exit %d\n%s", code, errOut)
	}
	two, _ := os.ReadFile(tm)
	for _, want := range []string{`"remoteIP": "192.168.10.20"`, `"remotePort": 64891`, `"remoteObject": "VS Vehicle 0"`, `"localIP": "192.168.10.30"`, `"localPort": 64890`} {
		if !strings.Contains(string(two), want) {
			t.Errorf("--addresses-from: the config lacks %s:\n%s", want, two)
		}
	}
	if out, _, code := exec(t, nil, "validate", tm); code != exitOK {
		t.Errorf("--addresses-from: exit %d\n%s", code, out)
	}
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", path, "--addresses-from", "../../examples/gen2-cruise.json"); code != exitFailed || !strings.Contains(errOut, "a Gen 2 config's addresses are in its CSV") {
		t.Errorf("--addresses-from a Gen 2 config: exit %d\n%s", code, errOut)
	}
	rec := filepath.Join(filepath.Dir(path), "run.csv")
	r, errOut := runJSON(t, rig, "--emulate", "--free-running", "--sim-duration", "1s", "--record", rec)
	if r.Messages != 200 || r.Model != "fmu" || len(r.Control) != 1 || r.Control[0].Name != "groundspeed" {
		t.Errorf("%+v\n%s", r, errOut)
	}
	b, _ := os.ReadFile(rec)
	if head, _, _ := strings.Cut(string(b), "\n"); !strings.Contains(head, ",in1.throttle,in1.brake,in1.fmuTime [s],") {
		t.Errorf("the recording's header %q: want the FMU's outputs under their names, fmuTime with its unit", head)
	}
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", path, "-o", rig); code != exitFailed || !strings.Contains(errOut, "exists") {
		t.Errorf("overwrite: exit %d %s", code, errOut)
	}
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", path, "--from-csv", "x.csv"); code != exitUsage || !strings.Contains(errOut, "expected one of them") {
		t.Errorf("both: exit %d %s", code, errOut)
	}
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", "nope.fmu"); code != exitFailed || !strings.Contains(errOut, "FMU nope.fmu: no such file") {
		t.Errorf("missing: exit %d %s", code, errOut)
	}
}

// An FMI 3.0 FMU with a fixed internal step of 1 s, far longer than any
// period: the config init --from-fmu writes validates, compile says the
// FMU is stepped every 200 messages by 1 s (multi-rate), and it runs so,
// said in the run's summary.
func TestInitFromFMUFixedStep(t *testing.T) {
	t.Parallel()
	path := testfmu.ForTest(t, "cruise.fmu", testfmu.Options{FMI: 3, FixedStep: 1, TimeOutput: true})
	rig := filepath.Join(filepath.Dir(path), "rig.json")
	if _, errOut, code := exec(t, nil, "init", "--from-fmu", path, "-o", rig); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, errOut)
	}
	if out, _, code := exec(t, nil, "validate", rig); code != exitOK || !strings.Contains(out, "valid") {
		t.Fatalf("validate: exit %d\n%s", code, out)
	}
	const multi = "stepped every 200 messages by 1 s (its fixed internal step (fixedInternalStepSize) of 1000 ms), its outputs held in between (multi-rate)"
	if out, errOut, code := exec(t, nil, "compile", rig); code != exitOK || !strings.Contains(out+errOut, multi) {
		t.Errorf("compile: exit %d\n%s%s", code, out, errOut)
	}
	r, errOut := runJSON(t, rig, "--emulate", "--free-running", "--sim-duration", "5s")
	if notes := strings.Join(r.ModelNotes, "\n"); !strings.Contains(notes, multi) || r.Replies != r.Messages || r.Messages != 1000 {
		t.Errorf("model notes %q, %d messages, %d replies\n%s", notes, r.Messages, r.Replies, errOut)
	}
}

// inspect names the binaries the archive holds, whatever they are called
// (and why one named for no model identifier does not run), the model
// exchange interface, arrays' dimensions and String and Binary start
// values; init explains an array input as the array it is.
func TestFMUInspectShapesAndBinaries(t *testing.T) {
	t.Parallel()
	desc, err := os.ReadFile("../../fmu/testdata/fmi3-types.good.xml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "types.fmu")
	if err := testfmu.Zip(path, map[string][]byte{"modelDescription.xml": desc, "binaries/x86_64-linux/x.so": []byte("not a library")}); err != nil {
		t.Fatal(err)
	}
	out, _, _ := exec(t, nil, "fmu", "inspect", path)
	for _, want := range []string{
		"binaries:           binaries/x86_64-linux/x.so",
		"model exchange:     binary types_me",
		"it has binaries/x86_64-linux/x.so, named for no model identifier of its modelDescription.xml (types, types_me)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	for _, row := range []string{
		"u input continuous Float64[n=3] - 1 2 3",
		"m output discrete Int32[2,3] - -",
		"label parameter fixed String* - left wheel",
		"blob parameter fixed Binary* - 0a1bff",
	} {
		if !hasRow(out, row) {
			t.Errorf("no row %q in\n%s", row, out)
		}
	}
	out, _, _ = exec(t, nil, "fmu", "inspect", "--json", path)
	var info fmuInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || len(info.Binaries) != 1 || info.Binaries[0] != "x86_64-linux/x.so" || len(info.Platforms) != 0 {
		t.Errorf("%v: binaries %v, platforms %v", err, info.Binaries, info.Platforms)
	}
	rig := filepath.Join(t.TempDir(), "rig.json")
	_, errOut, _ := exec(t, nil, "init", "--from-fmu", path, "-o", rig)
	data, _ := os.ReadFile(rig)
	if !strings.Contains(errOut, "inputs that match no signal BeamNG sends keep their start values") || !strings.Contains(errOut, ": u") ||
		!strings.Contains(string(data), `"u": [`) {
		t.Errorf("init: the array input u kept at its start:\n%s\n%s", errOut, data)
	}
}

// What the FMU would refuse is an error at the value's line and column
// before it runs: a value beyond a variable's min or max, an
// enumeration's item it does not have, a value of the wrong type.
func TestValidateFMUValuePositions(t *testing.T) {
	t.Parallel()
	rig := fmuRig(t, testfmu.Options{FMI: 3, Extra: []string{
		`<Float64 name="gain" valueReference="21" causality="parameter" variability="tunable" start="1" min="0" max="10"/>`,
		`<Enumeration name="mode" valueReference="22" causality="parameter" variability="fixed" declaredType="Mode" start="1"/>`,
		`<Int8 name="i8" valueReference="23" causality="parameter" variability="tunable" start="0"/>`,
	}, Types: `<EnumerationType name="Mode"><Item name="Eco" value="1"/><Item name="Sport" value="2"/></EnumerationType>`}, `{
      "path": "cruise.fmu",
      "parameters": { "gain": 50, "mode": "Race",
        "i8": 300 }
    }`)
	out, _, code := exec(t, nil, "validate", rig)
	if code != exitFailed {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		`:45:31: beamng.modelParams.parameters.gain: the FMU's "gain" takes 0 to 10 (its min and max): 50 is above`,
		`:45:43: beamng.modelParams.parameters.mode: the FMU's "mode" is an enumeration (Mode) with no item "Race": expected one of Eco (1), Sport (2)`,
		`:46:15: beamng.modelParams.parameters.i8: the FMU's "i8" is an Int8: expected a whole number from -128 to 127, got 300`,
		": invalid: 3 errors",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// An array parameter of an FMU takes a JSON array, as docs/fmu.md says:
// the schema lets it through, and the FMU's own shape judges its length.
func TestValidateFMUArrayParameter(t *testing.T) {
	t.Parallel()
	extra := testfmu.Options{FMI: 3, Extra: []string{
		`<Float64 name="gains" valueReference="24" causality="parameter" variability="tunable" start="1 2 3"><Dimension start="3"/></Float64>`,
	}}
	for _, tc := range []struct {
		name, params string
		code         int
		want         string
	}{
		{"three values", `"gains": [0.5, 1, 1.5]`, exitOK, ": valid"},
		{"two values", `"gains": [0.5, 1]`, exitFailed, "beamng.modelParams.parameters.gains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := fmuRig(t, extra, `{ "path": "cruise.fmu", "parameters": { `+tc.params+` } }`)
			out, _, code := exec(t, nil, "validate", rig)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d and %q in\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}

// An FMU that ends the simulation ends its model cleanly: the run goes on
// with neutral controls and exits 0, its summary saying when and why.
func TestRunFMUEndsCleanly(t *testing.T) {
	t.Parallel()
	for _, major := range []int{2, 3} {
		t.Run(fmt.Sprintf("FMI %d", major), func(t *testing.T) {
			t.Parallel()
			rig := fmuRig(t, testfmu.Options{FMI: major, Fault: "terminate", After: 200}, `{ "path": "cruise.fmu" }`)
			out, errOut, code := exec(t, nil, "run", rig, "--emulate", "--free-running", "--sim-duration", "2s")
			if code != exitOK || strings.Count(errOut, "the FMU ended the simulation at t = 0.9975 s") != 1 ||
				!strings.Contains(out+errOut, "the test track ends here") {
				t.Errorf("FMI %d: exit %d\n%s\n%s", major, code, out, errOut)
			}
		})
	}
}

// A Model Exchange FMU runs from a config as a co-simulation one does,
// integrated by beamconnect: its solver's steps and events in --json,
// and how it ran in the model notes.
func TestRunModelExchangeFMU(t *testing.T) {
	t.Parallel()
	path := testfmu.MEForTest(t, "ball.fmu", testfmu.MEOptions{FMI: 3, Model: "ball"})
	src, err := os.ReadFile(pedals)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `"model": "cruise-pedals",
    "modelParams": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 },
    "quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`, `"model": "fmu",
    "modelParams": { "path": "ball.fmu", "outputs": { "h": "throttle", "v": "brake" } }`, 1)
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, `"`+mustAbs(t, "../../schemas/config.schema.json")+`"`, 1)
	rig := filepath.Join(filepath.Dir(path), "rig.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "10s")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	steps, _ := r["solver_steps"].(float64)
	events, _ := r["solver_events"].(float64)
	notes, _ := json.Marshal(r["model_notes"])
	if steps < 700 || events < 10 || !strings.Contains(string(notes), "FMI 3.0 model exchange, integrated by beamconnect (dopri5") {
		t.Errorf("solver_steps %v, solver_events %v, notes %s\n%s", steps, events, notes, errOut)
	}
}

// Whatever the FMU's step (none, one it cannot change, one finer or
// coarser than BeamNG's physics step, a fixed internal step of 1 s), and
// for a model exchange FMU, the config init --from-fmu writes validates
// and runs as written.
func TestInitFromFMUConfigsRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		path func(t *testing.T) string
	}{
		{"FMI 2.0, no step", func(t *testing.T) string { return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 2}) }},
		{"FMI 2.0, fixed 1 ms", func(t *testing.T) string {
			return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 2, StepSize: 0.001})
		}},
		{"FMI 2.0, fixed 0.3 ms", func(t *testing.T) string {
			return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 2, StepSize: 0.0003})
		}},
		{"FMI 3.0, variable, 1 s suggested", func(t *testing.T) string {
			return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 3, StepSize: 1, VariableStep: true})
		}},
		{"FMI 3.0, fixed 1 s", func(t *testing.T) string { return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 3, StepSize: 1}) }},
		{"FMI 3.0, fixed internal 1 s", func(t *testing.T) string {
			return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 3, StepSize: 1, FixedStep: 1})
		}},
		{"FMI 3.0, fixed internal 0.7 ms", func(t *testing.T) string {
			return testfmu.ForTest(t, "x.fmu", testfmu.Options{FMI: 3, FixedStep: 0.0007})
		}},
		{"FMI 3.0 model exchange", func(t *testing.T) string {
			return testfmu.MEForTest(t, "x.fmu", testfmu.MEOptions{FMI: 3, Model: "ball"})
		}},
		{"FMI 2.0 model exchange", func(t *testing.T) string {
			return testfmu.MEForTest(t, "x.fmu", testfmu.MEOptions{FMI: 2, Model: "decay"})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := tt.path(t)
			rig := filepath.Join(filepath.Dir(path), "rig.json")
			if _, errOut, code := exec(t, nil, "init", "--from-fmu", path, "-o", rig); code != exitOK {
				t.Fatalf("init: exit %d\n%s", code, errOut)
			}
			if out, _, code := exec(t, nil, "validate", rig); code != exitOK {
				data, _ := os.ReadFile(rig)
				t.Fatalf("validate: exit %d\n%s\n%s", code, out, data)
			}
			out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "2s")
			var sum struct {
				Messages    int64    `json:"messages"`
				ModelFaults int64    `json:"model_faults"`
				Faults      []string `json:"faults"`
			}
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatalf("run: exit %d, %v\n%s\n%s", code, err, out, errOut)
			}
			// A loaded machine may keep the FMU from answering in time at
			// a 1 ms period, which the run rightly calls a fault (exit 1);
			// what this test asks is that the config runs: messages
			// answered, the model never faulting.
			slow := len(sum.Faults) == 1 && strings.Contains(sum.Faults[0], "the model could not keep up")
			if sum.Messages < 100 || sum.ModelFaults != 0 || code != exitOK && !slow {
				t.Errorf("run: exit %d, %d messages, %d model faults, faults %q\n%s", code, sum.Messages, sum.ModelFaults, sum.Faults, errOut)
			} else if slow {
				t.Logf("the machine was too loaded for the period: %s", sum.Faults[0])
			}
		})
	}
}

// A field bound to an FMU input that can never hold its values is
// refused at the binding's line and column; one whose values can be
// beyond the input, or whose fractions are rounded, is a warning there
// (a speed into an enumeration is both).
func TestValidateFMUInputTypes(t *testing.T) {
	t.Parallel()
	rig := fmuRig(t, testfmu.Options{FMI: 3, Extra: []string{
		`<Enumeration name="level" valueReference="21" causality="input" declaredType="Level" start="10"/>`,
		`<UInt8 name="few" valueReference="22" causality="input" min="5" start="5"/>`,
		`<Enumeration name="mode" valueReference="23" causality="input" declaredType="Mode" start="1"/>`,
		`<Int8 name="small" valueReference="24" causality="input" start="0"/>`,
		`<Enumeration name="shift" valueReference="25" causality="input" declaredType="Mode" start="1"/>`,
	}, Types: `<EnumerationType name="Level"><Item name="Low" value="10"/><Item name="High" value="20"/></EnumerationType>` +
		`<EnumerationType name="Mode"><Item name="Eco" value="1"/><Item name="Sport" value="2"/></EnumerationType>`}, `{
      "path": "cruise.fmu",
      "inputs": { "level": "throttle", "few": "brake",
        "mode": "groundspeed", "small": "rpm",
        "shift": "gear" }
    }`)
	out, _, code := exec(t, nil, "validate", rig)
	if code != exitFailed {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		`:45:28: beamng.modelParams.inputs.level: the FMU's input "level" (an enumeration (Level), holding the items Low (10), High (20)) is bound to throttle (outputs[0].ports[1][0]: 0 to 1), none of whose values it can hold`,
		`:45:47: beamng.modelParams.inputs.few: the FMU's input "few" (a UInt8, holding 5 to 255) is bound to brake (outputs[0].ports[1][1]: 0 to 1), none of whose values it can hold`,
		`:46:17: warning: beamng.modelParams.inputs.mode: the FMU's input "mode" (an enumeration (Mode), holding the items Eco (1), Sport (2)) is bound to groundspeed (outputs[0].ports[0][0]: 0 or more), whose values can be beyond it`,
		`:46:17: warning: beamng.modelParams.inputs.mode: the FMU's input "mode" (an enumeration (Mode), holding the items Eco (1), Sport (2)) is bound to groundspeed (outputs[0].ports[0][0]: 0 or more), a quantity that is not whole-numbered: its value is rounded to the nearest whole number at every message, and one that is no item clamped to the nearest item`,
		`:46:41: warning: beamng.modelParams.inputs.small: the FMU's input "small" (an Int8, holding -128 to 127) is bound to rpm (outputs[0].ports[2][0]: 0 or more), whose values can be beyond it: those are clamped to it at every message, counted as inputs_clamped and said once`,
		`:46:41: warning: beamng.modelParams.inputs.small: the FMU's input "small" (an Int8, holding -128 to 127) is bound to rpm (outputs[0].ports[2][0]: 0 or more), which is not whole-numbered: its value is rounded to the nearest whole number at every message`,
		`:47:18: warning: beamng.modelParams.inputs.shift: the FMU's input "shift" (an enumeration (Mode), holding the items Eco (1), Sport (2)) is bound to gear (outputs[0].ports[2][1]: -1 or more, whole numbers), whose values can be beyond it`,
		": invalid: 2 errors, 5 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// BeamNG's engine speed (800 rpm and more) into an FMU's Int8 input, its
// gear (up to 5 as the emulated car shifts) into an enumeration of three
// items: the FMU gets 127 and its nearest item, never a value it refuses
// (before, the undeclared item made the FMU fail and the run fault), each
// clamp counted as inputs_clamped in the summary and --json, the first of
// each input said once with its value.
func TestRunFMUInputsClamped(t *testing.T) {
	t.Parallel()
	path := testfmu.TypesForTest(t, 0)
	src, err := os.ReadFile(pedals)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `"model": "cruise-pedals",
    "modelParams": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 },
    "quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`, `"model": "fmu",
    "modelTimeoutMs": 500,
    "modelParams": { "path": "types.fmu", "deadlineMs": 100,
      "inputs": { "i8": "rpm", "mode": "gear", "u[1]": "fuel" },
      "outputs": { "y": "throttle" } }`, 1)
	cfg = strings.Replace(cfg, `{ "propertyName": "gear" }`, `{ "propertyName": "gear" }, { "propertyName": "fuel" }`, 1)
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, `"`+mustAbs(t, "../../schemas/config.schema.json")+`"`, 1)
	rig := filepath.Join(filepath.Dir(path), "rig.json")
	if err := os.WriteFile(rig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	valuesOnly(t, rig) // every message's values gathered, however loaded the machine
	rec := filepath.Join(t.TempDir(), "run.csv")
	// y = fuel (a full tank: 1) floors the throttle: the car shifts up to
	// its fifth gear within 10 s of simulation.
	out, errOut, _ := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "12s", "--record", rec)
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if g := recordingtest.Last(t, rec, "out3.gear"); g < 4 {
		t.Fatalf("the car reached gear %v only\n%s", g, errOut)
	}
	clamped, _ := s["inputs_clamped"].(float64)
	messages, _ := s["messages"].(float64)
	// rpm at every message, the gear from the fourth on.
	if clamped <= messages || s["model_failed"] != 0.0 || hasFault(s, "the FMU failed") {
		t.Errorf("inputs_clamped %v for %v messages, model_failed %v, faults %v\n%s", s["inputs_clamped"], messages, s["model_failed"], s["faults"], errOut)
	}
	for _, want := range []string{
		`input=i8 type=Int8 holds="-128 to 127" field=rpm value=800 sent=127`,
		`input=mode type=Enumeration holds="the items Eco (1), Sport (2), Race (3)" field=gear value=4 sent=3`,
	} {
		if n := strings.Count(errOut, want); n != 1 {
			t.Errorf("%d lines of %q, want 1\n%s", n, want, errOut)
		}
	}
	text, _, _ := exec(t, nil, "run", rig, "--emulate", "--free-running", "--sim-duration", "1s")
	if !strings.Contains(text, "data: inputs clamped ") {
		t.Errorf("the text summary does not say it:\n%s", text)
	}
}

package fmumodel

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/models"
	"beamconnect/ports"
)

// fakeFMU writes an FMU whose binary is a placeholder: validation reads
// only modelDescription.xml and the archive's list of files.
func fakeFMU(t *testing.T, o testfmu.Options, platforms ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "c.fmu")
	if err := testfmu.Fake(out, o, platforms...); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValidateFMU(t *testing.T) {
	here := testfmu.Platform(2)
	if here == "" {
		t.Skip("the FMU fixtures carry x86-64 Linux or Windows binaries")
	}
	good := fakeFMU(t, testfmu.Options{}, here)
	// An FMU with binaries for the other platforms only.
	elsewhere := slices.DeleteFunc([]string{"darwin64", "linux64", "win64"}, func(p string) bool { return p == here })
	// An FMU for the other OS of a rig: the way out is the other machine.
	otherOS, otherOSAdvice := "win64", "it has binaries for win64 only: run beamconnect.exe on the Windows machine, the BeamNG PC (docs/beamng.md, two machines: the same config, its addresses swapped), or export the FMU for Linux as well"
	if runtime.GOOS == "windows" {
		otherOS, otherOSAdvice = "linux64", "it has binaries for linux64 only"
	}
	ext := ".so"
	if runtime.GOOS == "windows" {
		ext = ".dll"
	}
	dir := t.TempDir()
	notZip := filepath.Join(dir, "text.fmu")
	os.WriteFile(notZip, []byte("hello"), 0o644)
	noMD := filepath.Join(dir, "nomd.fmu")
	testfmu.Zip(noMD, map[string][]byte{"binaries/linux64/cruise.so": nil})
	fmi1 := filepath.Join(dir, "fmi1.fmu")
	testfmu.Zip(fmi1, map[string][]byte{"modelDescription.xml": []byte(`<fmiModelDescription fmiVersion="1.0" modelName="m" guid="g"/>`)})
	me := filepath.Join(dir, "me.fmu")
	testfmu.Zip(me, map[string][]byte{"modelDescription.xml": []byte(`<fmiModelDescription fmiVersion="2.0" modelName="m" guid="g"><ModelExchange modelIdentifier="m"/><ModelVariables/></fmiModelDescription>`)})
	se := filepath.Join(dir, "se.fmu")
	testfmu.Zip(se, map[string][]byte{"modelDescription.xml": []byte(`<fmiModelDescription fmiVersion="3.0" modelName="m" instantiationToken="g"><ScheduledExecution modelIdentifier="m"/><ModelVariables/></fmiModelDescription>`)})
	clocked := filepath.Join(dir, "clocked.fmu")
	testfmu.Zip(clocked, map[string][]byte{"modelDescription.xml": []byte(`<fmiModelDescription fmiVersion="3.0" modelName="m" instantiationToken="g"><CoSimulation modelIdentifier="m"/><ModelVariables><Clock name="c" valueReference="1" causality="input"/></ModelVariables></fmiModelDescription>`),
		"binaries/x86_64-linux/m.so": nil})
	types := testfmu.Options{FMI: 3, Extra: []string{
		`<Int8 name="i8" valueReference="20" causality="parameter" variability="tunable" start="0"/>`,
		`<Float64 name="gain" valueReference="21" causality="parameter" variability="tunable" start="1" min="0" max="10"/>`,
		`<Enumeration name="mode" valueReference="22" causality="parameter" variability="fixed" declaredType="Mode" start="1"/>`,
		`<Boolean name="on" valueReference="23" causality="parameter" variability="fixed" start="true"/>`,
		`<Float64 name="table" valueReference="24" causality="parameter" variability="fixed" start="1 2 3"><Dimension start="3"/></Float64>`,
		`<String name="label" valueReference="25" causality="parameter" variability="fixed"><Start value="x"/></String>`,
		`<Binary name="blob" valueReference="26" causality="parameter" variability="fixed"/>`,
		`<Float64 name="u" valueReference="27" causality="input" start="0 0"><Dimension start="2"/></Float64>`,
	}, Types: `<EnumerationType name="Mode"><Item name="Eco" value="1"/><Item name="Sport" value="2"/></EnumerationType>`}
	typed := fakeFMU(t, types, testfmu.Platform(3))
	str := testfmu.Options{Extra: []string{`<ScalarVariable name="mode" valueReference="9" causality="output"><String/></ScalarVariable>`}}
	// Archives run refuses to unpack: validate must refuse them too.
	slip := filepath.Join(dir, "slip.fmu")
	testfmu.Zip(slip, map[string][]byte{"modelDescription.xml": []byte(testfmu.Description(testfmu.Options{})),
		"binaries/" + here + "/cruise.so": []byte("not a library"), "resources/../../../.bashrc": []byte("echo owned\n")})
	bomb := filepath.Join(dir, "bomb.fmu")
	zipBomb(t, bomb, here)

	for _, tt := range []struct {
		name   string
		params models.Params
		rig    string
		param  string // the finding's models.Param
		msg    string // in its message
		warn   bool
	}{
		{"no path", models.Params{}, "", "path", "missing: the fmu model needs the FMU to run", false},
		{"no such file", models.Params{"path": filepath.Join(dir, "nope.fmu")}, "", "path", "nope.fmu: no such file", false},
		{"a directory", models.Params{"path": dir}, "", "path", "is a directory: expected a .fmu file", false},
		{"not a zip", models.Params{"path": notZip}, "", "path", "text.fmu is not an FMU: expected a zip archive", false},
		{"no description", models.Params{"path": noMD}, "", "path", "nomd.fmu is not an FMU: the archive has no modelDescription.xml at its top", false},
		{"FMI 1.0", models.Params{"path": fmi1}, "", "path", `fmiVersion "1.0" is not supported: expected 2.0 or 3.0`, false},
		{"model exchange, no binary", models.Params{"path": me}, "", "path", "has no binary for this machine (binaries/" + here + "/m" + ext + ", FMI 2.0)", false},
		{"model exchange asked of a co-simulation FMU", models.Params{"path": good, "interface": "ModelExchange"}, "", "interface", "the FMU has no ModelExchange interface: it has CoSimulation", false},
		{"scheduled execution", models.Params{"path": se}, "", "path", "the FMU has the ScheduledExecution interface only: beamconnect runs FMUs for co-simulation and model exchange", false},
		{"clocks", models.Params{"path": clocked}, "", "path", "declares clocks: beamconnect does not drive FMI 3.0 clocks", false},
		{"a solver for co-simulation", models.Params{"path": good, "solver": "rk4"}, "", "solver", "the FMU runs as co-simulation, with its own solver", false},
		{"entry outside", models.Params{"path": slip}, "", "path", `slip.fmu: entry "resources/../../../.bashrc" lies outside the archive's folder`, false},
		{"unpacks too large", models.Params{"path": bomb}, "", "path", "bomb.fmu unpacks to more than 4294967296 bytes", false},
		{"no binary here", models.Params{"path": fakeFMU(t, testfmu.Options{}, elsewhere...)}, "", "path",
			"has no binary for this machine (binaries/" + here + "/cruise" + ext + ", FMI 2.0): it has binaries for " + strings.Join(elsewhere, ", ") + " only", false},
		{"for the other OS only", models.Params{"path": fakeFMU(t, testfmu.Options{}, otherOS)}, "", "path", otherOSAdvice, false},
		{"source only", models.Params{"path": fakeFMU(t, testfmu.Options{FMI: 3})}, "", "path",
			"no binary for any platform (a source-only FMU: build it for " + testfmu.Platform(3) + " first)", false},
		{"unknown variable", models.Params{"path": good, "inputs": map[string]any{"grondspeed": "groundspeed"}}, "", "inputs/grondspeed",
			`the FMU has no variable "grondspeed" (did you mean "groundspeed"?)`, false},
		{"wrong causality", models.Params{"path": good, "inputs": map[string]any{"throttle": "groundspeed"}}, "", "inputs/throttle",
			`the FMU's "throttle" is an output, not an input: map it under modelParams.outputs`, false},
		{"parameter mapped", models.Params{"path": good, "outputs": map[string]any{"kp": "throttle"}}, "", "outputs/kp",
			`the FMU's "kp" is a parameter, not an output: set it under modelParams.parameters`, false},
		{"no such field", models.Params{"path": good, "outputs": map[string]any{"throttle": "throtle"}}, "", "outputs/throttle",
			`"throtle" is not a field of the config's inputs (data to BeamNG) (did you mean "throttle"?)`, false},
		{"not a name", models.Params{"path": good, "outputs": map[string]any{"throttle": 3.0}}, "", "outputs/throttle",
			"expected the name of a config field, got 3", false},
		{"two outputs, one field", models.Params{"path": good, "outputs": map[string]any{"brake": "throttle"}}, "", "outputs/brake",
			`the FMU's outputs "throttle" and "brake" both drive throttle: expected one output per field`, false},
		{"wrong type", models.Params{"path": fakeFMU(t, str, here), "outputs": map[string]any{"mode": "throttle", "throttle": "brake", "brake": "driveMode"}}, "", "outputs/mode",
			`the FMU's output "mode" is of type String: beamconnect exchanges numbers`, false},
		{"unknown parameter", models.Params{"path": good, "parameters": map[string]any{"kq": 1.0}}, "", "parameters/kq",
			`the FMU has no variable "kq" (did you mean "kp"?)`, false},
		{"not settable", models.Params{"path": good, "parameters": map[string]any{"throttle": 1.0}}, "", "parameters/throttle",
			`the FMU's "throttle" is an output with variability continuous: it cannot be set`, false},
		{"parameter's type", models.Params{"path": good, "parameters": map[string]any{"kp": "high"}}, "", "parameters/kp",
			`the FMU's "kp" is a Real: expected a number, got the string "high"`, false},
		{"bound input given a value", models.Params{"path": good, "parameters": map[string]any{"groundspeed": 3.0}}, "", "parameters/groundspeed",
			`the FMU's input "groundspeed" is bound to the field groundspeed: the value given here is replaced`, true},
		{"fixed step, no period fits", models.Params{"path": fakeFMU(t, testfmu.Options{StepSize: 0.0049999}, here)}, "", "path",
			"the FMU steps by 4.9999 ms, its DefaultExperiment stepSize, the only step size it takes (canHandleVariableCommunicationStepSize is false); no whole number of the coupling's periods of 5 ms (up to 10000) is a whole number of its steps", false},
		{"below min", models.Params{"path": typed, "parameters": map[string]any{"gain": -1.0}}, "", "parameters/gain",
			`the FMU's "gain" takes 0 to 10 (its min and max): -1 is below`, false},
		{"above max", models.Params{"path": typed, "parameters": map[string]any{"gain": 11.0}}, "", "parameters/gain",
			`the FMU's "gain" takes 0 to 10 (its min and max): 11 is above`, false},
		{"beyond the type", models.Params{"path": typed, "parameters": map[string]any{"i8": 300.0}}, "", "parameters/i8",
			`the FMU's "i8" is an Int8: expected a whole number from -128 to 127, got 300`, false},
		{"not whole", models.Params{"path": typed, "parameters": map[string]any{"i8": 1.5}}, "", "parameters/i8",
			`expected a whole number from -128 to 127, got 1.5`, false},
		{"no such item", models.Params{"path": typed, "parameters": map[string]any{"mode": 3.0}}, "", "parameters/mode",
			`the FMU's "mode" is an enumeration (Mode) with no item of value 3: expected one of Eco (1), Sport (2)`, false},
		{"no such item name", models.Params{"path": typed, "parameters": map[string]any{"mode": "Race"}}, "", "parameters/mode",
			`the FMU's "mode" is an enumeration (Mode) with no item "Race": expected one of Eco (1), Sport (2)`, false},
		{"a Boolean given a number", models.Params{"path": typed, "parameters": map[string]any{"on": 2.0}}, "", "parameters/on",
			`the FMU's "on" is a Boolean: expected true or false, got 2`, false},
		{"an array given too few", models.Params{"path": typed, "parameters": map[string]any{"table": []any{1.0, 2.0}}}, "", "parameters/table",
			`the FMU's "table" is an array of 3: expected 3 values, got 2`, false},
		{"an array given a number", models.Params{"path": typed, "parameters": map[string]any{"table": 1.0}}, "", "parameters/table",
			`the FMU's "table" is an array of 3: expected an array of 3 values, got 1`, false},
		{"a String given a number", models.Params{"path": typed, "parameters": map[string]any{"label": 1.0}}, "", "parameters/label",
			`the FMU's "label" is a String: expected text, got 1`, false},
		{"a Binary given text", models.Params{"path": typed, "parameters": map[string]any{"blob": "xyz"}}, "", "parameters/blob",
			`the FMU's "blob" is a Binary: expected its bytes as hexadecimal text`, false},
		{"an array element mapped past its end", models.Params{"path": typed, "inputs": map[string]any{"u[3]": "groundspeed"}}, "", "inputs/u[3]",
			`the FMU's "u" has the elements u[1]…u[2]: "u[3]" is none of them`, false},
		{"a whole array mapped", models.Params{"path": typed, "inputs": map[string]any{"u": "groundspeed"}}, "", "inputs/u",
			`the FMU's "u" is an array: map its elements one by one, e.g. "u[1]"`, false},
		{"an array's elements unbound", models.Params{"path": typed}, "", "",
			`the FMU's input "u[2]" is bound to no field and given no value: it keeps the value 0`, true},
		{"variable step, coarser", models.Params{"path": fakeFMU(t, testfmu.Options{StepSize: 0.001, VariableStep: true}, here)}, "", "path",
			"stepSize is 1 ms; the coupling steps it every 5 ms, coarser than it suggests", true},
		{"unbound output", models.Params{"path": fakeFMU(t, testfmu.Options{TimeOutput: true}, here)}, "", "",
			`the FMU's output "fmuTime" drives no field: it is recorded (model.fmuTime), BeamNG does not get it; map it with modelParams.outputs {"fmuTime": "FIELD"} to send it`, true},
		{"unbound input", models.Params{"path": good}, "no speed", "",
			`the FMU's input "groundspeed" is bound to no field and given no value`, true},
		{"ambiguous between vehicles", models.Params{"path": good}, "../../examples/follow.json", "inputs/groundspeed",
			`"groundspeed" is a field of several vehicles: expected one of ego.groundspeed, lead.groundspeed`, false},
		{"deadline", models.Params{"path": good, "deadlineMs": 100.0}, "real time", "deadlineMs", "100 ms is longer than the model timeout", false},
		{"deadline in lockstep", models.Params{"path": good, "deadlineMs": 100.0}, "", "deadlineMs", "100 ms has no effect in lockstep, where each reply waits for its step up to the model timeout (1500 ms)", true},
		{"inProcess's type", models.Params{"path": good, "inProcess": "yes"}, "", "inProcess", `expected true or false, got the string "yes"`, false},
		{"record: not a list", models.Params{"path": good, "record": "kp"}, "", "record",
			`expected a list of the FMU's variables to record, e.g. ["der(h)", "e"], or ["*"] for all of them; got the string "kp"`, false},
		{"record: no such variable", models.Params{"path": good, "record": []string{"kq"}}, "", "record/0",
			`the FMU has no variable "kq" (did you mean "kp"?)`, false},
		{"record: a String", models.Params{"path": fakeFMU(t, str, here), "record": []string{"mode"}}, "", "record/0",
			`the FMU's "mode" is of type String: a recording keeps numbers`, false},
		{"record: an array's element past its end", models.Params{"path": typed, "record": []string{"table[4]"}}, "", "record/0",
			`the FMU's "table" has the elements table[1]…table[3]: "table[4]" is none of them`, false},
		{"a step of its own longer than the model timeout", models.Params{"path": fakeFMU(t, testfmu.Options{FMI: 3, FixedStep: 0.01}, testfmu.Platform(3))}, "timeout 7 ms", "path",
			"the FMU is stepped every 2 messages, 10 ms at a time, for its fixed internal step (fixedInternalStepSize) of 10 ms; the model timeout, 7 ms (overdueDataTimeout of inputs[0]), is shorter than that step: one that takes longer is a fault", true},
		{"a fixed stepSize longer than the model timeout", models.Params{"path": fakeFMU(t, testfmu.Options{StepSize: 0.02}, here)}, "timeout 7 ms", "path",
			"the FMU is stepped every 4 messages, 20 ms at a time, for its DefaultExperiment stepSize, the only step size it takes (canHandleVariableCommunicationStepSize is false) of 20 ms; the model timeout, 7 ms (overdueDataTimeout of inputs[0]), is shorter", true},
		{"a step of its own within the model timeout", models.Params{"path": fakeFMU(t, testfmu.Options{FMI: 3, FixedStep: 0.01}, testfmu.Platform(3))}, "", "path",
			"!is shorter than that step", true},
		{"stepped every message, the model timeout shorter than the period", models.Params{"path": good}, "timeout 2 ms", "path",
			"!is shorter than that step", true},
		{"an unbound input given a value is meant", models.Params{"path": good, "parameters": map[string]any{"groundspeed": 3.0}}, "no speed", "",
			`!is bound to no field`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p *ports.Plan
			switch tt.rig {
			case "":
				p = plan(t, "../../examples/cruise-pedals.json")
			case "real time":
				p = plan(t, "../../examples/cruise-pedals.json").InRealTime()
			case "timeout 7 ms", "timeout 2 ms": // as an inputs group's overdueDataTimeoutMs makes it
				p = plan(t, "../../examples/cruise-pedals.json")
				p.ModelTimeout, p.ModelTimeoutFrom = 0.007, "overdueDataTimeout of inputs[0]"
				if tt.rig == "timeout 2 ms" {
					p.ModelTimeout = 0.002
				}
			case "no speed":
				p = planFrom(t, strings.Replace(readFile(t, "../../examples/cruise-pedals.json"), `"groundspeed"`, `"yaw"`, -1))
			default:
				p = plan(t, tt.rig)
			}
			found := ""
			if absent, ok := strings.CutPrefix(tt.msg, "!"); ok {
				// No finding of the kind at all.
				for _, f := range validateModel(tt.params, p) {
					if strings.Contains(f.Msg, absent) {
						t.Errorf("a finding %q", f.Error())
					}
				}
				return
			}
			for _, f := range validateModel(tt.params, p) {
				if f.Param == tt.param && strings.Contains(f.Msg, tt.msg) && f.Warning == tt.warn {
					return
				}
				found += "\n" + f.Error()
			}
			t.Errorf("no finding at %q with %q (warning %v); found:%s", tt.param, tt.msg, tt.warn, found)
		})
	}
}

// Values of every type that are right for their variables pass: a whole
// number within an Int8, a gain within its min and max, an enumeration's
// item by name, an array of the right length, text for a String,
// hexadecimal for a Binary, array elements mapped one by one.
func TestValidateFMUTypes(t *testing.T) {
	if testfmu.Platform(3) == "" {
		t.Skip("the FMU fixtures carry x86-64 Linux binaries")
	}
	path := fakeFMU(t, testfmu.Options{FMI: 3, Extra: []string{
		`<Int8 name="i8" valueReference="20" causality="parameter" variability="tunable" start="0"/>`,
		`<Float64 name="gain" valueReference="21" causality="parameter" variability="tunable" start="1" min="0" max="10"/>`,
		`<Enumeration name="mode" valueReference="22" causality="parameter" variability="fixed" declaredType="Mode" start="1"/>`,
		`<Float64 name="table" valueReference="24" causality="parameter" variability="fixed" start="1 2 3"><Dimension start="3"/></Float64>`,
		`<String name="label" valueReference="25" causality="parameter" variability="fixed"><Start value="x"/></String>`,
		`<Binary name="blob" valueReference="26" causality="parameter" variability="fixed"/>`,
		`<Float64 name="u" valueReference="27" causality="input" start="0 0"><Dimension start="2"/></Float64>`,
	}, Types: `<EnumerationType name="Mode"><Item name="Eco" value="1"/><Item name="Sport" value="2"/></EnumerationType>`}, testfmu.Platform(3))
	p := plan(t, "../../examples/cruise-pedals.json")
	params := models.Params{"path": path, "inputs": map[string]any{"u[1]": "groundspeed", "u[2]": "rpm"},
		"parameters": map[string]any{"i8": -128.0, "gain": 10.0, "mode": "Sport", "table": []any{4.0, 5.0, 6.0}, "label": "left", "blob": "0aff"}}
	for _, f := range validateModel(params, p) {
		if !f.Warning {
			t.Errorf("%s", f.Error())
		}
	}
	c, _ := checkFMU(params, p)
	vars, vals := c.fmiParams()
	if len(c.texts) != 2 || c.texts[1].Values[0] != "left" || len(vars) != 4 || len(vals) != 6 {
		t.Errorf("parameters %v %v, texts %+v", vars, vals, c.texts)
	}
	if len(c.bind.inputs) != 3 || !c.bind.inputs[1].bound || c.bind.inputs[2].field != "rpm" || c.bind.inVars[1].N != 2 {
		t.Errorf("inputs %+v, variables %+v", c.bind.inputs, c.bind.inVars)
	}
}

// zipBomb writes an FMU that says one of its files unpacks to 5 GiB (it
// does not: the size is only declared).
func zipBomb(t *testing.T, out, platform string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range map[string]string{"modelDescription.xml": testfmu.Description(testfmu.Options{}), "binaries/" + platform + "/cruise.so": "x"} {
		w, _ := zw.Create(name)
		w.Write([]byte(data))
	}
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "resources/huge.bin", Method: zip.Store, UncompressedSize64: 5 << 30, CompressedSize64: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte{0})
	zw.Close()
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With several vehicles, a name prefixed with the vehicle binds: the
// follow rig's ego and lead both map groundspeed, throttle and brake.
func TestValidateFMUVehicles(t *testing.T) {
	here := testfmu.Platform(2)
	if here == "" {
		t.Skip("the FMU fixtures carry x86-64 Linux or Windows binaries")
	}
	params := models.Params{"path": fakeFMU(t, testfmu.Options{}, here),
		"inputs":  map[string]any{"groundspeed": "ego.groundspeed"},
		"outputs": map[string]any{"throttle": "ego.throttle", "brake": "lead.brake"}}
	if fs := validateModel(params, plan(t, "../../examples/follow.json")); len(fs) != 0 {
		t.Errorf("%v", fs)
	}
	// The finding says where: a nested key as the config's path says it.
	f := models.Finding{Param: "inputs/a~1b", Msg: "m"}
	if f.Error() != "modelParams.inputs.a/b: m" {
		t.Errorf("%q", f.Error())
	}
}

// On Gen 2 the cruise FMU's names find the CSV's signals: groundspeed is
// vehicleGroundSpeed's meaning, throttle and brake the Driver rows; the
// CSV names bind too, with or without their group.
func TestValidateFMUGen2(t *testing.T) {
	here := testfmu.Platform(2)
	if here == "" {
		t.Skip("the FMU fixtures carry x86-64 Linux or Windows binaries")
	}
	path := fakeFMU(t, testfmu.Options{}, here)
	p := plan(t, "../../examples/gen2-cruise.json")
	if fs := validateModel(models.Params{"path": path}, p); len(fs) != 0 {
		t.Errorf("by name: %v", fs)
	}
	mapped := models.Params{"path": path,
		"inputs":  map[string]any{"groundspeed": "Kinematics/vehicleGroundSpeed"},
		"outputs": map[string]any{"throttle": "Driver/throttle", "brake": "brake"}}
	if fs := validateModel(mapped, p); len(fs) != 0 {
		t.Errorf("by CSV name: %v", fs)
	}
}

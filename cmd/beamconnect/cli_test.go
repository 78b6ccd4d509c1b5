package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// exec runs the CLI in-process with the given environment variables.
func exec(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, env{
		stdout: &out, stderr: &errb,
		lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
	})
	return out.String(), errb.String(), code
}

// argsName names a table row by its command line, each path by its
// file's name: a subtest's name, short and without slashes.
func argsName(args []string) string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = filepath.Base(a)
	}
	return strings.Join(names, " ")
}

const (
	pedals = "../../examples/cruise-pedals.json"
	bad    = "../../config/testdata/unknown-signal.bad.json"
)

func TestValidate(t *testing.T) {
	// (examples/fmu-cruise/ is not among them: its FMU is built by a
	// command, and the examples' own test builds it and validates the pair.)
	examples, _ := filepath.Glob("../../examples/*.json")
	out, errOut, code := exec(t, nil, append([]string{"validate"}, examples...)...)
	if code != exitOK || errOut != "" {
		t.Fatalf("validate examples: exit %d\n%s%s", code, out, errOut)
	}
	_, noPython := osexec.LookPath("python3")
	for _, f := range examples {
		verdict := f + ": valid\n"
		if strings.HasSuffix(f, "two-machines.json") {
			verdict = f + ": valid, 1 warning\n" // BeamNG on another machine: a LAN address bound
		}
		if strings.HasPrefix(filepath.Base(f), "exec-") && noPython != nil {
			verdict = f + ": valid, 1 warning\n" // its program, python3, is not on this machine
		}
		if !strings.Contains(out, verdict) {
			t.Errorf("no verdict for %s in\n%s", f, out)
		}
	}

	// One bad file among good ones fails the run and names file:line:col.
	out, _, code = exec(t, nil, "validate", pedals, bad)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d", code, exitFailed)
	}
	for _, want := range []string{
		pedals + ": valid\n",
		bad + `:13:29: outputs[0].ports[2][1].propertyName: "grondspeed" is not a BeamNG signal (did you mean "groundspeed"?)`,
		bad + ": invalid: 5 errors, 0 warnings\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}

	// Warnings alone do not fail.
	out, _, code = exec(t, nil, "validate", "../../config/testdata/deprecated.good.json")
	if code != exitOK || !strings.Contains(out, "valid, 3 warnings") {
		t.Errorf("exit %d\n%s", code, out)
	}
	// A missing file is a failed check, not a crash.
	out, _, code = exec(t, nil, "validate", "no-such.json")
	if code != exitFailed || !strings.Contains(out, "no-such.json: cannot read") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, errOut, code := exec(t, nil, "validate"); code != exitUsage || !strings.Contains(errOut, "expected at least one config file") {
		t.Errorf("validate without files: exit %d %q", code, errOut)
	}
}

// Every bad fixture fails validate with its file:line:col messages.
func TestValidateEveryBadFixture(t *testing.T) {
	files, _ := filepath.Glob("../../config/testdata/*.bad.json")
	for _, f := range files {
		out, _, code := exec(t, nil, "validate", f)
		want, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".err")
		if err != nil {
			t.Fatal(err)
		}
		// The fixture's messages name the file as the config tests load it
		// (a CSV beside it is joined to its folder, with a backslash on
		// Windows).
		want = bytes.ReplaceAll(want, []byte("testdata/"), []byte(filepath.Dir(f)+string(filepath.Separator)))
		if code != exitFailed || !strings.HasPrefix(out, string(want)) {
			t.Errorf("%s: exit %d\n%s\nwant the lines\n%s", f, code, out, want)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	out, _, code := exec(t, nil, "validate", "--json", pedals, bad)
	if code != exitFailed {
		t.Fatalf("exit %d", code)
	}
	var res struct {
		Valid bool
		Files []struct {
			File             string
			Valid            bool
			Errors, Warnings int
			Diagnostics      []jsonDiag
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Valid || len(res.Files) != 2 || !res.Files[0].Valid || res.Files[1].Valid || res.Files[1].Errors != 5 {
		t.Fatalf("%+v", res)
	}
	d := res.Files[1].Diagnostics[0]
	if d.Line != 13 || d.Column != 29 || d.Path != "outputs[0].ports[2][1].propertyName" || d.Severity != "error" || !strings.Contains(d.Message, "groundspeed") {
		t.Errorf("first diagnostic %+v", d)
	}
}

func TestCompile(t *testing.T) {
	out, errOut, code := exec(t, nil, "compile", pedals)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"BeamNG sends every 5 ms (10 physics steps of 0.5 ms; sendSkips 9), at most 1 in flight",
		"       extensions.load('tech/vehicleSystemsCoupling'); tech_vehicleSystemsCoupling.startCoupling({simulinkTime=0.005, pingTime=1e-05, udpSendPort=64890, udpReceivePort=64891, udpSendIP='127.0.0.1', udpReceiveIP='127.0.0.1'})\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	for _, row := range []string{
		"PORT ELEM FIELD DIRECTION SLOT BANK UNIT CONTRACT",
		"in 0 0 directive link - - - -",
		"out 1 0 groundspeed from BeamNG 17 B7 m/s outputs[0]",
		"in 2 0 driveMode to BeamNG 13 A13 - inputs[0]",
		"out 4 0 time meta - - s outputs[0]",
	} {
		if !hasRow(out, row) {
			t.Errorf("no row %q in\n%s", row, out)
		}
	}
	// A config with warnings compiles; the warnings go to stderr, not into the table.
	out, errOut, code = exec(t, nil, "compile", "../../config/testdata/period-rounding.good.json")
	if code != exitOK || !strings.Contains(errOut, "BeamNG will really use 1.5 ms") || strings.Contains(out, "warning") ||
		!strings.Contains(out, "simulinkTime=0.0015,") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// An invalid config prints its errors and fails.
	_, errOut, code = exec(t, nil, "compile", bad)
	if code != exitFailed || !strings.Contains(errOut, bad+":13:29:") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	if _, _, code := exec(t, nil, "compile", pedals, pedals); code != exitUsage {
		t.Errorf("two files: exit %d", code)
	}
}

// compile says how to start and stop BeamNG's side, per vehicle, with the
// config's values: the console line, BeamNG's default line only where the
// config is BeamNG's default, the BeamNGpy line, the stop line, the debug
// logs, and for two machines the addresses and firewall rules.
func TestCompileGuide(t *testing.T) {
	const start = "extensions.load('tech/vehicleSystemsCoupling'); tech_vehicleSystemsCoupling.startCoupling("
	for _, tt := range []struct {
		config    string
		want, not []string
	}{
		{pedals, []string{
			"  1. Start beamconnect first; it waits for BeamNG:\n       beamconnect run " + pedals + "\n",
			"set the console's context at its bottom left to the vehicle (BeamNG - Current Vehicle)",
			"       " + start + "{simulinkTime=0.005, pingTime=1e-05, udpSendPort=64890, udpReceivePort=64891, udpSendIP='127.0.0.1', udpReceiveIP='127.0.0.1'})\n",
			"controller.loadControllerExternal('tech/vehicleSystemsCoupling', 'vehicleSystemsCoupling', {})",
			`vehicle.queue_lua_command("` + start + "{simulinkTime=0.005",
			"       extensions.tech_vehicleSystemsCoupling.stopCoupling()\n",
			"BeamNG on another machine: set beamng.localIP",
		}, []string{"New-NetFirewallRule", "simulinkSendLog.csv"}},
		{"../../examples/two-machines.json", []string{
			"udpSendIP='192.168.10.30', udpReceiveIP='192.168.10.20', debugFile=true})",
			"(not controller.loadControllerExternal('tech/vehicleSystemsCoupling', …) nor the shortcut",
			"BeamNG then writes simulinkSendLog.csv, simulinkReceiveLog.csv and simulinkPhysicsStepsLog.csv",
			"Two machines: BeamNG sends to 192.168.10.30 (this machine) and binds 192.168.10.20 (its own address).",
			`New-NetFirewallRule -DisplayName "BeamNG coupling from beamconnect" -Direction Inbound -Protocol UDP -LocalPort 64891 -Action Allow`,
			"sudo ufw allow 64890/udp",
		}, []string{"'vehicleSystemsCoupling', {})"}},
		{"../../examples/follow.json", []string{
			`vehicle "ego" (beamconnect binds 127.0.0.1:64890, BeamNG binds 127.0.0.1:64891):`,
			`vehicle "lead" (beamconnect binds 127.0.0.1:64892, BeamNG binds 127.0.0.1:64893):`,
			"udpSendPort=64892, udpReceivePort=64893",
		}, nil},
		{"../../examples/gen2-cruise.json", []string{
			"Co-Simulation Signal Editor;\n     select the vehicle, load " + filepath.FromSlash("../../examples/gen2-cruise.csv"),
			"controller.loadControllerExternal('tech/cosimulationCoupling', 'cosimulationCoupling', lpack.encode(",
			"controller.getController('cosimulationCoupling').stop(); controller.unloadControllerExternal('cosimulationCoupling')",
			"set the CSV's otherUDP IP to this machine's address",
		}, []string{"tech_vehicleSystemsCoupling"}},
	} {
		t.Run(filepath.Base(tt.config), func(t *testing.T) {
			out, errOut, code := exec(t, nil, "compile", tt.config)
			if code != exitOK {
				t.Fatalf("%s: exit %d\n%s", tt.config, code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s: no %q in\n%s", tt.config, w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("%s: %q should not be in\n%s", tt.config, n, out)
				}
			}
		})
	}
	out, _, _ := exec(t, nil, "compile", "--json", "../../examples/gen2-cruise.json")
	if !strings.Contains(out, `"stop_command": "controller.getController('cosimulationCoupling').stop()`) {
		t.Errorf("compile --json has no stop command:\n%s", out)
	}
}

func TestCompileJSON(t *testing.T) {
	out, _, code := exec(t, nil, "compile", "--json", "../../examples/cruise-torque.json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var plan struct {
		PeriodS   float64 `json:"period_s"`
		SendSkips int     `json:"send_skips"`
		Vehicles  []struct {
			StartCommand string `json:"start_command"`
			Mapped       []int  `json:"mapped_reply_slots"`
		}
		Inputs []struct {
			Port   int
			Width  int
			Fields []struct {
				Name   string
				Slot   *int
				Ref    string `json:"bank_ref"`
				Source string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if plan.PeriodS != 0.005 || plan.SendSkips != 9 || len(plan.Vehicles) != 1 || !strings.Contains(plan.Vehicles[0].StartCommand, "simulinkTime=0.005") {
		t.Errorf("%+v", plan)
	}
	if got := plan.Vehicles[0].Mapped; len(got) != 9 || got[0] != 5 || got[8] != 13 {
		t.Errorf("mapped reply slots %v, want 5…13", got)
	}
	if f := plan.Inputs[2].Fields[0]; plan.Inputs[2].Width != 4 || f.Slot == nil || *f.Slot != 9 || f.Ref != "A9" {
		t.Errorf("propulsion torque port %+v", plan.Inputs[2])
	}
}

func TestBanks(t *testing.T) {
	out, _, code := exec(t, nil, "banks")
	if code != exitOK || strings.Count(out, "\n") != 111+64+5 {
		t.Errorf("banks: exit %d, %d lines", code, strings.Count(out, "\n"))
	}
	out, _, _ = exec(t, nil, "banks", "--bank", "g", "--from")
	// Bank G is wheel RR (BeamNG's own bank tables repeat the RL names there) and downForce is a force.
	if !hasRow(out, "G6 60 wheelRR_downForce N RR wheel load") ||
		strings.Contains(out, "wheelRL") || strings.Contains(out, "client → BeamNG") {
		t.Errorf("bank G:\n%s", out)
	}
	out, _, _ = exec(t, nil, "banks", "--json", "drivemode")
	var slots []bankSlot
	if err := json.Unmarshal([]byte(out), &slots); err != nil || len(slots) != 1 || slots[0].Ref != "A13" || slots[0].Direction != "to" {
		t.Errorf("drivemode: %v %+v", err, slots)
	}
	if _, _, code := exec(t, nil, "banks", "nothing-like-this"); code != exitFailed {
		t.Errorf("no match: exit %d", code)
	}
	if _, errOut, code := exec(t, nil, "banks", "--bank", "Z"); code != exitUsage || !strings.Contains(errOut, "A–H") {
		t.Errorf("--bank Z: exit %d %q", code, errOut)
	}
}

func TestEnvironmentFallback(t *testing.T) {
	out, _, code := exec(t, map[string]string{"BEAMCONNECT_JSON": "true"}, "banks", "rpm")
	if code != exitOK || !strings.HasPrefix(out, "[") {
		t.Errorf("BEAMCONNECT_JSON=true did not select JSON: %q", out)
	}
	// The command line wins over the environment.
	out, _, _ = exec(t, map[string]string{"BEAMCONNECT_BANK": "H"}, "banks", "--bank", "C", "rpm")
	if !strings.Contains(out, "C9") {
		t.Errorf("flag did not win over BEAMCONNECT_BANK:\n%s", out)
	}
	out, _, _ = exec(t, map[string]string{"BEAMCONNECT_BANK": "H"}, "banks", "rpm")
	if strings.Contains(out, "C9") {
		t.Errorf("BEAMCONNECT_BANK=H ignored:\n%s", out)
	}
	_, errOut, code := exec(t, map[string]string{"BEAMCONNECT_JSON": "maybe"}, "banks")
	if code != exitUsage || !strings.Contains(errOut, `BEAMCONNECT_JSON="maybe"`) {
		t.Errorf("bad env value: exit %d %q", code, errOut)
	}
	_, errOut, code = exec(t, map[string]string{"BEAMCONNECT_LOG_LEVEL": "loud"}, "version")
	if code != exitUsage || !strings.Contains(errOut, "--log-level") {
		t.Errorf("bad log level: exit %d %q", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := exec(t, nil, "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"validate", "compile", "banks", "version"} {
		if !strings.Contains(out, "  "+c) {
			t.Errorf("--help does not list %s", c)
		}
		hout, _, code := exec(t, nil, c, "--help")
		if code != exitOK || strings.Count(hout, "Usage: beamconnect "+c) != 1 || !strings.Contains(hout, "BEAMCONNECT_<FLAG>") {
			t.Errorf("%s --help: exit %d\n%s", c, code, hout)
		}
		if hout2, _, _ := exec(t, nil, "help", c); hout2 != hout {
			t.Errorf("help %s differs from %s --help", c, c)
		}
	}
	if _, errOut, code := exec(t, nil, "frobnicate"); code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d %q", code, errOut)
	}
	if _, _, code := exec(t, nil); code != exitUsage {
		t.Errorf("no command: exit %d", code)
	}
	if _, errOut, code := exec(t, nil, "validate", "--jsn"); code != exitUsage || !strings.Contains(errOut, "unknown flag: --jsn") {
		t.Errorf("unknown flag: exit %d %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := exec(t, nil, "version")
	if code != exitOK || !strings.HasPrefix(out, "beamconnect ") {
		t.Errorf("version: %d %q", code, out)
	}
	for _, want := range []string{"Gen 1 vehicleSystemsCoupling (fixed: 111 doubles from BeamNG, 64 to it)", "Gen 2 cosimulationCoupling"} {
		if !strings.Contains(out, want) {
			t.Errorf("version does not name the protocol %q:\n%s", want, out)
		}
	}
	out, _, _ = exec(t, nil, "--version", "--json")
	var v buildInfo
	if json.Unmarshal([]byte(out), &v) != nil || v.Go == "" || len(v.Protocols) != 2 {
		t.Errorf("version --json: %q", out)
	}
}

// What a binary built from a clone says: the module's pseudo-version, the
// commit, its time, and whether the tree had changes.
func TestVersionFromBuildInfo(t *testing.T) {
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want []string
	}{
		{"a clone", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123141545-d78539622e38"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "d78539622e383b44c241ab0b5260c41e17978d2b"}, {Key: "vcs.time", Value: "2026-11-23T14:15:45Z"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"beamconnect v0.0.0-20261123141545-d78539622e38\n", "  revision d78539622e383b44c241ab0b5260c41e17978d2b (2026-11-23T14:15:45Z, modified)\n"}},
		{"a tagged clean build", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			[]string{"beamconnect v1.4.0\n", "  revision abc\n"}},
		{"no repository", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			[]string{"beamconnect devel\n", "  revision unknown (not built from a repository)\n"}},
		{"no build info", nil, []string{"beamconnect devel\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printVersion(&b, readBuildInfo(tt.bi))
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%s: want %q in\n%s", tt.name, w, b.String())
				}
			}
		})
	}
}

// hasRow reports whether a table row has these fields, however aligned.
func hasRow(table, fields string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.Join(strings.Fields(line), " ") == fields {
			return true
		}
	}
	return false
}

func TestColour(t *testing.T) {
	for _, tt := range []struct {
		tty, flag bool
		noColor   string
		want      bool
	}{
		{true, false, "", true},
		{false, false, "", false}, // piped or redirected: plain text
		{true, true, "", false},
		{true, false, "1", false},
		{true, false, "\x00unset", true}, // NO_COLOR absent
	} {
		noColor := strconv.Quote(tt.noColor)
		if tt.noColor == "\x00unset" {
			noColor = "unset"
		}
		t.Run(fmt.Sprintf("tty %v, --no-color %v, NO_COLOR %s", tt.tty, tt.flag, noColor), func(t *testing.T) {
			e := env{stderrIsTTY: tt.tty, lookupEnv: func(k string) (string, bool) {
				if k != "NO_COLOR" || tt.noColor == "\x00unset" {
					return "", false
				}
				return tt.noColor, true
			}}
			if got := colour(tt.flag, e); got != tt.want {
				t.Errorf("tty %v --no-color %v NO_COLOR %q: colour %v", tt.tty, tt.flag, tt.noColor, got)
			}
		})
	}
}

// A misspelt command, flag or banks name gets the closest real one; a word
// too far from any gets none.
func TestSuggestions(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"valdate", "x.json"}, exitUsage, `unknown command "valdate" (did you mean "validate"?)`},
		{[]string{"help", "plto"}, exitUsage, `no command "plto" (did you mean "plot"?)`},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"` + "\n"},
		{[]string{"validate", "--jsn", pedals}, exitUsage, "unknown flag: --jsn (did you mean --json?)"},
		{[]string{"plot", "--fieldz=a", "x.csv"}, exitUsage, "unknown flag: --fieldz (did you mean --fields?)"},
		{[]string{"run", "--emulat", pedals}, exitUsage, "unknown flag: --emulat (did you mean --emulate?)"},
		{[]string{"run", "--frobnicate", pedals}, exitUsage, "unknown flag: --frobnicate\n"},
		{[]string{"banks", "grondspeed"}, exitFailed, `no slot matches "grondspeed" (did you mean "groundspeed"?)`},
		{[]string{"banks", "--to", "throtle"}, exitFailed, `no slot matches "throtle" (did you mean "throttle"?)`},
		{[]string{"banks", "rpm", "gaer"}, exitOK, `no slot matches "gaer" (did you mean "gear"?)`},
		{[]string{"banks", "--protocol", "csv", "vehicleGrundSpeed"}, exitFailed, `no signal matches "vehicleGrundSpeed" (did you mean "vehicleGroundSpeed"?)`},
		{[]string{"banks", "zzzz"}, exitFailed, `no slot matches "zzzz"` + "\n"},
	} {
		t.Run(argsName(tt.args), func(t *testing.T) {
			_, errOut, code := exec(t, nil, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tt.args, code, errOut, tt.code, tt.want)
			}
		})
	}
}

// Every command with --json answers JSON on stdout whatever goes wrong: a
// usage error, a file that is not there, a config with a typo.
func TestJSONOnEveryError(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo.json")
	src, _ := os.ReadFile(pedals)
	os.WriteFile(typo, bytes.Replace(src, []byte(`"groundspeed"`), []byte(`"groundsped"`), 1), 0o644)
	cases := map[string][][]string{
		"banks":    {{"banks", "--json", "--bank", "Z"}},
		"bench":    {{"bench", "--json", "--vehicles", "0"}},
		"compile":  {{"compile", "--json", typo}, {"compile", "--json"}, {"compile", "--json", "--bogus", pedals}},
		"emulate":  {{"emulate", "--json", "--duration", "-1s"}},
		"fmu":      {{"fmu", "inspect", "--json", "missing.fmu"}, {"fmu", "check", "--json", "missing.fmu"}},
		"run":      {{"run", "--json", typo}, {"run", "--json", "--duration", "-1s", pedals}},
		"timing":   {{"timing", "--json", t.TempDir()}},
		"validate": {{"validate", "--json", typo}},
		"version":  {{"version", "--json", "--bogus"}},
	}
	for _, c := range commands {
		var fs = pflag.NewFlagSet(c.name, pflag.ContinueOnError)
		c.flags(fs)
		if fs.Lookup("json") == nil || c.internal {
			continue
		}
		if len(cases[c.name]) == 0 {
			t.Errorf("%s has --json and no case here", c.name)
		}
		for _, args := range cases[c.name] {
			out, _, code := exec(t, nil, args...)
			var v map[string]any
			if code == exitOK || json.Unmarshal([]byte(out), &v) != nil {
				t.Errorf("%v: exit %d, stdout %q: want JSON", args, code, out)
				continue
			}
			if _, ok := v["error"]; !ok && v["valid"] != false {
				t.Errorf("%v: %s; want an error in it", args, out)
			}
		}
	}
}

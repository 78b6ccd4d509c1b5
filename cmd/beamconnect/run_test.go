package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/models/kinds"
	"beamconnect/recording/recordingtest"
)

type runResult struct {
	Messages, Replies, Dropped, StallsRecovered int64
	FinalStatus                                 int     `json:"final_status"`
	P50                                         float64 `json:"turnaround_p50_us"`
	P99                                         float64 `json:"turnaround_p99_us"`
	Model                                       string
	ModelNotes                                  []string `json:"model_notes"`
	Emulator                                    *struct{ Stalls, Sent, Accepted int64 }
	Control                                     []struct {
		Name, Signal, Setpoint, Verdict string
		Value                           float64 `json:"setpoint_value"`
	}
}

func runJSON(t *testing.T, args ...string) (runResult, string) {
	t.Helper()
	out, errOut, code := exec(t, nil, append([]string{"run", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var r runResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r, errOut
}

// run --emulate --free-running: 10 s of simulation at BeamNG's 5 ms, every
// message answered and recorded, the car at the set speed at the end.
func TestRunEmulated(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "run.csv")
	r, errOut := runJSON(t, "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--sim-duration", "10s", "--record", rec)
	if r.Messages != 2000 || r.Replies != r.Messages || r.Dropped != 0 || r.Model != "cruise-pedals" ||
		r.Emulator == nil || r.Emulator.Stalls != 0 || r.FinalStatus != 1 || r.P50 <= 0 || r.P99 < r.P50 {
		t.Errorf("summary %+v\n%s", r, errOut)
	}
	for _, want := range []string{"is=connected", "is=disconnecting", "is=unconnected"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("status change %q not logged", want)
		}
	}
	if v := recordingtest.Last(t, rec, "out1.groundspeed"); v < 19 || v > 21 {
		t.Errorf("recorded speed at the end %v, want the set speed 20", v)
	}
	b, _ := os.ReadFile(rec)
	if rows := strings.Count(string(b), "\n"); int64(rows) != r.Messages+1 {
		t.Errorf("%d recorded rows for %d messages", rows-1, r.Messages)
	}
}

// --model hold runs any config as a pure logger: nothing is sent but NaN.
func TestRunModelOverride(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "run.csv")
	r, _ := runJSON(t, "../../examples/cruise-pedals.json", "--model", "hold", "--emulate", "--free-running", "--sim-duration", "1s", "--record", rec)
	if r.Model != "hold" || r.Messages != 200 {
		t.Errorf("%+v", r)
	}
	if v := recordingtest.Last(t, rec, "out1.groundspeed"); v != 0 {
		t.Errorf("a logger moved the car to %v m/s", v)
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a bad config", []string{"../../config/testdata/unknown-signal.bad.json"}, exitFailed, ":13:29:"},
		{"free-running without emulate", []string{"../../examples/cruise-pedals.json", "--free-running"}, exitUsage, "--free-running applies to --emulate only"},
		{"a model the config cannot drive", []string{"../../examples/cruise-pedals.json", "--model", "cruise-torque", "--emulate"}, exitFailed,
			"model cruise-torque needs the config to map inputs wheelFL_propulsionTorque"},
		{"no such model", []string{"../../examples/cruise-pedals.json", "--model", "autopilot"}, exitFailed, `model "autopilot": expected one of`},
		{"no config", []string{}, exitUsage, "expected exactly one config file"},
		{"a negative duration", []string{"../../examples/cruise-pedals.json", "--duration", "-1s"}, exitUsage, "--duration -1s: expected 0 (run until interrupted) or a positive duration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := exec(t, nil, append([]string{"run"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, want %d and %q in\n%s", tt.args, code, tt.code, tt.want, errOut)
			}
		})
	}
}

// The Python example of the exec model holds the set speed too, and
// pairs its answers by their echo.
func TestRunExecPython(t *testing.T) {
	t.Parallel()
	// The example as it is: in lockstep each message waits for the
	// program's answer, on a loaded machine too.
	dir := execExample(t, "exec-cruise")
	rec := filepath.Join(dir, "run.csv")
	r, errOut := runJSON(t, filepath.Join(dir, "exec-cruise.json"), "--emulate", "--free-running", "--sim-duration", "10s", "--record", rec)
	if r.Model != "exec" || r.Messages != 2000 || r.Emulator.Stalls != 0 {
		t.Errorf("%+v\n%s", r, errOut)
	}
	if !strings.Contains(errOut, "the model program echoes its requests' times") {
		t.Errorf("the example does not echo its requests' times:\n%s", errOut)
	}
	if v := recordingtest.Last(t, rec, "out1.groundspeed"); v < 19 || v > 21 {
		t.Errorf("speed at the end %v, want 20", v)
	}
	// The values the program names and appends are recorded under its
	// names and units.
	if v := recordingtest.Last(t, rec, "model.speedError [m/s]"); v < -1 || v > 1 {
		t.Errorf("the program's speed error at the end %v, want about 0", v)
	}
}

// The Python example speaks reset: when BeamNG's controller is reloaded
// it is written its reset line and starts over in the same process, not
// started again; the run is healthy.
func TestRunExecPythonStartsOver(t *testing.T) {
	t.Parallel()
	dir := execExample(t, "exec-cruise")
	out, errOut, code := exec(t, nil, "run", "--json", filepath.Join(dir, "exec-cruise.json"), "--emulate", "--free-running", "--sim-duration", "3s", "--fault", "restart@1s")
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil || !restartedHealthy(code, s) || s["model_resets"] != 1.0 || s["model_not_reset"] != 0.0 {
		t.Fatalf("exit %d, summary %v (%v)\n%s", code, s, err, errOut)
	}
	if strings.Contains(errOut, "the model program is started again") {
		t.Errorf("the example, which speaks reset, was started again:\n%s", errOut)
	}
}

// examples/exec-count.py counts its answers as its throttle (1/10000
// each): across `--fault restart@1s` BeamNG's throttle goes from the
// count to 0, then 0.0001, as docs/running.md shows (the program is
// there as it is here). Speaking reset it is written its reset line; with
// --no-reset it is started again. Before, an exec program was never
// reset: 0.0201, then 0.0202, and model_resets said 1.
func TestRunExecCountStartsOver(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	program, _ := os.ReadFile("../../examples/exec-count.py")
	if i := bytes.Index(program, []byte("import sys")); i < 0 || !bytes.Contains(page, program[i:]) {
		t.Error("docs/running.md does not show examples/exec-count.py as it is")
	}
	for _, speaks := range []bool{true, false} {
		t.Run(fmt.Sprint("speaks reset ", speaks), func(t *testing.T) {
			t.Parallel()
			dir := execExample(t, "exec-count")
			if !speaks {
				rig := filepath.Join(dir, "exec-count.json")
				b, _ := os.ReadFile(rig)
				os.WriteFile(rig, bytes.Replace(b, []byte(`"exec-count.py"]`), []byte(`"exec-count.py", "--no-reset"]`), 1), 0o644)
			}
			// 3 s of BeamNG's time after the restart: should its reloaded
			// controller run ahead on a late reply to its old self, and what
			// it sent while the program started over be skipped for its
			// newest message, the watchdog has time to bring it back into
			// lockstep, and the new session's replies to be judged.
			rec := filepath.Join(dir, "run.csv")
			out, errOut, code := exec(t, nil, "run", "--json", filepath.Join(dir, "exec-count.json"), "--emulate", "--free-running", "--sim-duration", "4s", "--fault", "restart@1s", "--record", rec)
			var s map[string]any
			if err := json.Unmarshal([]byte(out), &s); err != nil || !restartedHealthy(code, s) || s["restarts"] != 1.0 || s["model_resets"] != 1.0 || s["model_not_reset"] != 0.0 {
				t.Fatalf("exit %d, summary %v (%v)\n%s", code, s, err, errOut)
			}
			if started := strings.Contains(errOut, "the model program is started again to start over"); started == speaks {
				t.Errorf("speaking reset %v, started again %v:\n%s", speaks, started, errOut)
			}
			// The throttle counts up, then, where the program started over,
			// 0 and 0.0001: once. (The ids need not show the restart: a late
			// reply to the old controller can make the first message
			// answered in the new session the one after the old's last.)
			throttle := recordingtest.Column(t, rec, "in1.throttle")
			var backs []int
			for i := 1; i+1 < len(throttle); i++ {
				if throttle[i] < throttle[i-1] {
					backs = append(backs, i)
				}
			}
			if len(backs) != 1 {
				t.Fatalf("BeamNG's throttle went back at rows %v: want once, at the restart\n%s", backs, errOut)
			}
			first := firstAnswer(s, 0, 0.0001)
			if at := backs[0]; !(throttle[at-1] > 0.01) || throttle[at] != first || throttle[at+1] != first+0.0001 {
				t.Errorf("BeamNG's throttle at the restart: %v, then %v, %v; want the count, then %v, %v", throttle[at-1], throttle[at], throttle[at+1], first, first+0.0001)
			}
		})
	}
}

// restartedHealthy says whether a run across BeamNG's restart is healthy
// (exit code and summary s), or unhealthy only because of what a loaded
// machine may bring about, rightly reported:
//   - a reply to BeamNG's old controller landed on the reloaded one, which
//     then ran ahead of the replies: BeamNG's doing (the fault matrix's
//     restart rows allow it too);
//   - a program started again to start over took longer to start than
//     BeamNG waits for a reply (2 s): lockstep waits for it, and BeamNG
//     stalls once, its reply withheld. Beside CI's busy loops a Python
//     program took 1.9 s to start; the reset is what is judged here.
func restartedHealthy(code int, s map[string]any) bool {
	if code == exitOK && s["healthy"] == true {
		return true
	}
	faults, _ := s["faults"].([]any)
	if code != 1 || len(faults) == 0 {
		return false
	}
	startUp := startedAgainSlowly(s)
	for _, f := range faults {
		f, _ := f.(string)
		switch {
		case strings.HasPrefix(f, "BeamNG ran out of lockstep"):
		case startUp && (strings.HasPrefix(f, "BeamNG stalled 1 times") || strings.HasPrefix(f, "1 replies were withheld")):
		default:
			return false
		}
	}
	return true
}

// firstAnswer is the first answer of a program started again that BeamNG
// got: its first (first), or, where its start-up outlasted BeamNG's wait
// (startedAgainSlowly) and that reply was withheld, its second (second).
// A start-up of over a second that BeamNG's 2 s wait still covered is
// answered (beside four busy loops in CI, the program's first answer
// after such a start-up reached BeamNG): the summary's late_replies says
// which.
func firstAnswer(s map[string]any, first, second float64) float64 {
	if startedAgainSlowly(s) && s["late_replies"] == 1.0 {
		return second
	}
	return first
}

// startedAgainSlowly says whether the run's program was started again
// to start over and its first step after that, at BeamNG's time 0 of the
// new session, was its slowest and took more than a second: its start-up.
func startedAgainSlowly(s map[string]any) bool {
	steps, _ := s["model_steps"].(map[string]any)
	slowest, _ := steps["slowest"].([]any)
	if s["model_resets"] != 1.0 || len(slowest) == 0 || !strings.Contains(fmt.Sprint(s["model_notes"]), "started again once") {
		return false
	}
	first, _ := slowest[0].(map[string]any)
	return first["t_s"] == 0.0 && first["ms"].(float64) > 1000
}

// execExample copies an exec example (its config, name.json, and its
// program, name.py) to a folder of its own and returns it; the test is skipped where python3 is
// not.
func execExample(t *testing.T, name string) string {
	t.Helper()
	if _, err := osexec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this machine")
	}
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(src)
	schema, _ := json.Marshal(mustAbs(t, "../../schemas/config.schema.json")) // a Windows path's backslashes escaped
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, string(schema), 1)
	os.WriteFile(filepath.Join(dir, name+".json"), []byte(cfg), 0o644)
	b, _ := os.ReadFile("../../examples/" + name + ".py")
	os.WriteFile(filepath.Join(dir, name+".py"), b, 0o644)
	return dir
}

// The summary's simulated time counts every coupling of BeamNG's in the
// run: across a restart of its controller (ids from 0 again at 1 s of 3 s)
// it is the 3 s BeamNG simulated, 600 messages at 5 ms, one period short of
// the end (before: only the coupling after the restart, 1.995 s). BeamNG's
// ids say it, whatever the pace: a reloaded controller that ran ahead of a
// late reply (restartedHealthy) skips messages, not simulated time.
func TestRunSimulatedTimeAcrossARestart(t *testing.T) {
	t.Parallel()
	out, errOut, _ := exec(t, nil, "run", "--json", "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--sim-duration", "3s", "--fault", "restart@1s")
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if sim, _ := s["sim_s"].(float64); math.Abs(sim-2.995) > 1e-9 || s["restarts"] != 1.0 {
		t.Errorf("sim_s %v, restarts %v: want 2.995 s over BeamNG's one restart\n%s", s["sim_s"], s["restarts"], out)
	}
}

// run --json reports simulated and wall time and, as master, the pacing.
//
// The run is 2 s of BeamNG's time; as master, beamconnect paces it, so it
// takes at least 2 s of the wall clock: what it checks is the pacing.
func TestRunMasterSummary(t *testing.T) {
	t.Parallel()
	rig := filepath.Join(t.TempDir(), "master.json")
	os.WriteFile(rig, []byte(`{"version": 2, "timeDilation": 1,
		"outputs": [{"ports": [[{"propertyName": "groundspeed"}]]}],
		"inputs": [{"timeSyncMode": "absolute", "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
		"beamng": {"model": "cruise-pedals"}}`), 0o644)
	out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "2s")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	sim, wall := s["sim_s"].(float64), s["wall_s"].(float64)
	// As master, beamconnect paces a BeamNG that would run as fast as it
	// can: simulated time never gets ahead of the wall clock (free, this
	// rig simulates 2 s in a few hundredths). How far behind it stays is the
	// machine's load (start-up is not paced; two busy loops beside the
	// test left it 0.35 s behind), not the pacing's: the pacing error is
	// reported beside it.
	if s["time_sync"] != "master" || sim <= 0 || sim > wall {
		t.Errorf("master against a free-running BeamNG: sim %v s in wall %v s\n%s", sim, wall, out)
	}
	for _, k := range []string{"pacing_error_p50_us", "pacing_error_p99_us", "pacing_overruns"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
}

// --http takes HOST:PORT; a bad one, or one another program has, is a usage
// error before anything binds BeamNG's port.
func TestRunHTTPAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	// The system's own words for a taken port ("address already in use" on
	// Linux, WSAEADDRINUSE's text on Windows).
	_, inUse := net.Listen("tcp", busy.Addr().String())
	if inUse == nil {
		t.Fatal("a second listener on a taken port")
	}
	for _, tt := range []struct{ name, addr, want string }{
		{"not an address", "nonsense", `--http: "nonsense": expected HOST:PORT, e.g. 127.0.0.1:8080`},
		{"a taken port", busy.Addr().String(), "--http: cannot serve the live page: " + inUse.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := exec(t, nil, "run", "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--sim-duration", "1s", "--http", tt.addr)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("--http %s: exit %d\n%s\nwant %q", tt.addr, code, errOut, tt.want)
			}
		})
	}
}

// run --help names every model there is.
func TestRunHelpListsEveryModel(t *testing.T) {
	t.Parallel()
	out, errOut, _ := exec(t, nil, "run", "--help")
	help := out + errOut
	for _, name := range kinds.Names() {
		if !strings.Contains(help, name) {
			t.Errorf("run --help does not name model %q", name)
		}
	}
}

// run --json answers in JSON whatever goes wrong: a bad command line, a
// bad config, a model that cannot start.
func TestRunJSONErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"no config", []string{"run", "--json"}},
		{"a bad config", []string{"run", "--json", "../../config/testdata/unknown-signal.bad.json"}},
		{"a model that cannot start", []string{"run", "--json", "../../examples/cruise-pedals.json", "--model", "autopilot"}},
		{"a bad command line", []string{"run", "--json", "../../examples/cruise-pedals.json", "--fault", "drop-replies=2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, code := exec(t, nil, tt.args...)
			var r struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil || r.Error == "" || code == exitOK {
				t.Errorf("%v: exit %d, stdout %q: want a JSON error", tt.args, code, out)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run --emulate on ports the user fixes: given, or the config's own.
func TestRunEmulatePorts(t *testing.T) {
	t.Parallel()
	free := freeUDPPorts(t, 2)
	client, listen := free[0], free[1]
	want := fmt.Sprintf("beamng=127.0.0.1:%d beamconnect=127.0.0.1:%d", listen, client)
	_, errOut, code := exec(t, nil, "run", pedals, "--emulate", "--free-running", "--sim-duration", "1s",
		"--emulate-client", fmt.Sprintf("127.0.0.1:%d", client), "--emulate-listen", fmt.Sprintf("127.0.0.1:%d", listen))
	if code != exitOK || !strings.Contains(errOut, "emulating BeamNG in process "+want) {
		t.Errorf("given ports: exit %d\n%s\nwant %q", code, errOut, want)
	}
	src, _ := os.ReadFile(pedals)
	cfg := strings.Replace(string(src), `"remotePort": 64891`, fmt.Sprintf(`"remotePort": %d`, listen), 1)
	cfg = strings.Replace(cfg, `"localPort": 64890`, fmt.Sprintf(`"localPort": %d`, client), 1)
	schema, _ := json.Marshal(mustAbs(t, "../../schemas/config.schema.json")) // a Windows path's backslashes escaped
	cfg = strings.Replace(cfg, `"../schemas/config.schema.json"`, string(schema), 1)
	rig := filepath.Join(t.TempDir(), "rig.json")
	os.WriteFile(rig, []byte(cfg), 0o644)
	_, errOut, code = exec(t, nil, "run", rig, "--emulate", "--free-running", "--sim-duration", "1s", "--emulate-client", "config", "--emulate-listen", "config")
	if code != exitOK || !strings.Contains(errOut, "emulating BeamNG in process "+want) {
		t.Errorf("the config's ports: exit %d\n%s\nwant %q", code, errOut, want)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"without emulate", []string{"run", pedals, "--emulate-client", "config"}},
		{"a name, not an address", []string{"run", pedals, "--emulate", "--emulate-listen", "localhost"}},
		{"one address for two vehicles", []string{"run", "../../examples/follow.json", "--emulate", "--emulate-client", "127.0.0.1:7000"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, errOut, code := exec(t, nil, tt.args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d\n%s", tt.args, code, exitUsage, errOut)
			}
		})
	}
}

// examples/exec-count.py counts BeamNG's steps only: the idle requests
// beamconnect writes every 50 ms of the machine's time while BeamNG is
// silent (here a pause of its physics for 1.5 s, longer than the 1 s after
// which it is silent) are answered but not counted, so the recorded
// throttle is the message's place in the run (1/10000 each), whatever the
// machine's timing, as docs/running.md says. Before, it counted them too:
// the throttle jumped by their number after the pause.
func TestExecCountCountsBeamNGsSteps(t *testing.T) {
	t.Parallel()
	dir := execExample(t, "exec-count")
	rec := filepath.Join(dir, "run.csv")
	out, errOut, code := exec(t, nil, "run", "--json", filepath.Join(dir, "exec-count.json"), "--emulate", "--free-running",
		"--sim-duration", "1s", "--fault", "pause=1.5s@0.5s", "--record", rec, "--force")
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != exitOK || s["silences"] != 1.0 {
		t.Fatalf("exit %d, summary %v (%v): want a healthy run, BeamNG silent once\n%s", code, s, err, errOut)
	}
	throttle := recordingtest.Column(t, rec, "in1.throttle")
	if len(throttle) < 190 {
		t.Fatalf("%d rows: want the run's 200", len(throttle))
	}
	for i, x := range throttle {
		if want := float64(i) / 10000; math.Abs(x-want) > 1e-12 {
			t.Fatalf("row %d: throttle %v, want %v (BeamNG's steps before it, 1/10000 each)", i, x, want)
		}
	}
}

// What restartedHealthy lets pass: a healthy run; a lockstep loss; a stall
// while the program started again took longer than BeamNG waits (CI's
// summary, cut to what is judged), and nothing else.
func TestRestartedHealthy(t *testing.T) {
	startUp := `"faults": ["BeamNG stalled 1 times, waiting 2 s for a reply (reply ids re-based each time)", "1 replies were withheld: the model's step took longer than BeamNG waits"],
		"model_resets": 1, "model_notes": ["the model program was started again once to start over when BeamNG started its coupling again"]`
	for _, tt := range []struct {
		name    string
		code    int
		summary string
		want    bool
	}{
		{"healthy", exitOK, `{"healthy": true}`, true},
		{"lockstep lost", 1, `{"faults": ["BeamNG ran out of lockstep 1 times"]}`, true},
		{"a slow start-up", 1, `{` + startUp + `, "model_steps": {"slowest": [{"ms": 1923.6, "t_s": 0}]}}`, true},
		{"a slow step later", 1, `{` + startUp + `, "model_steps": {"slowest": [{"ms": 1923.6, "t_s": 1.5}]}}`, false},
		{"a quick start-up", 1, `{` + startUp + `, "model_steps": {"slowest": [{"ms": 40, "t_s": 0}]}}`, false},
		{"not started again", 1, `{"faults": ["BeamNG stalled 1 times"], "model_resets": 1, "model_steps": {"slowest": [{"ms": 1923.6, "t_s": 0}]}}`, false},
		{"another fault", 1, `{"faults": ["the model faulted 1 times"]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s map[string]any
			if err := json.Unmarshal([]byte(tt.summary), &s); err != nil {
				t.Fatal(err)
			}
			if got := restartedHealthy(tt.code, s); got != tt.want {
				t.Errorf("restartedHealthy: %v, want %v", got, tt.want)
			}
		})
	}
}

// Which answer of a program started again BeamNG got first: the second
// only where its start-up was slow and that first reply was withheld.
func TestFirstAnswer(t *testing.T) {
	again := `"model_resets": 1, "model_notes": ["the model program was started again once to start over when BeamNG started its coupling again"]`
	for _, tt := range []struct {
		name, summary string
		want          float64
	}{
		{"a quick start-up", `{` + again + `, "late_replies": 0, "model_steps": {"slowest": [{"ms": 40, "t_s": 0}]}}`, 0},
		{"slow, the reply withheld", `{` + again + `, "late_replies": 1, "model_steps": {"slowest": [{"ms": 2100, "t_s": 0}]}}`, 1},
		{"slow, the reply in time", `{` + again + `, "late_replies": 0, "model_steps": {"slowest": [{"ms": 1300, "t_s": 0}]}}`, 0},
		{"a late reply later", `{` + again + `, "late_replies": 1, "model_steps": {"slowest": [{"ms": 2100, "t_s": 1.5}]}}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s map[string]any
			if err := json.Unmarshal([]byte(tt.summary), &s); err != nil {
				t.Fatal(err)
			}
			if got := firstAnswer(s, 0, 1); got != tt.want {
				t.Errorf("firstAnswer: %v, want %v", got, tt.want)
			}
		})
	}
}

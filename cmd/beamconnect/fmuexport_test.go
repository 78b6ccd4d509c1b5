package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/config/configtest"
	"beamconnect/fmu"
	"beamconnect/fmuexport"
	"beamconnect/fmuexport/testmaster"
	"beamconnect/internal/wine"
	"beamconnect/ports"
	"beamconnect/recording/recordingtest"
)

// exported is an FMU `fmu export` wrote, and what it was made of.
type exported struct {
	path   string
	config string
	plan   *ports.Plan
	iface  *fmuexport.Interface
	fmi    int
}

// exportFMU runs `beamconnect fmu export config -o DIR/rig.fmu --fmi N`.
func exportFMU(t *testing.T, config string, major int, extra ...string) exported {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rig.fmu")
	args := append([]string{"fmu", "export", config, "-o", out, "--fmi", strconv.Itoa(major)}, extra...)
	stdout, stderr, code := runBinary(t, args...)
	if code != 0 {
		t.Fatalf("fmu export: exit %d\n%s%s", code, stdout, stderr)
	}
	plan := planOf(t, config)
	return exported{path: out, config: config, plan: plan, iface: fmuexport.New(plan), fmi: major}
}

// runBinary runs the beamconnect binary: export carries the running
// executable, which must be beamconnect, not this test.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := osexec.Command(binary(t), args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*osexec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func planOf(t *testing.T, file string) *ports.Plan { return configtest.Plan(t, file) }

// unpack unpacks an FMU into a new folder, as a master does.
func unpack(t *testing.T, file string) string {
	t.Helper()
	zr, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dir := t.TempDir()
	for _, f := range zr.File {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		// No modes kept, as some unzippers keep none: the FMU's library
		// makes beamconnect executable again.
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// output is a process's output, read while it writes: every write wakes
// whoever waits for a line.
type output struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.text.Write(p)
	o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text.String()
}

// waitLine waits for the n-th line (from 1) that matches re, and returns
// its submatches; it fails when the process ends first (done closed) or
// after a minute of nothing (a hung test, not a timing).
func (o *output) waitLine(t *testing.T, re *regexp.Regexp, n int, done <-chan struct{}) []string {
	t.Helper()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	for {
		if ms := re.FindAllStringSubmatch(o.String(), -1); len(ms) >= n {
			return ms[n-1]
		}
		select {
		case <-o.changed:
		case <-done:
			if ms := re.FindAllStringSubmatch(o.String(), -1); len(ms) >= n {
				return ms[n-1]
			}
			t.Fatalf("the master ended before it said %v:\n%s", re, o)
		case <-guard.C:
			t.Fatalf("nothing matching %v within a minute:\n%s", re, o)
		}
	}
}

// waiting is the FMU's log line saying where it waits for BeamNG.
var waiting = regexp.MustCompile(`waiting for BeamNG's first message bound=(\S+)`)

// emulatedBeamNG is `beamconnect emulate` for one coupling of an exported FMU.
type emulatedBeamNG struct {
	cmd  *osexec.Cmd
	out  *output
	logs string // its debug logs' folder
	done chan struct{}
}

// emulate starts BeamNG's side of e's config, sending to client and
// listening on listen, free-running, for stop plus one period of
// simulated time: it sends the message of stop, which ends the master's
// last step, and stops on its own, never waiting 2 s for a reply. extra
// are more of emulate's flags.
func emulate(t *testing.T, e exported, client, listen string, stop float64, extra ...string) *emulatedBeamNG {
	t.Helper()
	em := &emulatedBeamNG{out: newOutput(), logs: t.TempDir(), done: make(chan struct{})}
	dur := time.Duration(math.Round((stop + e.plan.Period) * 1e9))
	em.cmd = osexec.Command(binary(t), append([]string{"emulate", "--config", e.config, "--client", client, "--listen", listen,
		"--free-running", "--duration", dur.String(), "--debug-logs", em.logs, "--json"}, extra...)...)
	em.cmd.Stdout, em.cmd.Stderr = em.out, em.out
	if err := em.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { em.cmd.Wait(); close(em.done) }()
	t.Cleanup(func() { em.cmd.Process.Kill(); <-em.done })
	return em
}

// emulatorsSaid is what the emulated BeamNGs printed, for a failure's
// message: why BeamNG sent nothing, say.
func emulatorsSaid(ems []*emulatedBeamNG) string {
	var b strings.Builder
	for n, em := range ems {
		state := "still running"
		select {
		case <-em.done:
			state = em.cmd.ProcessState.String()
		default:
		}
		fmt.Fprintf(&b, "\nBeamNG's side, run %d (%s):\n%s", n+1, state, em.out)
	}
	return b.String()
}

// summary waits for the emulator's end and reads its summary.
func (em *emulatedBeamNG) summary(t *testing.T) map[string]any {
	t.Helper()
	select {
	case <-em.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the emulator still runs:\n%s", em.out)
	}
	text := em.out.String()
	i := strings.Index(text, "{\n")
	var sum map[string]any
	if i < 0 || json.NewDecoder(strings.NewReader(text[i:])).Decode(&sum) != nil { // log lines may follow
		t.Fatalf("no summary from the emulator (exit %v):\n%s", em.cmd.ProcessState, text)
	}
	return sum
}

// table is a CSV file as rows of named values.
type table []map[string]float64

func readTable(t *testing.T, file string) table { return recordingtest.Rows(t, file) }

// logColumn names the column of BeamNG's debug log that carries port
// element e of a direction: its bank reference (Gen 1) or its CSV row
// (Gen 2), as the emulator's header writes them.
func logColumn(plan *ports.Plan, dir beamng.Direction, e ports.Element) (string, bool) {
	f := plan.FieldAt(dir, e.Port, e.Elem)
	if f == nil || f.Source != ports.Slot {
		return "", false
	}
	s := f.Signal(dir, e.Elem-f.Offset)
	if s.Group == "" {
		return s.Ref, true
	}
	col := s.Group + "/" + s.Name
	if s.Kind != "" && s.Kind != "value" {
		col += ":" + s.Kind
	}
	return col, true
}

// byID indexes a debug log's rows by message id.
func byID(t table) map[int64]map[string]float64 {
	m := map[int64]map[string]float64{}
	for _, r := range t {
		m[int64(r["id"])] = r
	}
	return m
}

// coupled is one run of an exported FMU against the emulator: the
// master's outputs at its communication points, the recording, BeamNG's
// debug logs and summary.
type coupled struct {
	e         exported
	outputs   table // by variable name, and "time"
	recording table
	sent      map[int64]map[string]float64 // BeamNG's messages by id
	received  map[int64]map[string]float64 // replies by reply id
	summary   map[string]any
	h, stop   float64
	input     string  // the input the master stepped
	stepAt    float64 // when, to
	stepValue float64
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-14*math.Max(math.Abs(a), math.Abs(b))
}

// check holds a run to what the issue promises: the master's outputs are
// BeamNG's messages of their times; BeamNG got the master's input of each
// step for every message of it; the throttle step moved the car; BeamNG
// never stalled; the recording has every message, as BeamNG sent it and as
// it got the replies.
func (c *coupled) check(t *testing.T) {
	t.Helper()
	p := c.e.plan.Period
	if s, _ := c.summary["stalls"].(float64); s != 0 {
		t.Errorf("BeamNG's side stalled %v times: %v", s, c.summary)
	}
	if a, r := c.summary["accepted"].(float64), c.summary["received"].(float64); a != r || a < c.stop/p {
		t.Errorf("BeamNG's side accepted %v of %v replies, want all and at least %v", a, r, c.stop/p)
	}
	steps := int(math.Round(c.stop / c.h))
	if len(c.outputs) != steps+1 {
		t.Errorf("%d rows of outputs, want %d (one per communication point, the start's included)", len(c.outputs), steps+1)
	}
	speedName := ""
	for _, v := range c.e.iface.Vars {
		if v.Causality == fmuexport.Output {
			if s := signalOf(c.e.plan, beamng.FromBeamNG, v.Elem); s == "groundspeed" || s == "vehicleGroundSpeed" {
				speedName = v.Name
			}
		}
	}
	compared := 0
	for _, row := range c.outputs {
		tm := row["time"]
		id := int64(math.Round(tm / p))
		msg, ok := c.sent[id]
		if !ok {
			t.Fatalf("the master's outputs at t = %v s: BeamNG sent no message %d", tm, id)
		}
		for _, v := range c.e.iface.Vars {
			if v.Causality != fmuexport.Output {
				continue
			}
			got, ok := row[v.Name]
			if !ok {
				t.Fatalf("no column %s in the master's outputs", v.Name)
			}
			want, isSlot := 0.0, false
			if col, ok := logColumn(c.e.plan, beamng.FromBeamNG, v.Elem); ok {
				want, isSlot = msg[col], true
			} else if strings.HasSuffix(v.Name, "time") {
				want = float64(id) * p // the meta field: BeamNG's time of the message
			} else {
				continue
			}
			if !near(got, want) {
				t.Errorf("t = %v s: %s = %v, BeamNG sent %v in message %d", tm, v.Name, got, want, id)
			}
			if isSlot {
				compared++
			}
		}
		if speedName != "" && tm <= c.stepAt && row[speedName] != 0 {
			t.Errorf("t = %v s: %s = %v before the throttle step", tm, speedName, row[speedName])
		}
	}
	if last := c.outputs[len(c.outputs)-1]; speedName == "" || last[speedName] < 1 {
		t.Errorf("the throttle step did not move the car: %s = %v at the end", speedName, last[speedName])
	}
	in, _ := c.e.iface.Variable(c.input)
	inCol, _ := logColumn(c.e.plan, beamng.ToBeamNG, in.Elem)
	last := int64(math.Round(c.stop / p))
	for id := int64(0); id < last; id++ {
		reply, ok := c.received[id+1] // reply ids: next (the message's id + 1)
		if !ok {
			t.Fatalf("BeamNG got no reply to message %d", id)
		}
		want := 0.0
		if float64(id)*p >= c.stepAt-p/1000 {
			want = c.stepValue
		}
		if got := reply[inCol]; got != want {
			t.Errorf("message %d (t = %v s): BeamNG got %s = %v, the master's input over that step was %v", id, float64(id)*p, inCol, got, want)
		}
	}
	if c.recording != nil {
		rows := 0
		for _, r := range c.recording {
			id := int64(r["id"])
			msg, ok := c.sent[id]
			if !ok || id > last {
				continue
			}
			rows++
			for _, v := range c.e.iface.Vars {
				col, ok := logColumn(c.e.plan, beamng.FromBeamNG, v.Elem)
				if v.Causality == fmuexport.Output && ok {
					if rec := recordingColumn(c.e, v); !near(r[rec], msg[col]) {
						t.Errorf("the recording's message %d: %s = %v, BeamNG sent %v", id, rec, r[rec], msg[col])
					}
				}
			}
			if reply, ok := c.received[id+1]; ok && id < last {
				if rec := recordingColumn(c.e, *in); r[rec] != reply[inCol] {
					t.Errorf("the recording's message %d: %s = %v, BeamNG got %v", id, rec, r[rec], reply[inCol])
				}
			}
		}
		if rows < int(last) {
			t.Errorf("the recording has %d of BeamNG's %d messages", rows, last)
		}
	}
	if compared == 0 {
		t.Error("no output compared with BeamNG's messages")
	}
}

// signalOf is the name of the signal a port element carries.
func signalOf(plan *ports.Plan, dir beamng.Direction, e ports.Element) string {
	f := plan.FieldAt(dir, e.Port, e.Elem)
	if f == nil || f.Source != ports.Slot {
		return ""
	}
	return f.Signal(dir, e.Elem-f.Offset).Name
}

// recordingColumn is a variable's column in the recording: its port, its
// vehicle and its field, as `run --record` names it.
func recordingColumn(e exported, v fmuexport.Variable) string {
	side := "out"
	dir := beamng.FromBeamNG
	if v.Causality == fmuexport.Input {
		side, dir = "in", beamng.ToBeamNG
	}
	name := side + strconv.Itoa(v.Elem.Port) + "."
	if len(e.plan.Vehicles) > 1 {
		name += e.plan.Vehicles[v.Elem.Vehicle].Name + "."
	}
	return name + signalOf(e.plan, dir, v.Elem)
}

// throttleInput is the FMU's input that carries the throttle.
func throttleInput(t *testing.T, e exported) string {
	t.Helper()
	for _, v := range e.iface.Vars {
		if v.Causality == fmuexport.Input && signalOf(e.plan, beamng.ToBeamNG, v.Elem) == "throttle" {
			return v.Name
		}
	}
	t.Fatal("the config has no throttle input")
	return ""
}

// The coupling, with a master of the tests' own written in C from
// the FMI standards (fmuexport/testmaster), against `beamconnect emulate`
// on real sockets: Gen 1 and Gen 2, FMI 2.0 and 3.0, steps of one and of
// two periods. It runs on Windows too (under Wine, the master built with
// mingw-w64): there the win64 library couples. One row loads, runs,
// unloads and loads the library again in one process; one is a master
// that ignores SIGCHLD, whose children the system reaps.
func TestExportedFMUCouples(t *testing.T) {
	parallelOffWine(t)
	master := testmaster.Path(t)
	for _, tc := range []struct {
		name   string
		config string
		fmi    int
		h      float64
		twice  bool
		nochld bool // the master ignores SIGCHLD: the system reaps the coupling's process
	}{
		{"Gen 1, FMI 2.0, h of one period, twice in one process", "../../examples/cruise-pedals.json", 2, 0.005, true, false},
		{"Gen 2, FMI 3.0, h of two periods", "../../examples/gen2-cruise.json", 3, 0.010, false, false},
		{"Gen 1, FMI 3.0, a master that ignores SIGCHLD", "../../examples/cruise-pedals.json", 3, 0.005, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.nochld && runtime.GOOS == "windows" {
				t.Skip("SIGCHLD is Unix's")
			}
			e := exportFMU(t, tc.config, tc.fmi)
			dir := unpack(t, e.path)
			stop := 4.0
			if wine.Running() {
				stop = 2 // Wine's loopback takes milliseconds a round trip
			}
			c := coupled{e: e, h: tc.h, stop: stop, input: throttleInput(t, e), stepAt: 1, stepValue: 0.5}
			var outs []string
			for _, v := range e.iface.Vars {
				if v.Causality == fmuexport.Output {
					outs = append(outs, strconv.Itoa(int(v.VR)))
				}
			}
			in, _ := e.iface.Variable(c.input)
			localPort, _ := e.iface.Variable("localPort")
			remotePort, _ := e.iface.Variable("remotePort")
			recordFile, _ := e.iface.Variable("recordFile")
			listen := freePort(t)
			rec := filepath.Join(t.TempDir(), "rig.csv")
			csvOut := filepath.Join(t.TempDir(), "outputs.csv")
			args := []string{dir, fmuexport.Identifier(e.path), strconv.Itoa(tc.fmi), e.iface.Token, fmt.Sprint(stop), fmt.Sprint(tc.h),
				strconv.Itoa(int(in.VR)), fmt.Sprint(c.stepAt), fmt.Sprint(c.stepValue), strings.Join(outs, ","), csvOut,
				fmt.Sprintf("i:%d=0", localPort.VR), fmt.Sprintf("i:%d=%d", remotePort.VR, listen.Port()), fmt.Sprintf("s:%d=%s", recordFile.VR, rec)}
			if tc.nochld {
				args = append([]string{"-nochld"}, args...)
			}
			if tc.twice {
				args = append([]string{"-twice"}, args...)
			}
			cmd := osexec.Command(master, args...)
			out := newOutput()
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-done })
			runs := 1
			if tc.twice {
				runs = 2
			}
			var ems []*emulatedBeamNG
			for n := 1; n <= runs; n++ {
				bound := out.waitLine(t, waiting, n, done)[1]
				ems = append(ems, emulate(t, e, bound, listen.String(), stop))
				if n < runs {
					// The second run waits until the first is over.
					out.waitLine(t, regexp.MustCompile(`master: once more`), 1, done)
				}
			}
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				t.Fatalf("the master still runs:\n%s", out)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("the master exited %d:\n%s%s", code, out, emulatorsSaid(ems))
			}
			for n, em := range ems {
				c := c
				c.summary = em.summary(t)
				file := csvOut
				if n == 1 {
					file = strings.TrimSuffix(csvOut, ".csv") + ".2.csv"
				}
				raw := readTable(t, file)
				for _, r := range raw {
					row := map[string]float64{"time": r["time"]}
					for _, v := range e.iface.Vars {
						if x, ok := r[strconv.Itoa(int(v.VR))]; ok {
							row[v.Name] = x
						}
					}
					c.outputs = append(c.outputs, row)
				}
				c.sent = byID(readTable(t, filepath.Join(em.logs, "simulinkSendLog.csv")))
				c.received = byID(readTable(t, filepath.Join(em.logs, "simulinkReceiveLog.csv")))
				if n == runs-1 {
					c.recording = readTable(t, rec) // the file holds the last run
				}
				c.check(t)
			}
			if !strings.Contains(out.String(), "the run was healthy") {
				t.Errorf("the FMU's log says no healthy run:\n%s", out)
			}
		})
	}
}

// What export writes: an FMU beamconnect's own reader opens, with the
// shim's library and beamconnect's executable for this platform, the
// config among its resources; a Gen 2 config with its CSV. What it
// refuses, it says why.
func TestFMUExport(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skip("FMUs are exported on x86-64 Linux and Windows")
	}
	for _, tc := range []struct {
		config string
		fmi    int
		files  []string
	}{
		{"../../examples/cruise-pedals.json", 2, []string{"resources/config.json"}},
		{"../../examples/gen2-cruise.json", 3, []string{"resources/config.json", "resources/gen2-cruise.csv"}},
		{"../../examples/gen2-follow.json", 2, []string{"resources/config.json", "resources/gen2-follow-ego.csv", "resources/gen2-follow-lead.csv"}},
	} {
		t.Run(filepath.Base(tc.config)+fmt.Sprintf(" FMI %d", tc.fmi), func(t *testing.T) {
			e := exportFMU(t, tc.config, tc.fmi)
			f, err := fmu.Open(e.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Supported(); err != nil {
				t.Errorf("the exported FMU does not run here: %v", err)
			}
			folder, ext := fmuexport.Platform(tc.fmi, runtime.GOOS)
			want := append([]string{"binaries/" + folder + "/rig" + ext, "binaries/" + folder + "/" + fmuexport.ExecutableName(runtime.GOOS)}, tc.files...)
			zr, err := zip.OpenReader(e.path)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			have := map[string]*zip.File{}
			for _, zf := range zr.File {
				have[zf.Name] = zf
			}
			for _, name := range want {
				if have[name] == nil {
					t.Errorf("the FMU has no %s", name)
				}
			}
			if exe := have["binaries/"+folder+"/"+fmuexport.ExecutableName(runtime.GOOS)]; exe != nil && exe.Mode()&0o111 == 0 {
				t.Errorf("beamconnect's executable is not marked executable in the archive: %v", exe.Mode())
			}
			if f.Desc.Token != e.iface.Token || f.Desc.CoSim == nil || !f.Desc.CoSim.VariableStep {
				t.Errorf("the description: token %s (want %s), co-simulation %+v", f.Desc.Token, e.iface.Token, f.Desc.CoSim)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		dir := t.TempDir()
		notExe := filepath.Join(dir, "beamconnect.exe")
		os.WriteFile(notExe, []byte("not a program"), 0o755)
		for _, tc := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"no output", []string{"fmu", "export", "../../examples/cruise-pedals.json"}, 2, "expected -o FILE.fmu"},
			{"another FMI", []string{"fmu", "export", "../../examples/cruise-pedals.json", "-o", filepath.Join(dir, "a.fmu"), "--fmi", "1"}, 2, "--fmi 1: expected 2 or 3"},
			{"not an FMU's name", []string{"fmu", "export", "../../examples/cruise-pedals.json", "-o", filepath.Join(dir, "a.zip")}, 2, "an FMU's name ends in .fmu"},
			{"an invalid config", []string{"fmu", "export", "../../config/testdata/unknown-signal.bad.json", "-o", filepath.Join(dir, "a.fmu")}, 1, `"grondspeed" is not a BeamNG signal`},
			{"not beamconnect", []string{"fmu", "export", "../../examples/cruise-pedals.json", "-o", filepath.Join(dir, "a.fmu"), "--beamconnect-windows", notExe}, 1, "is not an x86-64 Windows executable"},
			{"an export flag to inspect", []string{"fmu", "inspect", "x.fmu", "--fmi", "3"}, 2, "--fmi applies to export only"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, stderr, code := runBinary(t, tc.args...)
				if code != tc.code || !strings.Contains(stderr, tc.want) {
					t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to say %q", code, tc.code, stderr, tc.want)
				}
			})
		}
		if _, err := os.Stat(filepath.Join(dir, "a.fmu")); err == nil {
			t.Error("a refused export left an FMU behind")
		}
	})
}

// A beamconnect beside the other platform's (as `go build` for both into
// one folder leaves them, as the README's install does) exports an FMU
// that runs on both: binaries for x86-64 Linux and Windows, each the shim
// beside its beamconnect, no warning. The FMU, FMI 2.0 and 3.0, passes
// `fmu check`: its description and both libraries keep the FMI standard's
// rules that masters check at load time.
func TestFMUExportBothPlatforms(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skip("FMUs are exported on x86-64 Linux and Windows")
	}
	if testing.Short() {
		t.Skip("builds beamconnect for the other platform")
	}
	goBin, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command here (the Windows tests under Wine): the Linux run builds both")
	}
	dir := t.TempDir()
	self, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	here := filepath.Join(dir, fmuexport.ExecutableName(runtime.GOOS))
	if err := os.WriteFile(here, self, 0o755); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"linux": "windows", "windows": "linux"}[runtime.GOOS]
	build := osexec.Command(goBin, "build", "-o", filepath.Join(dir, fmuexport.ExecutableName(other)), ".")
	build.Env = append(os.Environ(), "GOOS="+other, "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", other, err, out)
	}
	for _, major := range []int{2, 3} {
		fmuPath := filepath.Join(dir, fmt.Sprintf("rig%d.fmu", major))
		cmd := osexec.Command(here, "fmu", "export", "../../examples/cruise-pedals.json", "-o", fmuPath, "--fmi", strconv.Itoa(major))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || strings.Contains(stderr.String(), "warning") {
			t.Fatalf("export: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		linux, _ := fmuexport.Platform(major, "linux")
		windows, _ := fmuexport.Platform(major, "windows")
		if want := "platforms:  binaries/" + linux + ", binaries/" + windows; !strings.Contains(stdout.String(), want) {
			t.Errorf("export says:\n%s\nwant it to say %q", stdout.String(), want)
		}
		f, err := fmu.Open(fmuPath)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.Platforms, []string{linux, windows}) && !slices.Equal(f.Platforms, []string{windows, linux}) {
			t.Errorf("the FMU has binaries for %v", f.Platforms)
		}
		f.Close()
		zr, err := zip.OpenReader(fmuPath)
		if err != nil {
			t.Fatal(err)
		}
		var exes []string
		for _, zf := range zr.File {
			if strings.HasSuffix(zf.Name, "/beamconnect") || strings.HasSuffix(zf.Name, "/beamconnect.exe") {
				exes = append(exes, zf.Name)
			}
		}
		zr.Close()
		slices.Sort(exes)
		if want := []string{"binaries/" + linux + "/beamconnect", "binaries/" + windows + "/beamconnect.exe"}; !slices.Equal(exes, want) {
			t.Errorf("beamconnect's executables in the FMU: %v, want %v", exes, want)
		}
		if out, err := osexec.Command(here, "fmu", "check", fmuPath).CombinedOutput(); err != nil || !strings.Contains(string(out), "passes") {
			t.Errorf("fmu check: %v\n%s", err, out)
		}
	}
}

// masterRun is the test master started on an exported FMU.
type masterRun struct {
	cmd  *osexec.Cmd
	out  *output
	done chan struct{}
	dir  string // the unpacked FMU
	csv  string // the outputs it writes: time, then each output by value reference
}

// startMaster unpacks e and starts the test master on it, stepping the
// throttle to value at stepAt, with the parameters given by name
// (i:localPort=0 style values as the master takes them) and the master's
// flags (-last).
func startMaster(t *testing.T, e exported, stop, h, stepAt, value float64, params map[string]string, flags ...string) *masterRun {
	t.Helper()
	return startMasterIn(t, e, unpack(t, e.path), stop, h, stepAt, value, params, flags...)
}

// startMasterIn is startMaster on e unpacked in dir.
func startMasterIn(t *testing.T, e exported, dir string, stop, h, stepAt, value float64, params map[string]string, flags ...string) *masterRun {
	t.Helper()
	m := &masterRun{out: newOutput(), done: make(chan struct{}), dir: dir}
	in, _ := e.iface.Variable(throttleInput(t, e))
	var outs []string
	for _, v := range e.iface.Vars {
		if v.Causality == fmuexport.Output {
			outs = append(outs, strconv.Itoa(int(v.VR)))
		}
	}
	if len(outs) > 255 { // the master records 256 at most: the first outputs, the last, and time
		outs = append(outs[:254], outs[len(outs)-1])
	}
	if tm, ok := e.iface.Variable("time"); ok && tm.Causality == fmuexport.Independent {
		outs = append(outs, strconv.Itoa(int(tm.VR))) // the FMU's time, as a get of the independent variable says it
	}
	m.csv = filepath.Join(t.TempDir(), "outputs.csv")
	args := append(slices.Clone(flags), m.dir, fmuexport.Identifier(e.path), strconv.Itoa(e.fmi), e.iface.Token, number(stop), number(h),
		strconv.Itoa(int(in.VR)), fmt.Sprint(stepAt), fmt.Sprint(value), strings.Join(outs, ","), m.csv)
	args = append(args, paramArgs(t, e, params)...)
	m.cmd = osexec.Command(testmaster.Path(t), args...)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() { m.cmd.Process.Kill(); <-m.done })
	return m
}

// number writes a double as the master reads it: inf, -inf, nan.
func number(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// wait waits for the master's end and returns its exit status.
func (m *masterRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the master still runs:\n%s", m.out)
	}
	return m.cmd.ProcessState.ExitCode()
}

// A master that unpacks the FMU while another of its threads starts a
// process leaves beamconnect open for writing in that child until it
// execs, and starting beamconnect then fails with "Text file busy": the
// library waits for the file to be let go of instead. Here the test holds
// it open for writing for the master's first second.
func TestExportedFMUStartsOnceItsProgramIsLetGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Text file busy is Linux's")
	}
	parallelOffWine(t)
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	dir := unpack(t, e.path)
	f, err := os.OpenFile(filepath.Join(dir, "binaries", "linux64", "beamconnect"), os.O_WRONLY|os.O_APPEND, 0) // FMI 2.0's folder
	if err != nil {
		t.Fatal(err)
	}
	letGo := time.AfterFunc(time.Second, func() { f.Close() })
	defer func() {
		if letGo.Stop() {
			f.Close()
		}
	}()
	m := startMasterIn(t, e, dir, 10, 0.005, 0, 0.5, map[string]string{"localPort": "0", "remotePort": "9"})
	m.out.waitLine(t, waiting, 1, m.done) // started: it did not fail on the busy file
}

// BeamNG lost in the middle of a run, through the real library and
// processes: the step fails with the reason (Error), and the master
// learns why from its logger.
func TestExportedFMULosesBeamNG(t *testing.T) {
	parallelOffWine(t)
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	listen := freePort(t)
	m := startMaster(t, e, 10, 0.005, 0, 0.5, map[string]string{
		"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port())), "silenceTimeout": "1"})
	bound := m.out.waitLine(t, waiting, 1, m.done)[1]
	em := emulate(t, e, bound, listen.String(), 1) // BeamNG stops after 1 s of its time
	em.summary(t)
	if code := m.wait(t); code != 3 {
		t.Errorf("the master exited %d, want 3 (a step's Error):\n%s", code, m.out)
	}
	for _, want := range []string{"[Error] logStatusError: BeamNG lost: BeamNG sent no message for 1s (parameter silenceTimeout)",
		"master: fmi2DoStep returned Error"} {
		if !strings.Contains(m.out.String(), want) {
			t.Errorf("the master's log lacks %q:\n%s", want, m.out)
		}
	}
}

//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/fmu/fmi"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/eventually"
	"beamconnect/internal/proctree"
)

// These tests run the built binary with FMUs that misbehave as processes:
// they print to stdout, start helpers, spin, call exit(). What they check
// is what a rig engineer sees: the summary, the exit status, the log, and
// what is left running afterwards.

// started is the binary running a command, its stderr read line by line.
type started struct {
	cmd    *osexec.Cmd
	stdout bytes.Buffer
	lines  chan string // stderr, line by line, closed at its end
	log    strings.Builder
	ended  chan struct{}
	code   int
}

// start runs the binary with args; env adds to the environment; group
// starts it in a process group of its own, as a terminal starts a job.
func start(t *testing.T, env []string, group bool, args ...string) *started {
	t.Helper()
	s := &started{cmd: osexec.Command(binary(t), args...), lines: make(chan string, 1024), ended: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout = &s.stdout
	if group {
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.cmd.Wait()
		s.code = s.cmd.ProcessState.ExitCode()
		close(s.ended)
	}()
	t.Cleanup(func() {
		select {
		case <-s.ended:
		default:
			s.cmd.Process.Kill()
			<-s.ended
		}
	})
	return s
}

// waitLog waits for a stderr line containing want.
func (s *started) waitLog(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("no log line with %q before the end:\n%s", want, s.log.String())
			}
			s.log.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no log line with %q in 60 s:\n%s", want, s.log.String())
		}
	}
}

// wait waits for the end, up to limit (a bound only a hang reaches), and
// returns the log.
func (s *started) wait(t *testing.T, limit time.Duration) string {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case l, ok := <-s.lines:
			if ok {
				s.log.WriteString(l + "\n")
				continue
			}
			select {
			case <-s.ended:
				return s.log.String()
			case <-timeout:
			}
		case <-timeout:
		}
		s.cmd.Process.Kill()
		t.Fatalf("still running %v after it started:\n%s", limit, s.log.String())
	}
}

func (s *started) summary(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.stdout.Bytes(), &m); err != nil {
		t.Fatalf("stdout is not the JSON summary (%v):\n%s\nlog:\n%s", err, s.stdout.String(), s.log.String())
	}
	return m
}

// pids reads the pids the test FMU wrote to BEAMCONNECT_TEST_PIDS: "host"
// for the process it runs in, "helper" for the one it started.
func pids(t *testing.T, file, what string) []int {
	t.Helper()
	b, _ := os.ReadFile(file)
	var out []int
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), what+" "); ok {
			n, _ := strconv.Atoi(rest)
			out = append(out, n)
		}
	}
	return out
}

// gone waits for a process to end, up to a bound only one left running
// reaches. (It is not this process's child: nothing tells of its end.)
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	if !eventually.True(10*time.Second, func() bool { return !proctree.Alive(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the %s (pid %d) is still running 10 s after the run ended", what, pid)
	}
}

// An FMU that prints to stdout (a debugging printf, at instantiation and
// at every step) neither breaks the host's protocol nor the summary run
// --json prints in process: what it prints goes to the log.
func TestRunFMUPrintingToStdout(t *testing.T) {
	for _, tt := range []struct {
		name, params string
	}{
		{"child process", `{ "path": "cruise.fmu" }`},
		{"in process", `{ "path": "cruise.fmu", "inProcess": true }`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rig := fmuRig(t, testfmu.Options{Fault: "print"}, tt.params)
			// Paced: 2 s of BeamNG's time take 2 s, and the host shows
			// what its FMU prints at most once a second.
			s := start(t, nil, false, "run", "--json", rig, "--emulate", "--sim-duration", "2s")
			log := s.wait(t, 60*time.Second)
			sum := s.summary(t)
			if s.code != exitOK || sum["model_faults"] != 0.0 || sum["messages"].(float64) < 100 {
				t.Errorf("exit %d, faults %v, messages %v\n%s", s.code, sum["model_faults"], sum["messages"], log)
			}
			if !strings.Contains(log, "cruise: instantiated") || !strings.Contains(log, "cruise: step ") {
				t.Errorf("what the FMU printed is not in the log:\n%s", log)
			}
		})
	}
}

// An FMU that starts a helper process: the run ends at its end, not when
// the helper does, and the helper ends with it.
func TestRunFMUHelperEndsWithTheRun(t *testing.T) {
	t.Parallel()
	rig := fmuRig(t, testfmu.Options{Fault: "fork"}, `{ "path": "cruise.fmu" }`)
	file := filepath.Join(t.TempDir(), "pids")
	s := start(t, []string{"BEAMCONNECT_TEST_PIDS=" + file}, false, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "2s")
	log := s.wait(t, 30*time.Second) // the helper sleeps 60 s
	if sum := s.summary(t); s.code != exitOK || sum["model_faults"] != 0.0 {
		t.Errorf("exit %d, faults %v\n%s", s.code, sum["model_faults"], log)
	}
	helpers := pids(t, file, "helper")
	if len(helpers) == 0 {
		t.Fatalf("the FMU started no helper:\n%s", log)
	}
	for _, pid := range helpers {
		gone(t, pid, "FMU's helper")
	}
}

// The host crashes after its FMU started a helper that holds its pipes:
// the crash is reported as a crash (not a hung step) when it happens, and
// the host is started again at once, not when the helper exits.
func TestRunFMUHostCrashAfterFork(t *testing.T) {
	rig := fmuRig(t, testfmu.Options{Fault: "fork", After: 200}, `{ "path": "cruise.fmu" }`)
	file := filepath.Join(t.TempDir(), "pids")
	// Interrupted: its --duration a bound, should the test end first.
	s := start(t, []string{"BEAMCONNECT_TEST_PIDS=" + file}, false, "run", "--json", rig, "--emulate", "--free-running", "--duration", "5m")
	s.waitLog(t, "the FMU's host process ended: SIGSEGV")
	s.waitLog(t, "the FMU is answering again after its restart")
	s.cmd.Process.Signal(syscall.SIGINT)
	log := s.wait(t, 30*time.Second)
	if strings.Contains(log, "has not returned") {
		t.Errorf("the crash was taken for a hung step:\n%s", log)
	}
	if s.code != exitFailed {
		t.Errorf("exit %d, want %d", s.code, exitFailed)
	}
	for _, pid := range pids(t, file, "helper") {
		gone(t, pid, "FMU's helper")
	}
}

// beamconnect killed (SIGKILL) while its FMU spins in a step: the host
// does not live on (it would burn a core for ever), and the next run
// removes the FMU's unpacked files the killed one left behind.
func TestKilledRunLeavesNoHost(t *testing.T) {
	rig := fmuRig(t, testfmu.Options{Fault: "hang", After: 50}, `{ "path": "cruise.fmu", "restart": false }`)
	file := filepath.Join(t.TempDir(), "pids")
	tmp := t.TempDir()
	env := []string{"BEAMCONNECT_TEST_PIDS=" + file, "TMPDIR=" + tmp}
	// Killed: its --duration a bound, should the test end first.
	s := start(t, env, false, "run", rig, "--emulate", "--free-running", "--duration", "5m")
	s.waitLog(t, "FMU fault") // the step has run past the model timeout: it spins
	hosts := pids(t, file, "host")
	if len(hosts) != 1 || !proctree.Alive(hosts[0]) {
		t.Fatalf("hosts %v: want one, running", hosts)
	}
	s.cmd.Process.Kill()
	s.wait(t, 10*time.Second)
	gone(t, hosts[0], "FMU host")
	left, _ := filepath.Glob(filepath.Join(tmp, "beamconnect-fmu-*"))
	if len(left) != 1 {
		t.Fatalf("unpacked folders after the kill: %v, want the killed run's", left)
	}

	// The next run, with a good FMU, removes the killed run's folder; its
	// own goes at its end.
	good := fmuRig(t, testfmu.Options{}, `{ "path": "cruise.fmu" }`)
	next := start(t, env, false, "run", "--json", good, "--emulate", "--free-running", "--sim-duration", "1s")
	log := next.wait(t, 60*time.Second)
	if next.code != exitOK {
		t.Fatalf("exit %d\n%s", next.code, log)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "beamconnect-fmu-*")); len(left) != 0 {
		t.Errorf("unpacked folders left: %v", left)
	}
}

// Ctrl-C in a terminal sends SIGINT to the whole foreground process
// group: beamconnect and, were it in the group, the FMU host. A stop with
// Ctrl-C is a clean stop: exit 0, no fault, no restart.
func TestRunFMUInterruptedFromTheTerminal(t *testing.T) {
	rig := fmuRig(t, testfmu.Options{}, `{ "path": "cruise.fmu" }`)
	// Interrupted: its --duration a bound, should the test end first.
	s := start(t, nil, true, "run", "--json", rig, "--emulate", "--duration", "5m")
	s.waitLog(t, "is=connected")
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
	log := s.wait(t, 30*time.Second)
	sum := s.summary(t)
	if s.code != exitOK || sum["model_faults"] != 0.0 || sum["model_restarts"] != 0.0 {
		t.Errorf("exit %d, faults %v, restarts %v\n%s", s.code, sum["model_faults"], sum["model_restarts"], log)
	}
	if strings.Contains(log, "host process ended") || strings.Contains(log, "starting it again") {
		t.Errorf("the interrupt reached the FMU host:\n%s", log)
	}
}

// An FMU that calls exit(0) in process takes beamconnect with it (C's
// exit cannot be refused), but not silently: the run's stdout has no
// summary, the exit status is 3 (not the FMU's 0), and the log says what
// happened.
// In its child process, it is a model fault like a crash.
func TestRunFMUCallsExit(t *testing.T) {
	rig := fmuRig(t, testfmu.Options{Fault: "exit", After: 100}, `{ "path": "cruise.fmu", "inProcess": true }`)
	s := start(t, nil, false, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "5s")
	log := s.wait(t, 60*time.Second)
	if s.code != fmi.ExitStatus || s.stdout.Len() != 0 || !strings.Contains(log, "the FMU called exit(0)") {
		t.Errorf("in process: exit %d, stdout %q\n%s", s.code, s.stdout.String(), log)
	}

	rig = fmuRig(t, testfmu.Options{Fault: "exit", After: 100}, `{ "path": "cruise.fmu", "restart": false }`)
	s = start(t, nil, false, "run", "--json", rig, "--emulate", "--free-running", "--sim-duration", "2s")
	log = s.wait(t, 60*time.Second)
	if s.code != exitFailed || !strings.Contains(log, "the FMU's host process ended: fatal error: the FMU called exit(0)") {
		t.Errorf("in its child process: exit %d\n%s", s.code, log)
	}
	s.summary(t)
}

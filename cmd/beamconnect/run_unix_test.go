//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/internal/logtest"
)

// run reloads its config when the file changes and on SIGHUP, logs what
// changed or why it refused, and counts both in the summary. Each step
// waits for the run to say it took the one before.
//
// Not parallel: the SIGHUP goes to the test binary, and every run in it
// would take it.
func TestRunReload(t *testing.T) {
	dir := t.TempDir()
	rig := filepath.Join(dir, "rig.json")
	src, _ := os.ReadFile("../../examples/cruise-pedals.json")
	src = []byte(strings.Replace(string(src), `"$schema": "../schemas/config.schema.json",`, "", 1))
	os.WriteFile(rig, src, 0o644)
	p := startInProcess(t, "run", "--json", rig, "--emulate", "--free-running")
	p.stderr.WaitFor(t, "is=connected")
	// A valid edit: log the gear as well as the rpm.
	os.WriteFile(rig, []byte(strings.Replace(string(src), `{ "propertyName": "gear" }`, `{ "propertyName": "gear" }, { "propertyName": "fuel" }`, 1)), 0o644)
	p.stderr.WaitFor(t, "config reloaded")
	os.WriteFile(rig, []byte(strings.Replace(string(src), `"rpm"`, `"rmp"`, 1)), 0o644)
	p.stderr.WaitFor(t, "config reload refused")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	p.stderr.WaitForN(t, "config reload refused", 2)
	p.stop()
	if code := p.wait(t); code != exitOK {
		t.Fatalf("exit %d\n%s", code, &p.stderr)
	}
	errOut := p.stderr.String()
	var s map[string]any
	json.Unmarshal([]byte(p.stdout.String()), &s)
	// The edit, then the bad file, then SIGHUP re-reads the bad file: refused again.
	if s["reloads"] != 1.0 || s["reload_errors"] != 2.0 {
		t.Errorf("reloads %v, errors %v\n%s", s["reloads"], s["reload_errors"], errOut)
	}
	for _, want := range []string{"config reloaded", "out 3 re-mapped: [rpm@C9, gear@C2] → [rpm@C9, gear@C2, fuel@C3]",
		"config reload refused", `rig.json:15:29: outputs[0].ports[2][0].propertyName: "rmp" is not a BeamNG signal (did you mean "rpm"?)`,
		"SIGHUP: reloading the config"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("log lacks %q:\n%s", want, errOut)
		}
	}
}

// A recording destination that blocks (here a FIFO whose reader never
// reads) is said while the run goes on: that it takes no rows (a second
// after the pipe filled), then that rows are lost (once 8 MB of them wait).
// It does not hold the run past its end: stopped as Ctrl-C stops it, the
// recorder gives up after its bound, the loss is reported, the summary
// printed, the exit status 1. The run goes on until both lines have come
// (free-running, some 150 bytes a row: the 64 KB pipe fills in a fraction
// of a second), however slowly the machine runs it; before, the only line
// came after the run's end.
func TestRunRecordDestinationBlocks(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "rows")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0) // opens, never reads
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	p := startInProcess(t, "run", "--json", "../../examples/cruise-pedals.json", "--emulate", "--free-running", "--record", fifo, "--force")
	p.stderr.WaitFor(t, "recording: the destination takes no rows")
	p.stderr.WaitFor(t, "recording: rows are lost")
	if strings.Contains(p.stderr.String(), "is=disconnecting") {
		t.Fatalf("the run ended before it said so:\n%s", &p.stderr)
	}
	p.stop()
	code := p.wait(t)
	out, errOut := p.stdout.String(), p.stderr.String()
	var s struct {
		Faults    []string `json:"faults"`
		Lost      int64    `json:"record_lost"`
		Error     string   `json:"record_error"`
		Connected bool     `json:"connected"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("no summary: %v\n%s\n%s", err, out, errOut)
	}
	if code != exitFailed || s.Lost == 0 || !strings.Contains(s.Error, "took no rows") || !s.Connected {
		t.Errorf("exit %d, lost %d, error %q, faults %q", code, s.Lost, s.Error, s.Faults)
	}
	if !strings.Contains(errOut, "the destination blocks") || strings.Count(errOut, "recording: the destination takes no rows") != 1 {
		t.Errorf("the end does not say it gave up on the destination, or the stall was said more than once:\n%s", errOut)
	}
}

// SIGHUP right after start (at its first word), and during the summary
// (as the run says it is disconnecting at its end), reloads (or is
// ignored); it never kills the run before its summary is out.
func TestRunSIGHUPAtTheEdges(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	for _, tt := range []struct {
		name string
		at   string // what the run says first: the moment of the burst
	}{
		{"at its first word", ""},
		{"during the summary", "is=disconnecting"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := osexec.Command(bin, "run", "--json", "../../examples/cruise-pedals.json", "--emulate", "--sim-duration", "1500ms")
			var stdout strings.Builder
			stderr := &logtest.Buffer{}
			cmd.Stdout, cmd.Stderr = &stdout, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			// Its first log line is on the way as soon as it has written
			// anything.
			stderr.WaitFor(t, tt.at)
			for range 20 { // a burst around the moment
				cmd.Process.Signal(syscall.SIGHUP)
				time.Sleep(time.Millisecond) // spread over some 20 ms: sent at once, they would arrive as one
			}
			err := cmd.Wait()
			if ee, ok := err.(*osexec.ExitError); ok && ee.ExitCode() == -1 {
				t.Errorf("SIGHUP %s killed the run: %v", tt.name, err)
			}
			if !strings.Contains(stdout.String(), `"messages"`) {
				t.Errorf("SIGHUP %s: no summary (%v):\n%s", tt.name, err, stdout.String())
			}
		})
	}
}

// rigOnPorts writes the cruise rig with beamconnect on localPort and
// BeamNG on remotePort, and returns its path.
func rigOnPorts(t *testing.T, local, remote int) string {
	t.Helper()
	src, _ := os.ReadFile("../../examples/cruise-pedals.json")
	cfg := strings.Replace(string(src), `"remotePort": 64891`, fmt.Sprintf(`"remotePort": %d`, remote), 1)
	cfg = strings.Replace(cfg, `"localPort": 64890`, fmt.Sprintf(`"localPort": %d`, local), 1)
	cfg = strings.Replace(cfg, `"$schema": "../schemas/config.schema.json",`, "", 1)
	rig := filepath.Join(t.TempDir(), "rig.json")
	os.WriteFile(rig, []byte(cfg), 0o644)
	return rig
}

// startProcess starts the binary with args; its stdout and stderr are
// buffers that may be read while it runs.
func startProcess(t *testing.T, args ...string) (*osexec.Cmd, *logtest.Buffer, *logtest.Buffer) {
	t.Helper()
	cmd := osexec.Command(binary(t), args...)
	out, errb := &logtest.Buffer{}, &logtest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out, errb
}

// waitExit waits for cmd at most limit and returns its exit status.
func waitExit(t *testing.T, cmd *osexec.Cmd, limit time.Duration, what string) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s still running after %v", what, limit)
	}
	return -1
}

// BeamNG stops, and beamconnect is stopped (SIGINT, as Ctrl-C) some
// seconds later: exit 0, no fault, a note of when BeamNG stopped. Then a
// beamconnect that leaves while BeamNG (emulate) waits for it: BeamNG's side
// stops once the client has been gone --client-gone, instead of crawling
// through its --duration at a message per 2 s.
func TestCleanStops(t *testing.T) {
	t.Parallel()
	t.Run("beamconnect stopped after BeamNG", func(t *testing.T) {
		t.Parallel()
		free := freeUDPPorts(t, 2)
		rig := rigOnPorts(t, free[0], free[1])
		run, out, errb := startProcess(t, "run", "--json", rig)
		errb.WaitFor(t, "waiting for BeamNG")
		emu, _, emuErr := startProcess(t, "emulate", "--config", rig, "--duration", "2s")
		if code := waitExit(t, emu, 30*time.Second, "emulate --duration 2s"); code != exitOK {
			t.Fatalf("emulate: exit %d\n%s", code, emuErr)
		}
		// BeamNG stopped; beamconnect says so, and its user stops it a
		// while later (longer than BeamNG's own 2 s wait for a reply,
		// which a silence may be too).
		errb.WaitFor(t, "BeamNG went silent")
		time.Sleep(2 * time.Second) // the user's moment: a time, not an event
		run.Process.Signal(os.Interrupt)
		code := waitExit(t, run, 30*time.Second, "run after SIGINT")
		var s struct {
			Healthy bool
			Faults  []string
			Notes   []string
		}
		json.Unmarshal([]byte(out.String()), &s)
		if code != exitOK || !s.Healthy || len(s.Faults) != 0 || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "before beamconnect was stopped") {
			t.Errorf("stopped after BeamNG: exit %d, %+v\n%s", code, s, errb)
		}
	})
	// The other way round: beamconnect leaves, BeamNG's side stops by
	// itself once it has been gone 2 s.
	t.Run("BeamNG stops after beamconnect left", func(t *testing.T) {
		t.Parallel()
		free := freeUDPPorts(t, 2)
		rig := rigOnPorts(t, free[0], free[1])
		run, _, errb := startProcess(t, "run", rig)
		errb.WaitFor(t, "waiting for BeamNG")
		emu, _, emuErr := startProcess(t, "emulate", "--config", rig, "--duration", "600s", "--client-gone", "2s")
		errb.WaitFor(t, "is=connected")
		run.Process.Signal(os.Interrupt)
		if code := waitExit(t, run, 30*time.Second, "run after SIGINT"); code != exitOK {
			t.Errorf("run: exit %d\n%s", code, errb) // stopped while BeamNG still sends: healthy
		}
		start := time.Now()
		if code := waitExit(t, emu, 30*time.Second, "emulate after its client left"); code != exitOK {
			t.Errorf("emulate: exit %d\n%s", code, emuErr)
		}
		if !strings.Contains(emuErr.String(), "the client has answered nothing for a while: stopping") {
			t.Errorf("emulate did not say why it stopped (after %v):\n%s", time.Since(start), emuErr)
		}
	})
}

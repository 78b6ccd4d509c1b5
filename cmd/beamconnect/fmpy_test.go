package main

import (
	"os"
	osexec "os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/internal/eventually"
	"beamconnect/internal/wine"
)

// The FMPy loop of docs/fmu-export.md, where a user meets it: FMPy cannot
// be installed here, so testdata/fmpy_loop.py makes FMPy's FMU2Slave
// calls itself with ctypes (python3's own), in the same order with the
// same arguments and callbacks: instantiate with logging on, set the ports,
// setupExperiment with no stop time, enter and exit initialization, a PI
// controller's steps, terminate, free. Against `beamconnect emulate` the
// car holds the setpoint, the run is healthy, and no call fails.
func TestFMPyLoop(t *testing.T) {
	parallelOffWine(t)
	python, err := osexec.LookPath("python3")
	if err != nil || runtime.GOOS != "linux" || wine.Running() {
		t.Skip("needs python3 on Linux (the loop loads the linux64 library)")
	}
	const stop, setpoint = 20.0, 20.0
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	dir := unpack(t, e.path)
	listen := freePort(t)
	cmd := osexec.Command(python, "testdata/fmpy_loop.py", dir, strconv.FormatFloat(stop, 'g', -1, 64), strconv.Itoa(int(listen.Port())),
		strconv.FormatFloat(setpoint, 'g', -1, 64))
	out := newOutput()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	bound := out.waitLine(t, waiting, 1, done)[1]
	em := emulate(t, e, bound, listen.String(), stop)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the loop still runs:\n%s", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the loop exited %d:\n%s", code, out)
	}
	speed := out.waitLine(t, regexp.MustCompile(`speed at the end: (\S+) m/s`), 1, done)[1]
	if v, _ := strconv.ParseFloat(speed, 64); v < setpoint-1 || v > setpoint+1 {
		t.Errorf("the car ends at %v m/s, want %v:\n%s", v, setpoint, out)
	}
	if !regexp.MustCompile(`\[OK\] the run was healthy`).MatchString(out.String()) {
		t.Errorf("the run was not healthy:\n%s", out)
	}
	if sum := em.summary(t); sum["stalls"] != 0.0 {
		t.Errorf("BeamNG stalled: %v", sum)
	}
}

// Ctrl-C in a Python master while the FMU waits for BeamNG (the loop of
// TestFMPyLoop, connectTimeout 0: for ever, and no BeamNG): the waiting
// call returns Error at once, saying it was interrupted, and Python
// raises KeyboardInterrupt where the call was made, as it would in pure
// Python. It used to be spent in the FMU's log callback ("Exception
// ignored on calling ctypes callback function … KeyboardInterrupt") and
// the call went on until connectTimeout. Python ends without freeing the
// FMU (the traceback ends the script), and the coupling's process ends
// with it.
func TestFMPyInterrupted(t *testing.T) {
	parallelOffWine(t)
	python, err := osexec.LookPath("python3")
	if err != nil || runtime.GOOS != "linux" || wine.Running() {
		t.Skip("needs python3 on Linux (the loop loads the linux64 library)")
	}
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	dir := unpack(t, e.path)
	listen := freePort(t)
	cmd := osexec.Command(python, "testdata/fmpy_loop.py", dir, "10", strconv.Itoa(int(listen.Port())), "20", "0")
	out := newOutput()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	out.waitLine(t, waiting, 1, done)
	pid, _ := strconv.Atoi(out.waitLine(t, regexp.MustCompile(`beamconnect couples BeamNG.tech for the master .* pid=(\d+)`), 1, done)[1])
	interrupted := time.Now()
	cmd.Process.Signal(os.Interrupt) // what Ctrl-C sends it
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("Python still runs a minute after Ctrl-C:\n%s", out)
	}
	t.Logf("Python ended %v after Ctrl-C", time.Since(interrupted).Round(time.Millisecond))
	text := out.String()
	for _, want := range []string{
		"[Error] fmi2ExitInitializationMode: interrupted: the master's process was asked to stop (Ctrl-C) while the call waited",
		"exit_initialization_mode(c)", // the traceback points at the call
		"KeyboardInterrupt",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Python's output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Exception ignored") {
		t.Errorf("the interrupt was spent in a callback:\n%s", text)
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGINT {
		t.Errorf("Python ended %v: want its end by SIGINT, as an uncaught KeyboardInterrupt ends it", cmd.ProcessState)
	}
	if !eventually.True(time.Minute, func() bool { return !alive(pid) }) {
		t.Errorf("the coupling's process (pid %d) outlived Python by a minute", pid)
	}
}

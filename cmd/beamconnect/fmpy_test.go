package main

import (
	"os"
	osexec "os/exec"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

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

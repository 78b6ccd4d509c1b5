package main

import (
	"bytes"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/fmuexport"
	"beamconnect/fmuexport/testmaster"
	"beamconnect/internal/eventually"
	"beamconnect/internal/testprog"
	"beamconnect/internal/wine"
)

// startProbe starts the test master's probe mode on e (see
// fmuexport/testmaster/c/probe.c), stepping by h, with the parameters by
// name.
func startProbe(t *testing.T, e exported, mode string, h float64, params map[string]string) *masterRun {
	t.Helper()
	m := &masterRun{out: newOutput(), done: make(chan struct{}), dir: unpack(t, e.path)}
	tm, _ := e.iface.Variable("time")
	args := []string{"-probe", mode, m.dir, fmuexport.Identifier(e.path), strconv.Itoa(e.fmi), e.iface.Token, number(h), strconv.Itoa(int(tm.VR))}
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

// paramArgs are parameters by name as the test master takes them
// (i:VR=0).
func paramArgs(t *testing.T, e exported, params map[string]string) []string {
	t.Helper()
	var args []string
	for name, val := range params {
		v, ok := e.iface.Variable(name)
		if !ok {
			t.Fatalf("no parameter %s", name)
		}
		kind := map[fmuexport.Type]string{fmuexport.Real: "r", fmuexport.Integer: "i", fmuexport.String: "s"}[v.Type]
		args = append(args, fmt.Sprintf("%s:%d=%s", kind, v.VR, val))
	}
	return args
}

var beamngFor = regexp.MustCompile(`master: BeamNG for (\d+) steps`)

// serveBeamNG is BeamNG's side for a probe: each time the master says it
// initializes for K steps, once the FMU waits, an emulator that sends the
// messages of K steps of h and stops; one after the other, until the
// master ends. It returns how many it started.
func serveBeamNG(t *testing.T, m *masterRun, e exported, listen string, h float64) int {
	t.Helper()
	for n := 1; ; n++ {
		var steps []string
		guard := time.NewTimer(5 * time.Minute)
		for steps == nil {
			if ms := beamngFor.FindAllStringSubmatch(m.out.String(), -1); len(ms) >= n {
				steps = ms[n-1]
				break
			}
			select {
			case <-m.out.changed:
			case <-m.done:
				if ms := beamngFor.FindAllStringSubmatch(m.out.String(), -1); len(ms) >= n {
					steps = ms[n-1]
					continue
				}
				guard.Stop()
				return n - 1
			case <-guard.C:
				t.Fatalf("the master neither went on nor ended in 5 minutes:\n%s", m.out)
			}
		}
		guard.Stop()
		k, _ := strconv.Atoi(steps[1])
		bound := m.out.waitLine(t, waiting, n, m.done)[1]
		em := emulate(t, e, bound, listen, float64(k)*h)
		em.summary(t) // it ends on its own once its last message is sent
	}
}

// noCrash fails t if the master's output holds a crash: a Go stack trace
// or fatal error of the FMU's process (its stderr reaches the master's
// log), or anything it said on stderr at all.
func noCrash(t *testing.T, out string) {
	t.Helper()
	for _, bad := range []string{"fatal error", "goroutine ", "panic:", "SIGSEGV", "coupling process says"} {
		if strings.Contains(out, bad) {
			t.Errorf("the master's log holds %q:\n%s", bad, out)
			return
		}
	}
}

// freedLine is what a probe says after each free.
var freedLine = regexp.MustCompile(`master: (.+): freed; processes left: (\d+); port (\d+) free: (yes|no)`)

// checkFrees holds every free a probe said to leave no process and, where
// the FMU had bound a port, that port free; it returns how many.
func checkFrees(t *testing.T, out string) int {
	t.Helper()
	frees := freedLine.FindAllStringSubmatch(out, -1)
	for _, f := range frees {
		if f[2] != "0" || f[3] != "0" && f[4] != "yes" {
			t.Errorf("%s: %s processes of the master's left, port %s free: %s", f[1], f[2], f[3], f[4])
		}
	}
	return len(frees)
}

// Fifty times in one process, through the real library: instantiate,
// couple four steps with BeamNG, terminate, free. No crash of the
// coupling's process at any free (it crashed now and then at free,
// its Go stack trace in the master's log), and after each free its
// process is gone and the port it bound free. (Ten times under Wine,
// where each BeamNG takes seconds to start.)
func TestExportedFMUCycles(t *testing.T) {
	parallelOffWine(t)
	cycles := 50
	if wine.Running() {
		cycles = 10
	}
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	listen := freePort(t)
	m := startProbe(t, e, fmt.Sprintf("cycles:%d", cycles), 0.005, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port()))})
	if n := serveBeamNG(t, m, e, listen.String(), 0.005); n != cycles {
		t.Errorf("%d initializations, want %d", n, cycles)
	}
	if code := m.wait(t); code != 0 {
		t.Fatalf("the master exited %d:\n%s", code, m.out)
	}
	out := m.out.String()
	noCrash(t, out)
	if n := checkFrees(t, out); n != cycles {
		t.Errorf("%d frees said, want %d:\n%s", n, cycles, out)
	}
	if ok := strings.Count(out, "(OK): freed"); ok != cycles {
		t.Errorf("%d of %d cycles coupled without a failed call:\n%s", ok, cycles, out)
	}
}

// A free after every state FMI 2.0 and 3.0 allow one in, through the real
// library: just instantiated, in initialization mode, initialized,
// stepping, after a failed step, after a call out of order, terminated,
// reset, after a second run that followed a reset. No crash, and after
// each free the coupling's process is gone and its port free.
func TestExportedFMUFreeAfterEveryState(t *testing.T) {
	for _, major := range []int{2, 3} {
		t.Run(fmt.Sprintf("FMI %d", major), func(t *testing.T) {
			parallelOffWine(t)
			e := exportFMU(t, "../../examples/cruise-pedals.json", major)
			listen := freePort(t)
			m := startProbe(t, e, "lifecycle", 0.005, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port()))})
			serveBeamNG(t, m, e, listen.String(), 0.005)
			if code := m.wait(t); code != 0 {
				t.Fatalf("the master exited %d:\n%s", code, m.out)
			}
			out := m.out.String()
			noCrash(t, out)
			if n := checkFrees(t, out); n != 9 {
				t.Errorf("%d frees said, want 9:\n%s", n, out)
			}
			for _, want := range []string{"a step of h = NaN returned Error", "a step after it returned Error",
				"leaving initialization mode before entering it returned Error", "reset returned OK",
				"initialized again after a reset: OK", "a step of the second run returned OK", "master: probe done"} {
				if !strings.Contains(out, want) {
					t.Errorf("the master's log lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// Two threads call doStep(t, h) at once on one instance, which FMI
// forbids: the second is refused with Error, said through the master's
// logger, and never gets an OK for a step only one of them coupled (in
// 16 of 40 such rounds both used to). The instance goes on stepping. Last,
// one thread frees the instance while the other's step waits for BeamNG:
// the step ends with Error, then the instance is freed, nothing crashes.
// (The second thread calls only while the first's call is under way: beside
// busy loops it once woke after a whole step of the first, and its call was
// then a second step from a time the FMU had left. The master tries such a
// round again and says so.)
func TestExportedFMUTwoThreads(t *testing.T) {
	parallelOffWine(t)
	rounds := 20
	if wine.Running() {
		rounds = 8
	}
	const h = 2.0 // 400 of BeamNG's messages: the first call is long in progress when the second comes
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	listen := freePort(t)
	m := startProbe(t, e, fmt.Sprintf("threads:%d", rounds), h, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port()))})
	serveBeamNG(t, m, e, listen.String(), h)
	if code := m.wait(t); code != 0 {
		t.Fatalf("the master exited %d:\n%s", code, m.out)
	}
	out := m.out.String()
	sum := regexp.MustCompile(`master: (\d+) rounds, (\d+) at once, (\d+) with two OKs`).FindStringSubmatch(out)
	if sum == nil {
		t.Fatalf("the master did not say how the rounds went:\n%s", out)
	}
	if sum[1] != strconv.Itoa(rounds) || sum[2] != sum[1] || sum[3] != "0" {
		t.Errorf("%s rounds, %s with the two calls at once, %s with two OKs: want %d, all at once, none with two OKs:\n%s", sum[1], sum[2], sum[3], rounds, out)
	}
	if n := strings.Count(out, "fmi2DoStep: refused: another call on this instance (fmi2DoStep) is in progress, from another thread"); n != rounds {
		t.Errorf("%d refusals said through the logger, want %d:\n%s", n, rounds, out)
	}
	for _, want := range []string{"fmi2DoStep: the instance is being freed (from another thread): the call ends",
		"master: a step while the other thread freed the instance returned Error"} {
		if !strings.Contains(out, want) {
			t.Errorf("the master's log lacks %q:\n%s", want, out)
		}
	}
	noCrash(t, out)
	if n := checkFrees(t, out); n != 1 {
		t.Errorf("%d frees said, want 1:\n%s", n, out)
	}
}

// The coupling's process stopped in the middle of a run (SIGSTOP; on
// Windows its threads suspended): the step waiting on it fails within the
// parameter processTimeout, naming the coupling's process, not BeamNG,
// and the master goes on to terminate and free; the process is then gone.
// It used to hang the master until the process went on, and then blame
// BeamNG. Killed, the process fails the step at once, saying how it
// ended.
func TestExportedFMUProcessFails(t *testing.T) {
	const processTimeout = 2
	for _, tc := range []struct {
		name string
		fail func(t *testing.T, pid int) func() // and what undoes it, if anything
		want string                             // what the master's log says, PID the pid
	}{
		{"stopped", suspend, "fmi2DoStep: beamconnect's coupling process (pid PID) did not answer within 2 s (parameter processTimeout)"},
		{"killed", func(t *testing.T, pid int) func() {
			p, err := os.FindProcess(pid)
			if err == nil {
				err = p.Kill()
			}
			if err != nil {
				t.Fatal(err)
			}
			return func() {}
		}, killedSays},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parallelOffWine(t)
			e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
			listen := freePort(t)
			rec := filepath.Join(t.TempDir(), "rig.csv")
			m := startMaster(t, e, 1000, 0.005, 0, 0.5, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port())),
				"recordFile": rec, "processTimeout": strconv.Itoa(processTimeout), "silenceTimeout": "60"})
			bound := m.out.waitLine(t, waiting, 1, m.done)[1]
			emulate(t, e, bound, listen.String(), 1000, "--client-gone", "1s")
			pid, _ := strconv.Atoi(m.out.waitLine(t, regexp.MustCompile(`beamconnect couples BeamNG.tech for the master .* pid=(\d+)`), 1, m.done)[1])
			if !eventually.True(time.Minute, func() bool {
				data, _ := os.ReadFile(rec)
				return bytes.Count(data, []byte("\n")) > 100
			}) {
				t.Fatalf("no rows recorded within a minute:\n%s", m.out)
			}
			failed := time.Now()
			undo := tc.fail(t, pid)
			defer undo()
			m.out.waitLine(t, regexp.MustCompile(`master: fmi2DoStep returned Error`), 1, m.done)
			took := time.Since(failed)
			t.Logf("the step failed %v after the coupling's process was %s (processTimeout %d s)", took.Round(time.Millisecond), tc.name, processTimeout)
			if limit := (processTimeout + 20) * time.Second; took > limit {
				t.Errorf("the step failed %v after the process was %s: want within processTimeout, %d s (%v allowed)", took, tc.name, processTimeout, limit)
			}
			out := m.out.String()
			if want := strings.ReplaceAll(tc.want, "PID", strconv.Itoa(pid)); !strings.Contains(out, want) || strings.Contains(out, "BeamNG lost") {
				t.Errorf("the master's log does not say %q alone:\n%s", want, out)
			}
			if code := m.wait(t); code != 3 {
				t.Errorf("the master exited %d, want 3 (the step's Error):\n%s", code, m.out)
			}
			if !eventually.True(time.Minute, func() bool { return !alive(pid) }) {
				t.Errorf("the coupling's process (pid %d) outlived its master by a minute", pid)
			}
		})
	}
}

// Ctrl-C in a master that handles it, while initialization waits for
// BeamNG (connectTimeout 0: for ever): the call returns Error at once,
// saying it was interrupted, and the master's own handler sees the
// interrupt (on Unix it is sent again once the call has returned; on
// Windows the console's handlers run on). Terminate and free follow, and
// leave nothing behind. It used to wait for connectTimeout.
func TestExportedFMUInterrupted(t *testing.T) {
	parallelOffWine(t)
	for _, major := range []int{2, 3} {
		t.Run(fmt.Sprintf("FMI %d", major), func(t *testing.T) {
			e := exportFMU(t, "../../examples/cruise-pedals.json", major)
			listen := freePort(t)
			m := startProbe(t, e, "interrupt", 0.005, map[string]string{"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port())), "connectTimeout": "0"})
			m.out.waitLine(t, waiting, 1, m.done)
			m.out.waitLine(t, regexp.MustCompile(`interrupt me`), 1, m.done)
			if err := testprog.Interrupt(m.cmd.Process); err != nil {
				t.Fatal(err)
			}
			if code := m.wait(t); code != 0 {
				t.Fatalf("the master exited %d:\n%s", code, m.out)
			}
			out := m.out.String()
			for _, want := range []string{
				fmt.Sprintf("fmi%dExitInitializationMode: interrupted: the master's process was asked to stop (Ctrl-C) while the call waited", major),
				fmt.Sprintf("master: fmi%dExitInitializationMode returned Error after", major),
				"the master's own handler saw the interrupt: yes",
				"master: after the interrupt: freed; processes left: 0",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the master's log lacks %q:\n%s", want, out)
				}
			}
			noCrash(t, out)
			checkFrees(t, out)
		})
	}
}

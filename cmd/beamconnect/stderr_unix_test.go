//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	osexec "os/exec"
	"syscall"
	"testing"
	"time"
)

// runWithStderr starts the built binary with stderr on w, waits for it at
// most limit, and returns the summary it printed on stdout, its exit status
// and how long it took. A run still going after limit is killed and fails
// the test: that is the hang the fault probe found.
func runWithStderr(t *testing.T, w *os.File, started func(), limit time.Duration, args ...string) (map[string]any, *os.ProcessState, time.Duration) {
	t.Helper()
	cmd := osexec.Command(binary(t), args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, w
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the child has its own copy
	if started != nil {
		started()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running after %v (stdout: %q)", limit, stdout.String())
	}
	took := time.Since(begin)
	st := cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("killed by %v (a shell shows exit %d); stdout: %q", ws.Signal(), 128+int(ws.Signal()), stdout.String())
	}
	var sum map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("no summary on stdout (exit %d): %v\n%q", st.ExitCode(), err, stdout.String())
	}
	return sum, st, took
}

// exitPerHealth checks that the exit status says what the summary says.
func exitPerHealth(t *testing.T, sum map[string]any, st *os.ProcessState) {
	t.Helper()
	want := exitFailed
	if sum["healthy"] == true {
		want = exitOK
	}
	if st.ExitCode() != want {
		t.Errorf("exit %d, but the summary says healthy=%v: %v", st.ExitCode(), sum["healthy"], sum["faults"])
	}
}

// Fault matrix, "stderr reader gone": whoever read beamconnect's log (a
// pipe into a pager or a log shipper) exits after the first line. The next
// log line meets a broken pipe; the run must go on to its end and print its
// summary, not die of SIGPIPE with BeamNG's last controls applied.
func TestStderrReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	readOneLineThenExit := func() {
		bufio.NewReader(r).ReadString('\n')
		r.Close()
	}
	sum, st, took := runWithStderr(t, w, readOneLineThenExit, time.Minute,
		"run", "--json", pedals, "--emulate", "--sim-duration", "1500ms")
	t.Logf("--sim-duration 1500ms with stderr's reader gone: exit %d after %v, %v messages, healthy %v",
		st.ExitCode(), took.Round(time.Millisecond), sum["messages"], sum["healthy"])
	if sum["messages"].(float64) < 100 || sum["connected"] != true {
		t.Errorf("the coupling did not run on: %v", sum)
	}
	exitPerHealth(t, sum, st)
}

// Fault matrix, "stderr reader stuck": the log's reader stops reading (a
// stopped pager, a terminal on Ctrl-S, a hung log shipper) and the pipe is
// full. A log call must not block the coupling: the run still ends at its
// end and the summary comes.
func TestStderrReaderStuck(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // open but never read
	fillPipe(t, w)
	sum, st, took := runWithStderr(t, w, nil, time.Minute,
		"run", "--json", pedals, "--emulate", "--sim-duration", "3s")
	t.Logf("--sim-duration 3s with a stuck stderr: exit %d after %v, %v messages, healthy %v",
		st.ExitCode(), took.Round(time.Millisecond), sum["messages"], sum["healthy"])
	if sum["messages"].(float64) < 100 || sum["connected"] != true {
		t.Errorf("the coupling did not run: %v", sum)
	}
	exitPerHealth(t, sum, st)
}

// fillPipe writes into w until the pipe's buffer is full, so the next
// write blocks as it does when the reader has stopped reading.
func fillPipe(t *testing.T, w *os.File) {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	rc.Write(func(fd uintptr) bool {
		// Big writes first, then single bytes for the last page: a write of
		// up to a page is all or nothing.
		for _, n := range []int{4096, 1} {
			chunk := bytes.Repeat([]byte("x"), n)
			for werr = nil; werr == nil; {
				_, werr = syscall.Write(int(fd), chunk)
			}
		}
		return true
	})
	if !errors.Is(werr, syscall.EAGAIN) {
		t.Fatalf("filling the pipe: %v", werr)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	osexec "os/exec"
	"syscall"
	"testing"
	"time"

	"beamconnect/internal/logtest"
	"beamconnect/internal/wine"
)

// Ctrl-Break ends a run as Ctrl-C does: at once, with its summary. It goes
// to the run's own process group, so nothing else on the console sees it.
func TestRunCtrlBreak(t *testing.T) {
	wine.Skip(t, wine.CtrlBreak)
	bin := binary(t)
	cmd := osexec.Command(bin, "run", "--json", "../../examples/cruise-pedals.json", "--emulate", "--duration", "60s")
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	var stdout bytes.Buffer
	var stderr logtest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	stderr.WaitFor(t, "is=connected")
	const ctrlBreak = 1
	gen := syscall.NewLazyDLL("kernel32.dll").NewProc("GenerateConsoleCtrlEvent")
	if r, _, err := gen.Call(ctrlBreak, uintptr(cmd.Process.Pid)); r == 0 {
		t.Skipf("no console to send Ctrl-Break through: %v", err)
	}
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if took := time.Since(sent); took > 5*time.Second {
			t.Errorf("ended %v after Ctrl-Break", took)
		}
		var sum struct{ Messages int64 }
		if jerr := json.Unmarshal(stdout.Bytes(), &sum); jerr != nil || sum.Messages == 0 {
			t.Errorf("exit %v, no summary: %v\n%s\n%s", err, jerr, stdout.String(), stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after Ctrl-Break\n%s", stderr.String())
	}
}

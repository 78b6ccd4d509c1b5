package main

import (
	"bytes"
	"encoding/json"
	osexec "os/exec"
	"testing"
	"time"

	"beamconnect/testprog"
)

// The real binary, interrupted while BeamNG's side waits in a 2 s blocking
// receive for a client that never comes, exits at once with its summary.
func TestEmulateInterrupted(t *testing.T) {
	bin := binary(t)
	cmd := osexec.Command(bin, "emulate", "--json", "--listen", freePort(t).String(), "--client", freePort(t).String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // started, sent id 0, blocked waiting for a reply
	sent := time.Now()
	if err := testprog.Interrupt(cmd.Process); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	err := cmd.Wait()
	if took := time.Since(sent); err != nil || took > time.Second {
		t.Fatalf("exit %v after %v\n%s", err, took, stderr.String())
	}
	var sum map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("no JSON summary: %v\n%s", err, stdout.String())
	}
	if sum["sent"] != 1 || sum["stalls"] != 0 || sum["steps"] < 10 {
		t.Errorf("summary %s", stdout.String())
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"net"
	osexec "os/exec"
	"testing"
	"time"

	"beamconnect/internal/testprog"
)

// The real binary, interrupted while BeamNG's side waits in a 2 s blocking
// receive for a client that never comes, exits at once with its summary:
// before that wait ends, so no stall is counted (the wall clock only bounds
// a hang).
func TestEmulateInterrupted(t *testing.T) {
	bin := binary(t)
	// The client never answers, but it listens: its first datagram says
	// BeamNG's side has sent id 0 and is blocked waiting for the reply.
	client, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cmd := osexec.Command(bin, "emulate", "--json", "--listen", freePort(t).String(), "--client", client.LocalAddr().String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, _, err := client.ReadFromUDP(make([]byte, 2048)); err != nil {
		cmd.Process.Kill()
		t.Fatalf("no message from the emulated BeamNG: %v\n%s", err, stderr.String())
	}
	sent := time.Now()
	if err := testprog.Interrupt(cmd.Process); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case err = <-ended:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("still running a minute after Ctrl-C\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("exit %v after %v\n%s", err, time.Since(sent), stderr.String())
	}
	var sum map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("no JSON summary: %v\n%s", err, stdout.String())
	}
	if sum["sent"] != 1 || sum["stalls"] != 0 || sum["steps"] < 10 {
		t.Errorf("summary %s", stdout.String())
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const followExample = "../../examples/follow.json"

// run couples both vehicles of the follow example: a summary per vehicle,
// a recording with a vehicle column, healthy (6 s of simulation: 1200
// messages of each vehicle).
func TestRunFleetExample(t *testing.T) {
	t.Parallel()
	rec := filepath.Join(t.TempDir(), "follow.csv")
	out, errOut, code := exec(t, nil, "run", "--json", followExample, "--emulate", "--free-running", "--sim-duration", "6s", "--record", rec)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var sum struct {
		Messages, Replies int64
		Healthy           bool
		Vehicles          map[string]struct {
			Messages, Replies int64
			Emulator          *struct{ Stalls, Sent, Accepted int64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	ego, lead := sum.Vehicles["ego"], sum.Vehicles["lead"]
	if !sum.Healthy || ego.Messages < 1000 || lead.Messages < 1000 || sum.Messages != ego.Messages+lead.Messages ||
		ego.Emulator == nil || ego.Emulator.Stalls != 0 || lead.Emulator == nil || lead.Emulator.Stalls != 0 {
		t.Errorf("summary %s", out)
	}
	b, _ := os.ReadFile(rec)
	head, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(head, "time,vehicle,status,id,reply_id,reloads,local_time,out1.ego.groundspeed") || !strings.Contains(head, "out2.ego.gap:lead") ||
		!strings.HasSuffix(head, ",model.leadTarget [m/s],model.egoTarget [m/s],model.gapError [m],model.timeGap [s]") ||
		!strings.Contains(string(b), "\n") || strings.Count(string(b), ",lead,") < 1000 {
		t.Errorf("recording header %q", head)
	}
	out, _, _ = exec(t, nil, "compile", followExample)
	if !strings.Contains(out, `vehicle "lead" (beamconnect binds 127.0.0.1:64892, BeamNG binds 127.0.0.1:64893):`) ||
		!hasRow(out, "out 2 0 gap:lead relative - - m outputs[0] ego") {
		t.Errorf("compile:\n%s", out)
	}
}

// freeUDPPorts finds n free loopback ports (bound on port 0, then released).
func freeUDPPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var conns []*net.UDPConn
	for range n {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	for _, c := range conns {
		c.Close()
	}
	return ports
}

// emulate --config with several vehicles runs every one of them in one
// physics loop; with nobody answering, every vehicle's blocking receive
// holds the others (one stall each time round). Each vehicle's controller
// writes its own debug logs, in a folder named for it (before, only the
// first vehicle's were written).
func TestEmulateFleetConfig(t *testing.T) {
	t.Parallel()
	p := freeUDPPorts(t, 4)
	cfg := filepath.Join(t.TempDir(), "two.json")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`{"version": 2,
  "outputs": [{"remoteObject": "a", "ports": [[{"propertyName": "groundspeed"}]]}, {"remoteObject": "b", "ports": [[{"propertyName": "groundspeed"}]]}],
  "beamng": {"vehicles": {"a": {"localPort": %d, "remotePort": %d}, "b": {"localPort": %d, "remotePort": %d}}}}`, p[0], p[1], p[2], p[3])), 0o644)
	logs := filepath.Join(t.TempDir(), "logs")
	out, errOut, code := exec(t, nil, "emulate", "--config", cfg, "--steps", "25", "--free-running", "--json", "--debug-logs", logs)
	if code != exitOK || !strings.Contains(errOut, `vehicle=b`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var sums []struct{ Steps, Sent, Stalls int64 }
	if err := json.Unmarshal([]byte(out), &sums); err != nil || len(sums) != 2 {
		t.Fatalf("%v\n%s", err, out)
	}
	if sums[0].Steps != 25 || sums[1].Steps != 25 || sums[0].Sent < 1 || sums[1].Sent < 1 {
		t.Errorf("both vehicles step together and send: %+v", sums)
	}
	for i, v := range []string{"a", "b"} {
		sent, err := os.ReadFile(filepath.Join(logs, v, "simulinkSendLog.csv"))
		steps, _ := os.ReadFile(filepath.Join(logs, v, "simulinkPhysicsStepsLog.csv"))
		if rows := strings.Count(string(sent), "\n") - 1; err != nil || int64(rows) != sums[i].Sent || strings.Count(string(steps), "\n")-1 != 25 {
			t.Errorf("vehicle %s's debug logs: %d messages of %d sent, %d steps (%v)", v, rows, sums[i].Sent, strings.Count(string(steps), "\n")-1, err)
		}
	}
}

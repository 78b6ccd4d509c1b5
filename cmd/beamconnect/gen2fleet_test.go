package main

import (
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"beamconnect/beamng"
	"beamconnect/beamng/beamngtest"
	"beamconnect/recording/recordingtest"
)

const gen2Fleet = "../../examples/gen2-follow.json"

// copyGen2 copies a Gen 2 example and its CSVs into a temporary folder, the
// CSVs' otherUDP and beamngUDP ports replaced by free ones (ports maps each
// example port to its replacement), so a test never binds 64890.
func copyGen2(t *testing.T, config string, csvs ...string) (dir string, ports map[int]netip.AddrPort) {
	t.Helper()
	dir = t.TempDir()
	ports = map[int]netip.AddrPort{}
	for _, name := range csvs {
		b, err := os.ReadFile(filepath.Join("../../examples", name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			f := strings.Split(l, ",")
			if len(f) > 3 && f[0] == "connection" && f[2] == "port" {
				old, _ := strconv.Atoi(f[3])
				ports[old] = freePort(t)
				f[3] = strconv.Itoa(int(ports[old].Port()))
				lines[i] = strings.Join(f, ",")
			}
		}
		os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")), 0o644)
	}
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, filepath.Base(config)), b, 0o644)
	return dir, ports
}

// The Gen 2 fleet example validates, and compile shows each vehicle with
// its own CSV, window and start command.
func TestGen2FleetCompile(t *testing.T) {
	t.Parallel()
	out, _, code := exec(t, nil, "compile", gen2Fleet)
	for _, want := range []string{
		"coupling of 2 vehicles, each laid out by its own CSV",
		"BeamNG sends every 5 ms (10 physics steps of 0.5 ms; sendSkips 9) for every vehicle",
		`vehicle "ego": ` + filepath.FromSlash("../../examples/gen2-follow-ego.csv") + `: BeamNG sends 8 doubles and reads 3;`,
		"select vehicle \"lead\", load " + filepath.FromSlash("../../examples/gen2-follow-lead.csv") + ", and press \"Start coupling with 3rd party\"\n     (BeamNG sends to 127.0.0.1:64892, which beamconnect binds, and listens on 127.0.0.1:64893)",
		"vehicle \"lead\":\n       controller.loadControllerExternal('tech/cosimulationCoupling'",
		"udpSendPort=64892, udpReceivePort=64893",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("compile: exit %d, missing %q in\n%s", code, want, out)
		}
	}
	if !hasRow(out, "out 2 0 gap:lead relative - - m outputs[0] ego") || !hasRow(out, "in 2 1 Driver/brake to BeamNG 2 line 10 - inputs[1] lead") {
		t.Errorf("compile table:\n%s", out)
	}
	out, _, _ = exec(t, nil, "compile", "--json", gen2Fleet)
	var plan struct {
		Vehicles []struct {
			Name, Interface, Local string
			Unanswered             int
		}
	}
	json.Unmarshal([]byte(out), &plan)
	if len(plan.Vehicles) != 2 || plan.Vehicles[1].Interface != filepath.FromSlash("../../examples/gen2-follow-lead.csv") || plan.Vehicles[1].Local != "127.0.0.1:64892" || plan.Vehicles[1].Unanswered != 1 {
		t.Errorf("compile --json vehicles %+v", plan.Vehicles)
	}
}

// validate makes a CSV row BeamNG cannot resolve an error where fields the
// config reads come after it, and leaves it a warning where none do.
func TestValidateCutShort(t *testing.T) {
	t.Parallel()
	out, _, code := exec(t, nil, "validate", "../../config/testdata/gen2-cut.bad.json", "../../config/testdata/gen2-cut.good.json")
	for _, want := range []string{
		`gen2-cut.csv:4:10: BeamNG does not know the group "Kinmatics" (did you mean "Kinematics"?): it stops building its message at this row, so this row and every later signalTo row never arrive, and outputs[0].ports[0][1] (vehiclePositionX) would read nothing`,
		"gen2-cut.bad.json: invalid: 1 error",
		"gen2-cut.csv:4:10: warning: BeamNG does not know the group \"Kinmatics\"",
		"gen2-cut.good.json: valid, 1 warning",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if code != exitFailed {
		t.Errorf("exit %d", code)
	}
}

// emulate --config with a Gen 2 fleet runs every vehicle in one physics
// loop, each from its own CSV: its layout, its period and its ports.
func TestEmulateGen2Fleet(t *testing.T) {
	t.Parallel()
	dir, ports := copyGen2(t, gen2Fleet, "gen2-follow-ego.csv", "gen2-follow-lead.csv")
	// The lead's CSV gets one more signalTo row: its messages, and only
	// its, are a double longer.
	lead := filepath.Join(dir, "gen2-follow-lead.csv")
	b, _ := os.ReadFile(lead)
	os.WriteFile(lead, []byte(strings.Replace(string(b), "signalFrom,", "signalTo,Electrics,rpm,,number,,,\nsignalFrom,", 1)), 0o644)

	var lens [2]atomic.Int64
	for v, local := range []int{64890, 64892} {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ports[local]))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := beamngtest.NewReplierFor(beamng.NewLayout("", make([]beamng.Signal, 7+v), make([]beamng.Signal, 2)))
		go func() {
			buf := make([]byte, beamng.MaxDatagram)
			for {
				n, _, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				lens[v].Store(int64(n / 8))
				if out, ok := r.Reply(buf[:n], beamngtest.Next, func(reply []float64) { reply[1], reply[2] = 0.2, 0 }); ok {
					c.WriteToUDPAddrPort(out, ports[local+1])
				}
			}
		}()
	}
	out, errOut, code := exec(t, nil, "emulate", "--config", filepath.Join(dir, "gen2-follow.json"), "--free-running", "--steps", "4000", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var sums []struct {
		Sent, Accepted, Stalls int64
		SendSkips              int64 `json:"send_skips"`
	}
	if err := json.Unmarshal([]byte(out), &sums); err != nil || len(sums) != 2 {
		t.Fatalf("%v\n%s", err, out)
	}
	for v, s := range sums {
		if s.Sent < 390 || s.Accepted < s.Sent-2 || s.Stalls != 0 || s.SendSkips != 9 {
			t.Errorf("vehicle %d: %+v: want a message every 10 steps, each answered", v, s)
		}
	}
	if lens[0].Load() != 8 || lens[1].Load() != 9 {
		t.Errorf("messages of %d and %d doubles, want 8 (ego's CSV) and 9 (lead's)", lens[0].Load(), lens[1].Load())
	}
	if !strings.Contains(errOut, "csv="+lead) || !strings.Contains(errOut, "sends_doubles=9") {
		t.Errorf("the lead's CSV is not logged:\n%s", errOut)
	}
}

// cruise-torque runs on Gen 2 when the CSV lists the wheel torques: the
// emulated car is held at the set speed by torques alone.
func TestRunGen2CruiseTorque(t *testing.T) {
	t.Parallel()
	dir, _ := copyGen2(t, "../../examples/gen2-cruise-torque.json", "gen2-cruise-torque.csv")
	rec := filepath.Join(dir, "run.csv")
	r, errOut := runJSON(t, filepath.Join(dir, "gen2-cruise-torque.json"), "--emulate", "--free-running", "--sim-duration", "6s", "--record", rec)
	if r.Messages != 1200 || r.Replies != r.Messages || r.Emulator == nil || r.Emulator.Stalls != 0 {
		t.Errorf("summary %+v\n%s", r, errOut)
	}
	if v := recordingtest.Last(t, rec, "out1.vehicleGroundSpeed"); v < 14.5 || v > 15.5 {
		t.Errorf("speed at the end %v, want the set speed 15", v)
	}
	if v := recordingtest.Last(t, rec, "in1.brakingTorqueRL"); v > 0 {
		t.Errorf("braking torque %v: braking is sent negative", v)
	}
}

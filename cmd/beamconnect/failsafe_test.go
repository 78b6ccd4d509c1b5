//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"beamconnect/internal/eventually"
)

// runFaulty runs `run --json` expecting exit 1, and returns the summary.
func runFaulty(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	out, errOut, code := exec(t, nil, append([]string{"run", "--json"}, args...)...)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return s, errOut
}

func hasFault(s map[string]any, sub string) bool {
	fs, _ := s["faults"].([]any)
	for _, f := range fs {
		if str, _ := f.(string); strings.Contains(str, sub) {
			return true
		}
	}
	return false
}

// --record never overwrites the config it runs, nor a
// file that is not a recording unless --force.
func TestRecordRefusals(t *testing.T) {
	dir := t.TempDir()
	rig := filepath.Join(dir, "rig.json")
	src, _ := os.ReadFile(pedals)
	os.WriteFile(rig, src, 0o644)
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("do not lose me\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{rig, "--record", rig}, "is the config file being run"},
		{[]string{rig, "--record", rig, "--force"}, "is the config file being run"},
		{[]string{rig, "--record", notes}, "not a recording"},
	} {
		t.Run(argsName(tt.args[1:]), func(t *testing.T) {
			_, errOut, code := exec(t, nil, append([]string{"run", "--emulate", "--free-running", "--sim-duration", "1s"}, tt.args...)...)
			if code != exitFailed || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, want 1 and %q:\n%s", tt.args, code, tt.want, errOut)
			}
		})
	}
	if b, _ := os.ReadFile(rig); !bytes.Equal(b, src) {
		t.Error("the config was overwritten")
	}
	if b, _ := os.ReadFile(notes); string(b) != "do not lose me\n" {
		t.Error("the notes were overwritten")
	}
}

// A full disk (/dev/full) is reported when it happens; the coupling goes
// on, and the run exits 1 with the loss in its summary.
func TestRecordFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	s, errOut := runFaulty(t, pedals, "--emulate", "--free-running", "--sim-duration", "1s", "--record", "/dev/full", "--force")
	if s["messages"].(float64) < 100 || s["record_lost"].(float64) < 1 || !strings.Contains(s["record_error"].(string), "no space left") {
		t.Errorf("summary %v", s)
	}
	if !hasFault(s, "the recording lost") || !strings.Contains(errOut, "recording: a write failed") {
		t.Errorf("faults %v\n%s", s["faults"], errOut)
	}
}

// The client port busy at start. The bind is retried
// with backoff, each failure logged with a hint, and a run that never
// connected exits 1 (before: status 4 for ever, exit 0). The run ends when
// it gives up the bind, after --bind-timeout: by then it tried at 0,
// 250 ms and 750 ms.
func TestRunPortBusy(t *testing.T) {
	busy, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	rig := filepath.Join(t.TempDir(), "rig.json")
	os.WriteFile(rig, []byte(fmt.Sprintf(`{"version": 2, "outputs": [{"ports": [[{"propertyName": "groundspeed"}]]}],
		"beamng": {"localPort": %d}}`, busy.LocalAddr().(*net.UDPAddr).Port)), 0o644)
	s, errOut := runFaulty(t, rig, "--bind-timeout", "1s")
	if s["connected"] != false || s["bind_failures"].(float64) < 2 || s["status_at_end"] != 4.0 {
		t.Errorf("summary %v", s)
	}
	if !hasFault(s, "never connected") || !strings.Contains(errOut, "another program has 127.0.0.1:") {
		t.Errorf("faults %v\n%s", s["faults"], errOut)
	}
}

// A SIGKILL while BeamNG is silent loses nothing that
// was answered (rows go to the file every 250 ms, in silence too), and the
// file ends with a whole row.
func TestRecordSurvivesSIGKILL(t *testing.T) {
	bin := binary(t)
	rec := filepath.Join(t.TempDir(), "run.csv")
	cmd := osexec.Command(bin, "run", pedals, "--emulate", "--free-running", "--fault", "pause=5s@1s", "--record", rec, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// 1 s simulated in a blink, then BeamNG's pause: kill it once the 200
	// messages before the pause are on disk (or never, and the test says so).
	eventually.True(time.Minute, func() bool {
		b, _ := os.ReadFile(rec)
		return bytes.Count(b, []byte("\n")) >= 201
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	b, _ := os.ReadFile(rec)
	lines := strings.Split(string(b), "\n")
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the file does not end with a whole row: %q", lines[len(lines)-1])
	}
	// 1 s at BeamNG's 5 ms: 200 messages before the pause, all answered.
	if rows := len(lines) - 2; rows < 199 {
		t.Errorf("%d rows on disk after the SIGKILL; 200 were answered before BeamNG paused", rows)
	}
}

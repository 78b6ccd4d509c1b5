//go:build unix

package main

import (
	"beamconnect/recording/recordingtest"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A live edit of a running system's parameter set, as a user makes it in
// an editor: the file watcher reloads the system, the controller takes the
// new gain (recorded from the FMU itself), the log says the change; an
// edit the FMU cannot take (a gain of 50; it takes 0 to 10) is refused
// with where and why, and changes nothing; a change of the structure (a
// connection removed) is refused as needing a restart. The summary counts
// one reload and two refused, and the run stays healthy.
func TestLiveEditOfARunningSystem(t *testing.T) {
	ssd, _ := exampleSystem(t)
	ssv := filepath.Join(filepath.Dir(ssd), "resources", "tuning.ssv")
	original, err := os.ReadFile(ssv)
	if err != nil {
		t.Fatal(err)
	}
	setKp := func(kp string) {
		text := strings.Replace(string(original), `name="controller.kp"><ssv:Real value="0.08"/>`, `name="controller.kp"><ssv:Real value="`+kp+`"/>`, 1)
		if err := os.WriteFile(ssv, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := filepath.Join(t.TempDir(), "run.csv")
	run, out, errb := startProcess(t, "run", "--json", ssd, "--emulate", "--record", rec)
	errb.WaitFor(t, "is=connected")
	setKp("0.12")
	errb.WaitFor(t, "controller.kp 0.08 → 0.12")
	setKp("50")
	errb.WaitFor(t, `tuning.ssv:6:5: controller.kp: the FMU's "kp" takes 0 to 10 (its min and max): 50 is above`)
	setKp("0.12") // as it runs: nothing to reload
	errb.WaitFor(t, "system rewritten with nothing a run can see changed")
	structure, _ := os.ReadFile(ssd)
	os.WriteFile(ssd, []byte(strings.Replace(string(structure), `<ssd:Connection startElement="actuator" startConnector="brake" endElement="vehicle" endConnector="brake"/>`, "", 1)), 0o644)
	errb.WaitFor(t, "SystemStructure.ssd:40:5: cannot change while running (restart beamconnect for it): the connections (")
	time.Sleep(100 * time.Millisecond) // rows after the refusals, to see nothing changed
	run.Process.Signal(os.Interrupt)
	if code := waitExit(t, run, 30*time.Second, "run after SIGINT"); code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	var s struct {
		Reloads      int64 `json:"reloads"`
		ReloadErrors int64 `json:"reload_errors"`
		ModelFaults  int64 `json:"model_faults"`
	}
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil || s.Reloads != 1 || s.ReloadErrors != 2 || s.ModelFaults != 0 {
		t.Errorf("%v %+v\n%s", err, s, errb)
	}
	rows := recordingtest.Rows(t, rec)
	var seen []float64
	for _, r := range rows {
		if kp := r["controller.kp"]; len(seen) == 0 || seen[len(seen)-1] != kp {
			seen = append(seen, kp)
		}
	}
	if len(seen) != 2 || seen[0] != 0.08 || seen[1] != 0.12 {
		t.Errorf("the controller's kp over the run: %v, want 0.08 then 0.12", seen)
	}
}

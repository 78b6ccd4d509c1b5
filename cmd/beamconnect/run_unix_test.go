//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run reloads its config when the file changes and on SIGHUP, logs what
// changed or why it refused, and counts both in the summary.
func TestRunReload(t *testing.T) {
	dir := t.TempDir()
	rig := filepath.Join(dir, "rig.json")
	src, _ := os.ReadFile("../../examples/cruise-pedals.json")
	src = []byte(strings.Replace(string(src), `"$schema": "../schemas/config.schema.json",`, "", 1))
	os.WriteFile(rig, src, 0o644)
	go func() {
		time.Sleep(400 * time.Millisecond)
		// A valid edit: log the gear as well as the rpm.
		os.WriteFile(rig, []byte(strings.Replace(string(src), `{ "propertyName": "gear" }`, `{ "propertyName": "gear" }, { "propertyName": "fuel" }`, 1)), 0o644)
		time.Sleep(300 * time.Millisecond)
		os.WriteFile(rig, []byte(strings.Replace(string(src), `"rpm"`, `"rmp"`, 1)), 0o644)
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
	}()
	out, errOut, code := exec(t, nil, "run", "--json", rig, "--emulate", "--free-running", "--duration", "1500ms")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var s map[string]any
	json.Unmarshal([]byte(out), &s)
	// The edit, then the bad file, then SIGHUP re-reads the bad file: refused again.
	if s["reloads"] != 1.0 || s["reload_errors"] != 2.0 {
		t.Errorf("reloads %v, errors %v\n%s", s["reloads"], s["reload_errors"], errOut)
	}
	for _, want := range []string{"config reloaded", "out 3 re-mapped: [rpm@C9, gear@C2] → [rpm@C9, gear@C2, fuel@C3]",
		"config reload refused", `rig.json:15:29: outputs[0].ports[2][0].propertyName: "rmp" is not a BeamNG signal (did you mean "rpm"?)`,
		"SIGHUP: reloading the config"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("log lacks %q:\n%s", want, errOut)
		}
	}
}

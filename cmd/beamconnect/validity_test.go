package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models/kinds"
)

// One validity: whatever validate accepts, compile, run and emulate accept.
// Every config fixture and example seeds the corpus; the fuzzer mutates
// numbers and keys from there (1e400, 1e19 ms periods, pingTime 1000 were
// all once "valid" and then refused by run).
func FuzzOneValidity(f *testing.F) {
	for _, glob := range []string{"../../config/testdata/*.json", "../../examples/*.json"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("rig.json", data)
		if err != nil {
			return
		}
		plan, ds := checkPlan(cfg, cfg.Warnings)
		if ds.Errors() > 0 {
			return // validate refuses it too: consistent
		}
		if plan == nil {
			t.Fatalf("no plan and no error for\n%s", data)
		}
		for v := range plan.Vehicles {
			_ = plan.StartCommand(v) // compile prints it
		}
		if _, err := emulator.New(emulator.Config{SimulinkTime: plan.Period, PingTime: plan.PingTime, PhysicsDt: plan.PhysicsDt},
			nil); err != nil {
			t.Fatalf("emulate refuses what validate accepts: %v\n%s", err, data)
		}
		if plan.Model == "exec" {
			return // starting it would run a program: Validate covered its parameters
		}
		m, err := kinds.New(plan.Model, plan.ModelParams, plan, nil)
		if err != nil {
			t.Fatalf("run refuses the model validate accepts: %v\n%s", err, data)
		}
		if len(plan.Vehicles) == 1 {
			if _, err := coupling.New(coupling.Options{Plan: plan, Model: m}); err != nil {
				t.Fatalf("run refuses what validate accepts: %v\n%s", err, data)
			}
		}
	})
}

// validate checks the model and its parameters too, placed in the file, so
// run never refuses a config validate passed.
func TestValidateModel(t *testing.T) {
	rig := filepath.Join(t.TempDir(), "rig.json")
	os.WriteFile(rig, []byte(`{"version": 2,
  "outputs": [{"ports": [[{"propertyName": "groundspeed"}]]}],
  "inputs": [{"ports": [[{"propertyName": "throttle"}]]}],
  "beamng": {"model": "cruise-pedals",
    "modelParams": {"setSpeed": "fast", "kpp": 1}}}`), 0o644)
	out, _, code := exec(t, nil, "validate", rig)
	for _, want := range []string{
		rig + `:4:23: beamng.model: model cruise-pedals needs the config to map inputs brake`,
		rig + `:5:48: beamng.modelParams.kpp: model cruise-pedals has no parameter "kpp" (did you mean "kp"?)`,
		rig + `:5:33: beamng.modelParams.setSpeed: expected a number, got the string "fast"`,
		rig + ": invalid: 3 errors, 0 warnings",
	} {
		if code != exitFailed || !strings.Contains(out, want) {
			t.Errorf("exit %d; want %q in\n%s", code, want, out)
		}
	}
	// run refuses it with the same words.
	_, errOut, code := exec(t, nil, "run", rig)
	if code != exitFailed || !strings.Contains(errOut, `beamng.modelParams.setSpeed: expected a number`) {
		t.Errorf("run: exit %d\n%s", code, errOut)
	}
}

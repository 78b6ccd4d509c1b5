package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// compile says the model timeout each config runs with and where it comes
// from, in its text and in --json; validate warns, placed in the file,
// where it is shorter than the period: an overdueDataTimeout of 0.1 ms
// became the lockstep model timeout silently, and 382 of 400 replies were
// neutral.
func TestModelTimeoutSaid(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		ms           float64
		text         string // compile says it
		from, warns  string
	}{
		{"the default", pedals, 1500, "1500 ms", "BeamNG's 2 s wait for a reply", ""},
		{"an overdueDataTimeout of 0.1 ms", "../../config/testdata/overdue-timeout.good.json", 0.1, "0.1 ms", "overdueDataTimeout of inputs[0]",
			"overdue-timeout.good.json:5:50: warning: inputs[0].overdueDataTimeout: 0.1 ms becomes the model timeout"},
		{"modelTimeoutMs", "../../config/testdata/model-timeout.good.json", 2, "2 ms", "beamng.modelTimeoutMs",
			"model-timeout.good.json:5:50: warning: beamng.modelTimeoutMs: 2 ms is shorter than BeamNG's period (10 ms), the shortest a model is stepped at"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := exec(t, nil, "compile", tt.config)
			if code != exitOK || !strings.Contains(out, "a step not answered within "+tt.text+" ("+tt.from+") is a fault") {
				t.Errorf("compile: exit %d\n%s%s", code, out, errOut)
			}
			out, _, _ = exec(t, nil, "compile", "--json", tt.config)
			var plan struct {
				Ms   float64 `json:"model_timeout_ms"`
				From string  `json:"model_timeout_from"`
			}
			if err := json.Unmarshal([]byte(out), &plan); err != nil || plan.Ms != tt.ms || plan.From != tt.from {
				t.Errorf("compile --json: model timeout %v ms from %q (%v), want %v ms from %q", plan.Ms, plan.From, err, tt.ms, tt.from)
			}
			out, errOut, code = exec(t, nil, "validate", tt.config)
			if said := out + errOut; code != exitOK || (tt.warns == "") != !strings.Contains(said, "warning") || !strings.Contains(said, tt.warns) {
				t.Errorf("validate: exit %d, want 0 and the warning %q:\n%s", code, tt.warns, said)
			}
		})
	}
}

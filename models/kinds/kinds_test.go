package kinds

import (
	"strings"
	"testing"

	"beamconnect/config/configtest"
	"beamconnect/models"
)

func TestNewErrors(t *testing.T) {
	p := configtest.Plan(t, "../../examples/cruise-pedals.json")
	for _, tt := range []struct {
		name   string
		model  string
		params models.Params
		want   string
	}{
		{"an unknown model", "autopilot", nil, `model "autopilot": expected one of cruise-pedals, cruise-torque, exec, fmu, follow, heading-hold, hold`},
		{"a misspelt parameter", "cruise-pedals", models.Params{"setspeed": 3.0}, `model cruise-pedals: modelParams.setspeed: model cruise-pedals has no parameter "setspeed" (did you mean "setSpeed"?)`},
		{"an unknown parameter", "cruise-pedals", models.Params{"speed": 3.0}, `model cruise-pedals has no parameter "speed": expected one of setSpeed, kp, ki`},
		{"a string for a number", "cruise-pedals", models.Params{"setSpeed": "fast"}, `modelParams.setSpeed: expected a number, got the string "fast"`},
		{"a number out of range", "cruise-torque", models.Params{"maxTorque": -5.0}, "modelParams.maxTorque: expected a number above 0, got -5"},
		{"a parameter of hold", "hold", models.Params{"x": 1.0}, "model hold takes no parameters"},
		{"a string for a boolean", "exec", models.Params{"command": "true", "restart": "yes"}, `modelParams.restart: expected true or false, got the string "yes"`},
		{"cruise-torque unmapped", "cruise-torque", nil, "model cruise-torque needs the config to map inputs wheelFL_propulsionTorque, inputs wheelFL_brakingTorque"},
		{"heading-hold unmapped", "heading-hold", nil, "model heading-hold needs the config to map outputs yaw, inputs steering"},
		{"exec without a command", "exec", nil, "modelParams.command: missing: exec needs the program to run"},
		{"exec of an empty command", "exec", models.Params{"command": []string{}}, "modelParams.command: expected the program to run"},
		{"exec of no program", "exec", models.Params{"command": "/no/such/program"}, "starting \"/no/such/program\""},
		{"exec's reset misspelt", "exec", models.Params{"command": "true", "reset": "restrat"}, `modelParams.reset: expected "auto" (the program's reset line if it speaks it, else the program started again), "line", "restart" or "none", got the string "restrat"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.model, tt.params, p, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%s, %v) = %v, want %q", tt.model, tt.params, err, tt.want)
			}
		})
	}
	// A deadline is a real-time rig's: there it must be shorter than the
	// model timeout.
	_, err := New("exec", models.Params{"command": "true", "deadlineMs": 100.0}, p.InRealTime(), nil)
	if want := "modelParams.deadlineMs: 100 ms is longer than the model timeout (25 ms, beamng.modelTimeoutMs)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a deadline past the model timeout in real time: %v, want %q", err, want)
	}
}

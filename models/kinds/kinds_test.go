package kinds

import (
	"strings"
	"testing"

	"beamconnect/models"
	"beamconnect/ports/portstest"
)

func TestNewErrors(t *testing.T) {
	p := portstest.Load(t, "../../examples/cruise-pedals.json")
	for _, tt := range []struct {
		name   string
		params models.Params
		want   string
	}{
		{"autopilot", nil, `model "autopilot": expected one of cruise-pedals, cruise-torque, exec, fmu, follow, heading-hold, hold`},
		{"cruise-pedals", models.Params{"setspeed": 3.0}, `model cruise-pedals: modelParams.setspeed: model cruise-pedals has no parameter "setspeed" (did you mean "setSpeed"?)`},
		{"cruise-pedals", models.Params{"speed": 3.0}, `model cruise-pedals has no parameter "speed": expected one of setSpeed, kp, ki`},
		{"cruise-pedals", models.Params{"setSpeed": "fast"}, `modelParams.setSpeed: expected a number, got the string "fast"`},
		{"cruise-torque", models.Params{"maxTorque": -5.0}, "modelParams.maxTorque: expected a number above 0, got -5"},
		{"hold", models.Params{"x": 1.0}, "model hold takes no parameters"},
		{"exec", models.Params{"command": "true", "restart": "yes"}, `modelParams.restart: expected true or false, got the string "yes"`},
		{"cruise-torque", nil, "model cruise-torque needs the config to map inputs wheelFL_propulsionTorque, inputs wheelFL_brakingTorque"},
		{"heading-hold", nil, "model heading-hold needs the config to map outputs yaw, inputs steering"},
		{"exec", nil, "modelParams.command: missing: exec needs the program to run"},
		{"exec", models.Params{"command": []string{}}, "modelParams.command: expected the program to run"},
		{"exec", models.Params{"command": "/no/such/program"}, "starting \"/no/such/program\""},
	} {
		_, err := New(tt.name, tt.params, p, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%s, %v) = %v, want %q", tt.name, tt.params, err, tt.want)
		}
	}
	// A deadline is a real-time rig's: there it must be shorter than the
	// model timeout.
	_, err := New("exec", models.Params{"command": "true", "deadlineMs": 100.0}, p.InRealTime(), nil)
	if want := "modelParams.deadlineMs: 100 ms is longer than the model timeout (25 ms, beamng.modelTimeoutMs)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a deadline past the model timeout in real time: %v, want %q", err, want)
	}
}

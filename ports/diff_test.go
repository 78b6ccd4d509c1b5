package ports_test

import (
	"strings"
	"testing"

	"beamconnect/ports"
)

func TestDiff(t *testing.T) {
	base := `{"version": 2, "outputs": [{"ports": [[{"propertyName": "groundspeed"}]]}],
		"inputs": [{"ports": [[{"propertyName": "throttle"}]]}]%s}`
	old := compile(t, strings.Replace(base, "%s", "", 1))
	for _, tt := range []struct {
		name, extra string
		edit        func(string) string
		restart     []string
		live        []string
	}{
		{name: "same", edit: func(s string) string { return s }},
		{name: "re-map an output", edit: func(s string) string { return strings.Replace(s, `"groundspeed"`, `"B7"`, 1) }},
		{name: "re-map to another signal", edit: func(s string) string { return strings.Replace(s, `"groundspeed"`, `"rpm"`, 1) },
			live: []string{"out 1 re-mapped: [groundspeed@B7] → [rpm@C9]"}},
		{name: "add a port and an initial value",
			edit: func(s string) string {
				return strings.Replace(s, `[[{"propertyName": "throttle"}]]`, `[[{"propertyName": "throttle", "initialValue": 0.5}], [{"propertyName": "custom1"}]]`, 1)
			},
			live: []string{"in 1 re-mapped: [throttle@A1] → [throttle@A1 (initial 0.5)]", "in 2 added: [custom1@B1]"}},
		{name: "slower contract", edit: func(s string) string {
			return strings.Replace(s, `"outputs": [{`, `"outputs": [{"updatePeriodMs": 50, "ports": [[{"propertyName": "yaw"}]]}, {"updatePeriodMs": 5, `, 1)
		}},
		{name: "bind port", edit: func(s string) string { return strings.Replace(s, `%s`, `, "beamng": {"localPort": 7000}`, 1) },
			restart: []string{"the local address (beamng.localIP/localPort) (127.0.0.1:64890 → 127.0.0.1:7000)"}},
		{name: "period", edit: func(s string) string {
			return strings.Replace(s, `"outputs": [{`, `"outputs": [{"updatePeriodMs": 10, `, 1)
		}, restart: []string{"the update period BeamNG sends at (BeamNG was started with simulinkTime 0.005) (0.005 → 0.01)"}},
		{name: "period in real time", edit: func(s string) string {
			return strings.Replace(strings.Replace(s, `"outputs": [{`, `"outputs": [{"updatePeriodMs": 10, `, 1), `%s`, `, "beamng": {"realTime": true}`, 1)
		}, restart: []string{"the update period BeamNG sends at (BeamNG was started with simulinkTime 0.005) (0.005 → 0.01)",
			"beamng.realTime (false → true)",
			"the model timeout, ms (5 periods, at least 25 ms (real time)) (1500 → 50)"}}, // its default in real time is 5 periods
		{name: "overdue of the data to BeamNG", edit: func(s string) string {
			return strings.Replace(s, `"inputs": [{`, `"inputs": [{"overdueDataTimeoutMs": 100, `, 1)
		}, restart: []string{"the model timeout, ms (overdueDataTimeout of inputs[0]) (1500 → 100)"},
			live: []string{"contract inputs[0]: time sync false → false, overdue timeout -1 → 0.1 s"}},
		{name: "time sync", edit: func(s string) string {
			return strings.Replace(s, `"inputs": [{`, `"inputs": [{"timeSyncMode": "absolute", `, 1)
		},
			live: []string{"time sync: none at timeDilation 1 → master at 1", "contract inputs[0]: time sync false → true, overdue timeout -1 → -1 s"}},
		{name: "model", edit: func(s string) string { return strings.Replace(s, `%s`, `, "beamng": {"model": "cruise-pedals"}`, 1) },
			restart: []string{"beamng.model (hold → cruise-pedals)"}},
		{name: "model timeout", edit: func(s string) string { return strings.Replace(s, `%s`, `, "beamng": {"modelTimeoutMs": 80}`, 1) },
			restart: []string{"the model timeout, ms (beamng.modelTimeoutMs) (1500 → 80)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(tt.edit(base), "%s", "", 1)
			c := ports.Diff(old, compile(t, src))
			if tt.name == "slower contract" {
				if len(c.RestartOnly) != 0 || len(c.Live) < 2 {
					t.Errorf("%s: %+v", tt.name, c)
				}
				return
			}
			if strings.Join(c.RestartOnly, "|") != strings.Join(tt.restart, "|") || strings.Join(c.Live, "|") != strings.Join(tt.live, "|") {
				t.Errorf("%s:\n restart %q\n want    %q\n live    %q\n want    %q", tt.name, c.RestartOnly, tt.restart, c.Live, tt.live)
			}
			if (tt.restart == nil && tt.live == nil) != c.None() {
				t.Errorf("%s: None() = %v", tt.name, c.None())
			}
		})
	}
}

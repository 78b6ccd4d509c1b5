package fmumodel

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
	"beamconnect/internal/logtest"
	"beamconnect/models"
	"beamconnect/ports"
)

// typesRig runs the FMI 3.0 types FMU as the cruise-pedals rig's model.
func typesRig(t *testing.T, fixedStep float64, extra models.Params) (*FMU, *ports.Plan, *logtest.Buffer) {
	t.Helper()
	return rigOf(t, testfmu.TypesForTest(t, fixedStep), extra)
}

// Bound by name through the coupling's ports: an array's element (u[1])
// and an Int8 and a UInt64 from BeamNG's fields, an enumeration by its
// item's name, a structural parameter that sizes an array, the array as
// a JSON array, String and Binary parameters; the outputs back exact.
func TestFMUEveryTypeBound(t *testing.T) {
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			extra := models.Params{
				"inputs":  map[string]any{"u[1]": "groundspeed", "i8": "gear", "u64": "rpm"},
				"outputs": map[string]any{"y": "throttle", "o_i8": "brake", "o_mode": "driveMode"},
				"parameters": map[string]any{"mode": "Sport", "n": 3.0, "w": []any{1.0, 2.0, 3.0}, "gain": 2.0,
					"label": "left", "blob": "0aff", "u": []any{0.0, 0.25, 2.0}},
			}
			for k, v := range h.extra {
				extra[k] = v
			}
			m, p, log := typesRig(t, 0, extra)
			outs, ins := vectors(p)
			outs[0][0] = 3
			set := func(field string, x float64) {
				port, el, ok := p.Find(0, field)
				if !ok {
					t.Fatalf("no field %s", field)
				}
				outs[port][el] = x
			}
			set("groundspeed", 0.5)
			set("gear", -128)
			set("rpm", 1<<52)
			if !m.Step(0, outs, ins) {
				t.Fatalf("no controls: %v\n%s", m.Fault(), log)
			}
			get := func(field string) float64 {
				port, el, _ := p.Find(1, field)
				return ins[port][el]
			}
			if y, want := get("throttle"), 2*(0.5+2*0.25+3*2)+10*(1+2+3.0); y != want {
				t.Errorf("y = %v, want %v\n%s", y, want, log)
			}
			if b, d := get("brake"), get("driveMode"); b != -127 || d != 2 {
				t.Errorf("o_i8 %v (want -127), o_mode %v (want 2, Sport)", b, d)
			}
		})
	}
}

// An FMU with a fixed internal step of 1 s at a 5 ms period is stepped
// every 200 messages, by 1 s, its outputs held in between: the FMU's time
// (m[2]) goes 1, 2, 3 s, each held for 200 messages.
func TestFMUFixedStepMultiRate(t *testing.T) {
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			extra := models.Params{"outputs": map[string]any{"m[2]": "throttle"}}
			for k, v := range h.extra {
				extra[k] = v
			}
			m, p, log := typesRig(t, 1, extra)
			if notes := fmt.Sprint(m.Notes()); !strings.Contains(notes, "stepped every 200 messages by 1 s") {
				t.Errorf("notes %s", notes)
			}
			outs, ins := vectors(p)
			th, thE, _ := p.Find(1, "throttle")
			for k := range 600 {
				outs[0][0] = 3
				if !m.Step(float64(k)*p.Period, outs, ins) {
					t.Fatalf("message %d: no controls: %v\n%s", k, m.Fault(), log)
				}
				if got, want := ins[th][thE], math.Floor(float64(k)/200)+1; got != want {
					t.Fatalf("message %d: the FMU's time %v, want %v", k, got, want)
				}
			}
		})
	}
}

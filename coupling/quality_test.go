package coupling

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/internal/scope"
	"beamconnect/recording"
)

// The loops of beamng.quality are judged from the coupling's messages for
// any model: the cruise rig's speed against its setSpeed settles and holds
// (good), a live edit of setSpeed is a new step the loop follows, and the
// setpoints go to the scope beside the ports. A second loop takes its
// setpoint from a field BeamNG sends, a third from one the model writes.
func TestControlLoops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text, err := os.ReadFile("../examples/cruise-pedals.json")
		if err != nil {
			t.Fatal(err)
		}
		src := strings.Replace(string(text), `{ "propertyName": "gear" } ]`, `{ "propertyName": "gear" }, { "propertyName": "wheelspeed" } ]`, 1)
		src = strings.Replace(src, `"quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`,
			`"quality": [{ "measured": "groundspeed", "setpoint": "setSpeed" },
			{ "name": "wheels", "measured": "groundspeed", "setpoint": "wheelspeed", "band": 0.5 },
			{ "name": "pedal", "measured": "out2.throttle", "setpoint": "in1.throttle" }]`, 1)
		src = strings.Replace(src, `{ "propertyName": "throttle" }, { "propertyName": "brake" } ]`,
			`{ "propertyName": "throttle", "remoteObject": "VS Vehicle 0" }, { "propertyName": "brake" } ]`, 1)
		cfg, err := config.Parse("cruise.json", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var ring *scope.Ring
		r := rig{cfg: cfg, em: emulator.Config{Steps: 60000}}
		r.opts = func(h *harness, o *Options) {
			ring = scope.New(ScopeColumns(o.Plan, nil), 100, 1)
			o.Scope = ring
		}
		h := r.sim(t)
		var atReload []string
		h.run(t, func(ctx context.Context) {
			time.Sleep(15 * time.Second)
			for _, r := range h.s.Control() {
				atReload = append(atReload, r.Name+" "+r.Verdict)
			}
			if _, err := reloadConfig(h.s, "cruise.json", []byte(strings.Replace(src, `"setSpeed": 20`, `"setSpeed": 15`, 1))); err != nil {
				t.Errorf("reload: %v", err)
			}
		})
		if want := []string{"groundspeed good", "wheels good", "pedal good"}; strings.Join(atReload, ",") != strings.Join(want, ",") {
			t.Errorf("before the reload the loops were %q, want %q", atReload, want)
		}
		rs := h.s.FinalControl()
		if len(rs) != 3 {
			t.Fatalf("%d loops: %+v", len(rs), rs)
		}
		speed := rs[0]
		if speed.Signal != "out1.groundspeed" || speed.Setpoint != "setSpeed (model parameter)" || speed.Unit != "m/s" ||
			speed.Value != 15 || speed.Steps != 2 || speed.Verdict != "good" || !(math.Abs(speed.Error) < 0.3) {
			t.Errorf("the speed loop after setSpeed 15: %+v", speed)
		}
		if w := rs[1]; w.Setpoint != "wheelspeed (from BeamNG)" || w.Band != 0.5 || w.Verdict != "good" {
			t.Errorf("the loop against wheelspeed: %+v", w)
		}
		if p := rs[2]; p.Setpoint != "in1.throttle (written by the model)" || p.Verdict != "good" {
			t.Errorf("the loop against the throttle written: %+v", p)
		}
		// The setpoints come after the ports, before the model's own
		// variables (cruise-pedals' signals).
		cols := ring.Layout().Columns
		first := slices.IndexFunc(cols, func(c scope.Column) bool { return strings.HasPrefix(c.Name, recording.SetpointPrefix) })
		if first < 0 || first+3 > len(cols) {
			t.Fatalf("no setpoint columns: %+v", cols)
		}
		if set := cols[first : first+3]; set[0].Name != "setpoint:out1.groundspeed" || set[0].Port != "out1" || set[0].Unit != "m/s" ||
			set[1].Name != "setpoint:out1.groundspeed#2" || set[2].Name != "setpoint:out2.throttle" || cols[first+3].Port != "model" {
			t.Errorf("the scope's setpoint columns, then: %+v", cols[first:])
		}
		var smp scope.Samples
		ring.Since(0, ring.Layout().Generation, &smp)
		if n := len(smp.T); n == 0 || smp.V[(n-1)*smp.Width+first] != 15 {
			t.Errorf("the scope's setpoint now: %v", smp.V[max(0, len(smp.V)-smp.Width):])
		}
	})
}

// A reload whose setpoint names no parameter and no field is refused whole.
func TestControlLoopReloadRefused(t *testing.T) {
	text, _ := os.ReadFile("../examples/cruise-pedals.json")
	cfg, err := config.Parse("cruise.json", text)
	if err != nil {
		t.Fatal(err)
	}
	s := newDirect(t, cfg, nil, nil).s
	bad := strings.Replace(string(text), `"setpoint": "setSpeed"`, `"setpoint": "setSped"`, 1)
	if _, err := reloadConfig(s, "cruise.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), `"setSped" is neither a field of the config nor a parameter of model cruise-pedals (did you mean "setSpeed"?)`) {
		t.Errorf("reload: %v", err)
	}
	if rs := s.Control(); len(rs) != 1 || rs[0].Setpoint != "setSpeed (model parameter)" {
		t.Errorf("after the refused reload: %+v", rs)
	}
}

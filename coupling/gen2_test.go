package coupling

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// nanEvery writes NaN (or Inf) into the throttle every n-th step and 0.4
// otherwise.
type nanEvery struct {
	n, k     int
	port, el int
}

func (m *nanEvery) Step(_ float64, _ [][]float64, in [][]float64) bool {
	m.k++
	in[m.port][m.el] = 0.4
	if m.k%m.n == 0 {
		in[m.port][m.el] = math.NaN()
		if m.k%(2*m.n) == 0 {
			in[m.port][m.el] = math.Inf(1)
		}
	}
	return true
}

// One NaN poisons a Gen 2 BeamNG for good. A model's NaN or Inf never
// reaches it: the message is answered with neutral controls, counted and
// in the faults.
func TestGen2NeverSendsNaN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m *nanEvery
		h := rig{cfg: load(t, "../examples/gen2-cruise.json"), model: func(p *ports.Plan) models.Model {
			port, el, ok := p.Find(beamng.ToBeamNG, "throttle")
			if !ok {
				t.Fatal("no throttle")
			}
			m = &nanEvery{n: 50, port: port, el: el}
			return m
		}, em: emulator.Config{Steps: 20000}}.sim(t)
		h.run(t)
		if h.emSum.NaNApplied != 0 {
			t.Errorf("BeamNG applied %d NaNs: it was poisoned", h.emSum.NaNApplied)
		}
		if got := h.em.Vehicle().Throttle; got != 0.4 {
			t.Errorf("throttle %v at the end, want 0.4: the controls are not poisoned", got)
		}
		if n := h.c.Stats().Get(NonFinite); n != int64(m.k/50) || h.c.Stats().Get(NeutralReplies) != n {
			t.Errorf("%d non-finite messages counted, %d neutral replies, for %d bad steps", n, h.c.Stats().Get(NeutralReplies), m.k/50)
		}
		if f := h.s.Faults(); !containsAll(f, "NaN or Inf") {
			t.Errorf("faults %q", f)
		}
	})
}

// writeGen2 writes a config and CSV pair into a temporary folder.
func writeGen2(t *testing.T, csv, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rig.csv"), []byte(csv), 0o644)
	path := filepath.Join(dir, "rig.json")
	os.WriteFile(path, []byte(cfg), 0o644)
	return path
}

// A Gen 2 message that lacks fields the model reads is not data: it never
// reaches the model, it is answered with neutral controls (a braking reply
// must not become throttle 1 because the speed read 0), counted, and the
// run reports it. A whole message after it drives the model again.
func TestGen2ShortMessageFailsSafe(t *testing.T) {
	log := &logBuffer{}
	d := newDirect(t, load(t, "../examples/gen2-cruise.json"), nil, log)
	from, now := d.from(40000), d.start()
	layout := d.plan.Vehicles[0].Layout
	speed, _ := layout.Find(beamng.FromBeamNG, "groundspeed")
	throttle, _ := layout.Find(beamng.ToBeamNG, "throttle")
	brake, _ := layout.Find(beamng.ToBeamNG, "brake")
	d.msg[speed.Index] = 25 // far above the set speed: the model brakes
	for id := range 5 {
		d.msg[0] = float64(id)
		now = now.Add(5 * time.Millisecond)
		if r, ok := d.send(from, now); !ok || id > 1 && r[brake.Index] == 0 {
			t.Fatalf("message %d: reply %v, want the model braking", id, r)
		}
	}
	short, _ := beamng.Encode(make([]byte, 8), []float64{5}) // the id alone
	r, ok := d.sendRaw(short, from, now.Add(5*time.Millisecond))
	if !ok || r[throttle.Index] != 0 || r[brake.Index] != 0 || r[0] != 6 {
		t.Fatalf("the short message's reply %v, want neutral controls (throttle 0, brake 0) with id 6", r)
	}
	st := d.l.Stats()
	if st.Get(ShortMessages) != 1 || st.Get(NeutralReplies) != 1 {
		t.Errorf("short messages %d, neutral replies %d", st.Get(ShortMessages), st.Get(NeutralReplies))
	}
	d.msg[0] = 6
	if r, ok := d.send(from, now.Add(10*time.Millisecond)); !ok || r[brake.Index] == 0 {
		t.Errorf("after the short message: %v, want the model's controls again", r)
	}
	if f := d.s.Faults(); !containsAll(f, "lacked fields the model reads") {
		t.Errorf("faults %q", f)
	}
	if !log.Has("BeamNG's message lacks fields the model reads") {
		t.Errorf("log:\n%s", log)
	}
}

// steerThenPanic steers 0.25 with throttle 0.6, then panics.
type steerThenPanic struct {
	n                  int
	throttle, steering ref2
}

func (m *steerThenPanic) Step(_ float64, out, in [][]float64) bool {
	if ports.Status(out[0][0]) != ports.Connected {
		return true
	}
	if m.n++; m.n > 1 {
		panic("the user's model failed")
	}
	in[m.throttle.port][m.throttle.elem], in[m.steering.port][m.steering.elem] = 0.6, 0.25
	return true
}

// Gen 2's neutral controls: a faulted model releases the pedals and resets
// multiply, add and freeze rows; steering keeps its last value, never NaN.
func TestGen2NeutralReply(t *testing.T) {
	csv := `Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes
signalTo,Kinematics,vehicleGroundSpeed,,number,,,
signalFrom,Driver,throttle,value,number,,,
signalFrom,Driver,throttle,multiply,number,,,
signalFrom,Driver,throttle,freeze,boolean,,,
signalFrom,Driver,steeringWheelPosition,value,number,,,
connection,,3rd Party Computation Time,0.0049999999999999,number,,,`
	path := writeGen2(t, csv, `{"version": 2,
  "outputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "vehicleGroundSpeed"}]]}],
  "inputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "throttle", "params": "multiply", "initialValue": 2},
    {"propertyName": "throttle", "params": "freeze"}, {"propertyName": "steeringWheelPosition"}]]}],
  "beamng": {"protocol": "csv", "interface": "rig.csv"}}`)
	cfg := load(t, path)
	plan, _ := config.Compile(cfg)
	m := &steerThenPanic{}
	m.throttle.port, m.throttle.elem, _ = plan.Find(beamng.ToBeamNG, "throttle")
	m.steering.port, m.steering.elem, _ = plan.Find(beamng.ToBeamNG, "steering")
	d := newDirect(t, cfg, m, nil)
	from, now := d.from(40000), d.start()
	if r, _ := d.send(from, now); r[1] != 0.6 || r[2] != 2 || r[4] != 0.25 {
		t.Fatalf("the model's reply %v", r)
	}
	d.msg[0] = 1
	r, _ := d.send(from, now.Add(5*time.Millisecond))
	if want := []float64{2, 0, 1, 0, 0.25}; !slices.Equal(r, want) {
		t.Errorf("neutral reply %v, want %v: pedals released, multiply 1, freeze 0, steering as last sent", r, want)
	}
}

// A Gen 2 config's CSV is part of the config: a reload that changes its
// layout is refused whole (BeamNG was started with the old CSV); one that
// leaves the layout alone (a description edited) goes through; re-mapping
// ports onto the same CSV is live.
func TestGen2ReloadLayout(t *testing.T) {
	csv := `Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes
signalTo,Kinematics,vehicleGroundSpeed,,number,,,
signalTo,Electrics,rpm,,number,,,
signalFrom,Driver,throttle,value,number,,,
signalFrom,Driver,brake,value,number,,,
connection,,3rd Party Computation Time,0.0049999999999999,number,,,`
	cfgText := `{"version": 2,
  "outputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "vehicleGroundSpeed"}]]}],
  "inputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
  "beamng": {"protocol": "csv", "interface": "rig.csv", "model": "cruise-pedals"}}`
	path := writeGen2(t, csv, cfgText)
	c := newDirect(t, load(t, path), nil, nil).s
	csvPath := filepath.Join(filepath.Dir(path), "rig.csv")
	os.WriteFile(csvPath, []byte(strings.Replace(csv, "signalTo,Electrics,rpm,,number,,,", "signalTo,Electrics,rpm,,number,engine speed,,", 1)), 0o644)
	if ch, err := reloadConfig(c, path, []byte(cfgText)); err != nil || !ch.None() {
		t.Errorf("a description edit: %v %+v", err, ch)
	}
	os.WriteFile(csvPath, []byte(strings.Replace(csv, "signalTo,Electrics,rpm,,number,,,", "signalTo,Electrics,rpm,,number,,,\nsignalTo,Electrics,gear,,number,,,", 1)), 0o644)
	_, err := reloadConfig(c, path, []byte(cfgText))
	if err == nil || !strings.Contains(err.Error(), "the CSV's message layout") || !strings.Contains(err.Error(), "2 signalTo and 2 signalFrom rows → 3 and 2") {
		t.Errorf("a new row: %v", err)
	}
	os.WriteFile(csvPath, []byte(csv), 0o644)
	remapped := strings.Replace(cfgText, `[[{"propertyName": "vehicleGroundSpeed"}]]`, `[[{"propertyName": "vehicleGroundSpeed"}], [{"propertyName": "rpm"}]]`, 1)
	if ch, err := reloadConfig(c, path, []byte(remapped)); err != nil || len(ch.Live) == 0 {
		t.Errorf("a new port on the same CSV: %v %+v", err, ch)
	}
}

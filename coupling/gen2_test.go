package coupling

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// The Gen 2 example: the cruise controller binds vehicleGroundSpeed,
// throttle and brake by meaning and holds its set speed through a
// CSV-defined coupling, with nothing for BeamNG's side to complain about.
func TestGen2CruiseHoldsSpeed(t *testing.T) {
	h := newHarness(t, "../examples/gen2-cruise.json", nil, emulator.Config{Steps: 60000})
	h.run(t)
	set := h.plan.ModelParams["setSpeed"].(float64)
	checkHeld(t, h, set, func(v emulator.Vehicle) float64 { return v.V }, 0.05*set, "speed")
	if s := h.emSum; s.Stalls != 0 || s.LuaErrors != 0 || s.NaNApplied != 0 || s.Accepted < s.Sent-1 {
		t.Errorf("BeamNG's side: %v, lua errors %d, NaN applied %d", s, s.LuaErrors, s.NaNApplied)
	}
	if f := h.c.Faults(); len(f) != 0 {
		t.Errorf("faults %q", f)
	}
}

// nanEvery writes NaN (or Inf) into the throttle every n-th step and 0.4
// otherwise.
type nanEvery struct {
	n, k     int
	port, el int
}

func (m *nanEvery) Step(_ float64, _ [][]float64, in [][]float64) {
	m.k++
	in[m.port][m.el] = 0.4
	if m.k%m.n == 0 {
		in[m.port][m.el] = math.NaN()
		if m.k%(2*m.n) == 0 {
			in[m.port][m.el] = math.Inf(1)
		}
	}
}

// Spec §3.5: one NaN poisons a Gen 2 BeamNG for good. A model's NaN or Inf
// never reaches it: the last value goes instead, counted and in the faults.
func TestGen2NeverSendsNaN(t *testing.T) {
	var m *nanEvery
	h := newHarness(t, "../examples/gen2-cruise.json", func(p *ports.Plan) models.Model {
		port, el, ok := p.Find(beamng.ToBeamNG, "throttle")
		if !ok {
			t.Fatal("no throttle")
		}
		m = &nanEvery{n: 50, port: port, el: el}
		return m
	}, emulator.Config{Steps: 20000})
	h.run(t)
	if h.emSum.NaNApplied != 0 {
		t.Errorf("BeamNG applied %d NaNs: it was poisoned", h.emSum.NaNApplied)
	}
	if got := h.em.Vehicle().Throttle; got != 0.4 {
		t.Errorf("throttle %v at the end, want 0.4: the controls are not poisoned", got)
	}
	st := h.c.Stats()
	if n := st.NonFinite.Load(); n < int64(m.k/50)-1 {
		t.Errorf("%d non-finite values counted for %d bad steps", n, m.k/50)
	}
	if f := h.c.Faults(); !containsAll(f, "NaN or Inf") {
		t.Errorf("faults %q", f)
	}
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

// A signalTo row in a group BeamNG does not know cuts its message short
// (§3.3): the coupling takes the shorter messages, counts them, and the
// fields past the cut read their invalidValue.
func TestGen2ShortMessages(t *testing.T) {
	csv := `Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes
signalTo,Kinematics,vehicleGroundSpeed,,number,,,
signalTo,Mystery,thing,,number,,,
signalTo,Electrics,rpm,,number,,,
signalFrom,Driver,throttle,value,number,,,
signalFrom,Driver,brake,value,number,,,
connection,,3rd Party Computation Time,0.0049999999999999,number,,,`
	path := writeGen2(t, csv, `{"version": 2,
  "outputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "vehicleGroundSpeed"}], [{"propertyName": "rpm", "invalidValue": -1}]]}],
  "inputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
  "beamng": {"protocol": "csv", "interface": "rig.csv", "model": "cruise-pedals", "modelParams": {"setSpeed": 10}}}`)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg.Warnings.Error(), `BeamNG does not know the group "Mystery"`) {
		t.Errorf("no warning about the unknown group:\n%v", cfg.Warnings.Error())
	}
	var rpm []float64
	h := newHarnessPlan(t, cfg, nil, emulator.Config{Steps: 4000})
	h.c.opt.OnMessage = func(id, reply float64) { rpm = append(rpm, h.c.outs[2][0]) }
	h.run(t)
	st := h.c.Stats()
	if st.ShortMessages.Load() != st.Messages.Load() || st.Messages.Load() < 390 {
		t.Errorf("%d messages, %d short", st.Messages.Load(), st.ShortMessages.Load())
	}
	if len(rpm) == 0 || rpm[len(rpm)-1] != -1 {
		t.Errorf("rpm past the cut reads %v, want its invalidValue -1", rpm[len(rpm)-1:])
	}
	if h.em.Vehicle().V < 5 {
		t.Errorf("speed %v: the coupling did not drive on the short messages", h.em.Vehicle().V)
	}
	if f := h.c.Faults(); !containsAll(f, "shorter than") {
		t.Errorf("faults %q", f)
	}
}

// Gen 2's neutral controls: a dead model releases the pedals and resets
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
  "inputs": [{"updatePeriodMs": 5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "throttle", "params": "multiply", "initialValue": 1},
    {"propertyName": "throttle", "params": "freeze"}, {"propertyName": "steeringWheelPosition"}]]}],
  "beamng": {"protocol": "csv", "interface": "rig.csv"}}`)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := ports.Compile(cfg)
	c, err := New(Options{Plan: plan, Model: models.Hold{}, Local: loopback})
	if err != nil {
		t.Fatal(err)
	}
	c.lastSent[4] = 0.25 // the steering last sent
	copy(c.reply, c.neutral)
	c.keepLast()
	want := []float64{0, 1, 0, 0.25}
	for i, w := range want {
		if c.reply[i+1] != w {
			t.Errorf("neutral reply %v, want [id %v]", c.reply, want)
			break
		}
	}
}

// gen2Example is a coupling of the Gen 2 example, not bound, for Handle.
func gen2Example(tb testing.TB) (*Coupling, *ports.Plan) {
	tb.Helper()
	cfg, err := config.Load("../examples/gen2-cruise.json")
	if err != nil {
		tb.Fatal(err)
	}
	plan, _ := ports.Compile(cfg)
	m, _ := models.New(plan.Model, plan.ModelParams, plan, nil)
	c, err := New(Options{Plan: plan, Model: m, Local: loopback})
	if err != nil {
		tb.Fatal(err)
	}
	return c, plan
}

func TestGen2HandleAllocs(t *testing.T) {
	c, plan := gen2Example(t)
	msg := make([]float64, plan.Vehicles[0].Layout.Len(beamng.FromBeamNG))
	buf := make([]byte, 8*len(msg))
	from := c.remote
	now := time.Now()
	id := 0.0
	allocs := testing.AllocsPerRun(1000, func() {
		msg[0], msg[1] = id, 15
		id++
		d, _ := beamng.Encode(buf, msg)
		now = now.Add(5 * time.Millisecond)
		if _, ok := c.Handle(d, from, now); !ok {
			t.Fatal("message dropped")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Gen 2 message, want 0", allocs)
	}
}

func BenchmarkHandleGen2(b *testing.B) {
	c, plan := gen2Example(b)
	msg := make([]float64, plan.Vehicles[0].Layout.Len(beamng.FromBeamNG))
	buf := make([]byte, 8*len(msg))
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		msg[0], msg[1] = float64(i), 15
		d, _ := beamng.Encode(buf, msg)
		now = now.Add(5 * time.Millisecond)
		c.Handle(d, c.remote, now)
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
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := ports.Compile(cfg)
	m, _ := models.New(plan.Model, plan.ModelParams, plan, nil)
	c, err := New(Options{Plan: plan, Model: m, Local: loopback})
	if err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(filepath.Dir(path), "rig.csv")
	os.WriteFile(csvPath, []byte(strings.Replace(csv, "signalTo,Electrics,rpm,,number,,,", "signalTo,Electrics,rpm,,number,engine speed,,", 1)), 0o644)
	if ch, err := c.ReloadConfig(path, []byte(cfgText)); err != nil || !ch.None() {
		t.Errorf("a description edit: %v %+v", err, ch)
	}
	os.WriteFile(csvPath, []byte(strings.Replace(csv, "signalTo,Electrics,rpm,,number,,,", "signalTo,Electrics,rpm,,number,,,\nsignalTo,Electrics,gear,,number,,,", 1)), 0o644)
	_, err = c.ReloadConfig(path, []byte(cfgText))
	if err == nil || !strings.Contains(err.Error(), "the CSV's message layout") || !strings.Contains(err.Error(), "2 signalTo and 2 signalFrom rows → 3 and 2") {
		t.Errorf("a new row: %v", err)
	}
	os.WriteFile(csvPath, []byte(csv), 0o644)
	remapped := strings.Replace(cfgText, `[[{"propertyName": "vehicleGroundSpeed"}]]`, `[[{"propertyName": "vehicleGroundSpeed"}], [{"propertyName": "rpm"}]]`, 1)
	if ch, err := c.ReloadConfig(path, []byte(remapped)); err != nil || len(ch.Live) == 0 {
		t.Errorf("a new port on the same CSV: %v %+v", err, ch)
	}
}

package coupling

import (
	"math"
	"strings"
	"testing"
	"time"

	"beamconnect/config"
)

// overdrive writes controls beyond what BeamNG accepts: steering 17.5, a
// throttle of 1.5 and a brake of −0.2, or what vals say.
type overdrive struct {
	refs []ref2
	vals []float64
}

func (m *overdrive) Step(_ float64, _, in [][]float64) bool {
	for i, r := range m.refs {
		in[r.port][r.elem] = m.vals[i]
	}
	return true
}

// Controls beyond BeamNG's documented range (pedals 0 to 1, steering −1
// to 1) are clamped before they go, counted, and warned about once per
// field with the value; the recording shows what BeamNG got. Wheel torques
// have no such range and pass as they are. Whatever the model (a Go model
// here: the clamp is the coupling's).
func TestControlsClamped(t *testing.T) {
	cfg := load(t, "../examples/heading-hold.json")
	plan, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &overdrive{vals: []float64{17.5, 1.5, -0.2}}
	for _, name := range []string{"steering", "throttle", "brake"} {
		p, e, _ := plan.Find(1, name)
		m.refs = append(m.refs, ref2{p, e})
	}
	log := &logBuffer{}
	d := newDirect(t, cfg, m, log)
	from, now := d.from(50000), d.start()
	for k := range 20 {
		d.msg[0] = float64(k)
		now = now.Add(5 * time.Millisecond)
		reply, ok := d.send(from, now)
		if !ok {
			t.Fatal("no reply")
		}
		// Gen 1 slots: throttle 1, brake 2, steering 3.
		if reply[1] != 1 || reply[2] != 0 || reply[3] != 1 {
			t.Fatalf("message %d: throttle %v brake %v steering %v, want 1, 0, 1", k, reply[1], reply[2], reply[3])
		}
	}
	if n := d.l.Stats().Get(Clamped); n != 60 {
		t.Errorf("%d clamped values, want 60 (3 fields × 20 messages)", n)
	}
	if n := strings.Count(log.String(), "beyond what BeamNG accepts"); n != 3 {
		t.Errorf("%d warnings, want one per field:\n%s", n, log)
	}
	for _, want := range []string{"field=steering value=17.5", "field=throttle value=1.5", "field=brake value=-0.2"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no warning with %q:\n%s", want, log)
		}
	}
	// Within range: nothing more clamped, nothing more said.
	m.vals = []float64{-0.7, 0.4, 0}
	d.msg[0]++
	if reply, _ := d.send(from, now.Add(5*time.Millisecond)); reply[3] != -0.7 || reply[1] != 0.4 || d.l.Stats().Get(Clamped) != 60 {
		t.Errorf("in range: steering %v throttle %v, clamped %d", reply[3], reply[1], d.l.Stats().Get(Clamped))
	}
}

// A torque has no documented range: a large one goes as written.
func TestTorqueNotClamped(t *testing.T) {
	cfg := load(t, "../examples/cruise-torque.json")
	plan, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, e, ok := plan.Find(1, "wheelRL_propulsionTorque")
	if !ok {
		t.Fatal("the rig maps no RL propulsion torque")
	}
	m := &overdrive{refs: []ref2{{p, e}}, vals: []float64{5000}}
	d := newDirect(t, cfg, m, nil)
	reply, _ := d.send(d.from(50000), d.start().Add(5*time.Millisecond))
	if reply[11] != 5000 || d.l.Stats().Get(Clamped) != 0 || math.IsNaN(reply[11]) {
		t.Errorf("RL propulsion torque %v, clamped %d", reply[11], d.l.Stats().Get(Clamped))
	}
}

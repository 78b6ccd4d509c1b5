package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/memnet"
)

// cruiseSystem is BeamNG and the test's cruise FMU (its fault, if any, as
// o says) wired by name, as a system in a folder of the test's: its .ssd.
func cruiseSystem(t *testing.T, o testfmu.Options) string {
	t.Helper()
	dir := t.TempDir()
	testfmuPath := testfmu.ForTest(t, "cruise.fmu", o)
	data, err := os.ReadFile(testfmuPath)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cruise.fmu"), data, 0o644)
	cfg, err := os.ReadFile("testdata/vehicle.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "vehicle.json"), cfg, 0o644)
	ssd := filepath.Join(dir, "cruise.ssd")
	os.WriteFile(ssd, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon" version="2.0" name="cruise">
  <ssd:System name="cruise">
    <ssd:Elements>
      <ssd:Component name="vehicle" type="application/x-beamconnect-config" source="vehicle.json">
        <ssd:Connectors>
          <ssd:Connector name="groundspeed" kind="output"/>
          <ssd:Connector name="throttle" kind="input"/>
          <ssd:Connector name="brake" kind="input"/>
        </ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="cruise" source="cruise.fmu">
        <ssd:Connectors>
          <ssd:Connector name="groundspeed" kind="input"/>
          <ssd:Connector name="throttle" kind="output"/>
          <ssd:Connector name="brake" kind="output"/>
        </ssd:Connectors>
      </ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="vehicle" startConnector="groundspeed" endElement="cruise" endConnector="groundspeed"/>
      <ssd:Connection startElement="cruise" startConnector="throttle" endElement="vehicle" endConnector="throttle"/>
      <ssd:Connection startElement="cruise" startConnector="brake" endElement="vehicle" endConnector="brake"/>
    </ssd:Connections>
  </ssd:System>
</ssd:SystemStructureDescription>
`), 0o644)
	return ssd
}

// runSystem couples the system at path (its FMUs in child processes)
// with an emulated BeamNG over loopback UDP, free-running.
func runSystem(t *testing.T, path string, em emulator.Config) *run {
	t.Helper()
	sys := load(t, path)
	m, err := New(sys, sys.Plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if em.FPS == 0 && em.StepCost == 0 {
		em.FreeRunning = true
	}
	r := couple(t, sys, m, em, nil, nil)
	r.run(t)
	return r
}

// A component's fault is the system's: BeamNG gets neutral controls
// while it lasts, the fault is said with the component's name, counted,
// and ends when the FMU, started again, answers again (until it fails
// again, 100 steps on).
func TestComponentFaultIsNeutralAndSaid(t *testing.T) {
	path := cruiseSystem(t, testfmu.Options{Fault: "error", After: 100})
	// In BeamNG's own pace: the FMU is started again after a second of the
	// machine's time.
	r := runSystem(t, path, emulator.Config{Steps: 6000, FPS: 60})
	v := r.s.Values()
	if v[coupling.ModelFaults] < 1 || v[coupling.NeutralReplies] < 1 || v[coupling.ModelRestarts] < 1 {
		t.Errorf("faults %d, neutral replies %d, restarts %d: want the fault, neutral controls while it lasted, a restart\n%s",
			v[coupling.ModelFaults], v[coupling.NeutralReplies], v[coupling.ModelRestarts], r.log)
	}
	if !r.log.Has(`model fault: BeamNG gets neutral controls`) || !r.log.Has(`fault="component cruise: the FMU failed`) || !r.log.Has("model recovered") {
		t.Errorf("the log does not say the component's fault and its end:\n%s", r.log)
	}
}

// BeamNG starting its coupling again (ids from 0) starts every FMU of the
// system over, as it starts a single FMU over.
func TestBeamNGRestartResetsEveryComponent(t *testing.T) {
	r := runSystem(t, example(t), emulator.Config{Steps: 20000, Faults: emulator.Faults{Restart: true, RestartAt: 5 * time.Second}})
	v := r.s.Values()
	if v[coupling.ModelResets] != 1 || v[coupling.ModelNotReset] != 0 || v[coupling.ModelFaults] != 0 {
		t.Errorf("resets %d, not reset %d, faults %d\n%s", v[coupling.ModelResets], v[coupling.ModelNotReset], v[coupling.ModelFaults], r.log)
	}
	for _, rc := range r.model.steps {
		if n := rc.fmu.Resets(); n != 1 {
			t.Errorf("component %s was reset %d times: want 1", rc.comp.Name, n)
		}
	}
}

// Lockstep holds for the system: a component whose steps take 0 to 9 ms
// (the jittery cruise FMU) slows BeamNG and changes nothing it gets: every
// reply carries controls computed for its step, BeamNG never stalls.
func TestSlowComponentSlowsBeamNGOnly(t *testing.T) {
	path := cruiseSystem(t, testfmu.Options{Fault: "jitter", After: 1, SpeedUsedOutput: true})
	r := runSystem(t, path, emulator.Config{Steps: 4000})
	v := r.s.Values()
	if s := r.sums[0]; s.Stalls != 0 || v[coupling.NeutralReplies] != 0 || v[coupling.ModelFaults] != 0 || v[coupling.Messages] < 390 {
		t.Errorf("BeamNG %v; neutral replies %d, faults %d, messages %d\n%s", s, v[coupling.NeutralReplies], v[coupling.ModelFaults], v[coupling.Messages], r.log)
	}
	if strings.Contains(r.log.String(), "ERROR") {
		t.Errorf("errors logged:\n%s", r.log)
	}
}

// A component's fault changes nothing a recording says of BeamNG: its
// controls (vehicle.throttle, vehicle.brake) are what the reply carried,
// neutral while the fault lasts, as BeamNG applied them, not the values
// the components' connections held. On the fake clock (synctest), over
// the emulator's in-memory pipe, the FMU in process: its outputs NaN from
// its 200th step on, a fault that lasts until the run ends.
func TestRecordedControlsAreTheReplys(t *testing.T) {
	path := cruiseSystem(t, testfmu.Options{Fault: "nan", After: 200})
	sys := load(t, path)
	// Made outside the bubble: the FMU's thread spins on the real clock.
	m, err := New(sys, sys.Plan, Options{InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type applied struct{ throttle, brake float64 }
	got := map[float64]applied{} // by reply id, as BeamNG applied it
	var r *run
	var rows []map[string]float64
	synctest.Test(t, func(t *testing.T) {
		rec := record(t, sys.Plan)
		r = couple(t, sys, m, emulator.Config{Steps: 4000, Trace: func(s *emulator.StepRecord) {
			if s.Accepted {
				v := r.ems[0].Vehicle()
				got[s.GotID] = applied{v.Throttle, v.Brake}
			}
		}}, memnet.New(), func(o *coupling.Options) { o.Record = rec.rec })
		r.run(t)
		rows = rec.rows(t)
	})
	v := r.s.Values()
	if v[coupling.ModelFaults] < 1 || v[coupling.NeutralReplies] < 100 {
		t.Fatalf("faults %d, neutral replies %d: want the component's fault, neutral controls while it lasted\n%s",
			v[coupling.ModelFaults], v[coupling.NeutralReplies], r.log)
	}
	compared, neutral := 0, 0
	for _, row := range rows {
		a, ok := got[row["reply_id"]]
		if !ok {
			continue // not applied (a window BeamNG moved past)
		}
		compared++
		if a.throttle == 0 && a.brake == 0 {
			neutral++
		}
		for _, c := range []struct {
			name string
			want float64
		}{{"vehicle.throttle", a.throttle}, {"vehicle.brake", a.brake}, {"in1.throttle", a.throttle}, {"in1.brake", a.brake}} {
			if row[c.name] != c.want {
				t.Fatalf("reply %v: %s recorded %v, BeamNG applied %v", row["reply_id"], c.name, row[c.name], c.want)
			}
		}
	}
	if compared < 300 || neutral < 100 {
		t.Errorf("%d rows compared with what BeamNG applied, %d of them neutral: want the run's rows, the fault's among them", compared, neutral)
	}
}

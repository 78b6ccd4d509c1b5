package system

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/internal/memnet"
	"beamconnect/models"
	"beamconnect/ports"
)

// prepared is the system's model, saying when a reload's Rebind has
// prepared (or refused) it.
type prepared struct {
	*Model
	done chan<- struct{}
}

func (p prepared) Rebind(plan *ports.Plan, running, params models.Params) (func(), error) {
	commit, err := p.Model.Rebind(plan, running, params)
	p.done <- struct{}{}
	return commit, err
}

// A live edit of the parameter set retunes the controller within 100 ms
// of BeamNG's simulated time, and an edit the FMU refuses (a gain of 50;
// it takes 0 to 10) changes nothing: the run goes on with the gain before
// it, the refusal said where it is written. On the fake clock (synctest),
// over the emulator's in-memory pipe, the FMUs in process: what a reload
// costs in the machine's time (checking the system again, trying the new
// values on a scratch instance of the FMU in a process of its own, which
// a goroutine outside the bubble starts) passes while BeamNG's time stands
// still, as the reload is prepared off the message path; then the next
// message swaps it in. So the bound holds on a loaded machine as on an
// idle one. The edit's way to the run is the one the file watcher takes
// (Reload), after its 20 ms debounce of the machine's time.
func TestLiveEditRetunesWithin100ms(t *testing.T) {
	path := example(t)
	sys := load(t, path)
	ssv := filepath.Join(filepath.Dir(path), "resources", "tuning.ssv")
	original, err := os.ReadFile(ssv)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(kp string) {
		text := strings.Replace(string(original), `name="controller.kp"><ssv:Real value="0.08"/>`, `name="controller.kp"><ssv:Real value="`+kp+`"/>`, 1)
		if text == string(original) {
			panic("the parameter set has no controller.kp of 0.08 to edit")
		}
		os.WriteFile(ssv, []byte(text), 0o644)
	}
	// Made outside the bubble: the FMUs' threads, which spin on the real
	// clock between steps, and the goroutine that reloads (it starts the
	// scratch instance's process).
	m, err := New(sys, sys.Plan, Options{InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rebound := make(chan struct{}, 1)
	model := prepared{m, rebound}
	type reload struct {
		s    *coupling.Session
		done *atomic.Bool
		err  *error
	}
	reloads := make(chan reload)
	defer close(reloads)
	go func() {
		for r := range reloads {
			_, ds, err := Reload(path, sys, r.s.Reload, func() { refusedReload(r.s) })
			if len(ds) > 0 {
				err = ds
			}
			*r.err = err
			r.done.Store(true)
			select {
			case rebound <- struct{}{}: // refused before its Rebind: no wait is left
			default:
			}
		}
	}()
	kpAt := varIndex(m.Variables(), "kp")
	type sample struct {
		id int64
		kp float64
	}
	var mu sync.Mutex
	var samples []sample
	values := make([]float64, len(m.Variables()))
	var editedAt, refusedAt int64
	var applied, refused error
	synctest.Test(t, func(t *testing.T) {
		r := couple(t, sys, model.Model, emulator.Config{Steps: 8000}, memnet.New(), func(o *coupling.Options) {
			o.Model = model
			o.OnMessage = func(v int, id, _ float64) {
				m.Sample(values) // on the loop, between two steps
				mu.Lock()
				samples = append(samples, sample{int64(id), values[kpAt]})
				mu.Unlock()
			}
		})
		messages := func() int64 { return r.s.Link(0).Stats().Get(coupling.Messages) }
		// reloadNow edits the parameter set and reloads the run: BeamNG's
		// time stands still until the reload is prepared, then goes on.
		reloadNow := func(kp string, err *error) int64 {
			edit(kp)
			at := messages()
			var done atomic.Bool
			reloads <- reload{r.s, &done, err}
			<-rebound // not a wait of the bubble's: its clock stands still
			for !done.Load() {
				time.Sleep(time.Millisecond) // the swap, at the next message
			}
			return at
		}
		r.run(t, func(ctx context.Context) {
			for messages() < 200 && ctx.Err() == nil { // 1 s of BeamNG's time
				time.Sleep(5 * time.Millisecond)
			}
			editedAt = reloadNow("0.12", &applied)
			for messages() < 400 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			refusedAt = reloadNow("50", &refused)
		})
		if v := r.s.Values(); v[coupling.Reloads] != 1 || v[coupling.ReloadErrors] != 1 || v[coupling.ModelFaults] != 0 || v[coupling.NeutralReplies] != 0 {
			t.Errorf("reloads %d, refused %d, faults %d, neutral replies %d\n%s", v[coupling.Reloads], v[coupling.ReloadErrors], v[coupling.ModelFaults], v[coupling.NeutralReplies], r.log)
		}
	})
	if applied != nil || refused == nil || !strings.Contains(refused.Error(), `tuning.ssv:6:5: controller.kp: the FMU's "kp" takes 0 to 10 (its min and max): 50 is above`) {
		t.Fatalf("the edit to 0.12: %v; the edit to 50: %v", applied, refused)
	}
	mu.Lock()
	defer mu.Unlock()
	first := int64(-1)
	for _, s := range samples {
		switch {
		case s.kp == 0.12 && first < 0:
			first = s.id
		case s.kp == 50:
			t.Fatalf("message %d: the controller runs with the refused gain", s.id)
		case first >= 0 && s.kp != 0.12:
			t.Fatalf("message %d: the gain went back to %v after the edit", s.id, s.kp)
		}
	}
	period := sys.Plan.Period
	if first < 0 || float64(first-editedAt)*period > 0.100 {
		t.Fatalf("the edit at message %d (%.3f s): the controller's kp became 0.12 at message %d: want within 100 ms", editedAt, float64(editedAt)*period, first)
	}
	t.Logf("edited at %.3f s of BeamNG's time, the FMU's kp 0.12 from %.3f s; refused at %.3f s, unchanged for the %d messages after",
		float64(editedAt)*period, float64(first)*period, float64(refusedAt)*period, samples[len(samples)-1].id-refusedAt)
}

// refusedReload counts a reload refused before the session saw it, as
// run's watcher counts it.
func refusedReload(s *coupling.Session) {
	s.Stats().Set(coupling.ReloadErrors, s.Stats().Get(coupling.ReloadErrors)+1)
}

// An edit of what a run cannot change is refused where it is written in
// the reloaded .ssd, the element's line and column (where something was
// removed, the element that held it), saying what changed; a connector
// without a unit says so ("no unit"), not a blank.
func TestStructuralEditRefusedWhereItIs(t *testing.T) {
	path := example(t)
	original := string(readFile(t, path))
	running := load(t, path)
	for _, tt := range []struct {
		name, from, to, want string
	}{
		{"a connection removed",
			`      <ssd:Connection startElement="actuator" startConnector="brake" endElement="vehicle" endConnector="brake"/>` + "\n", "",
			`SystemStructure.ssd:40:5: cannot change while running (restart beamconnect for it): the connections (vehicle.groundspeed → controller.speed m/s→km/h; ` +
				`controller.demand → actuator.command; actuator.throttle → vehicle.throttle; actuator.brake → vehicle.brake → vehicle.groundspeed → controller.speed m/s→km/h; ` +
				`controller.demand → actuator.command; actuator.throttle → vehicle.throttle)`},
		{"a connection changed",
			`startElement="actuator" startConnector="throttle" endElement="vehicle"`, `startElement="actuator" startConnector="position" endElement="vehicle"`,
			`SystemStructure.ssd:43:7: Connection[actuator.position → vehicle.throttle]: cannot change while running (restart beamconnect for it): the connections (`},
		{"a connector removed",
			`          <ssd:Connector name="ki" kind="parameter"><ssc:Float64/></ssd:Connector>` + "\n", "",
			`SystemStructure.ssd:18:7: Component[controller]: cannot change while running (restart beamconnect for it): the connectors of controller ` +
				`(speed input km/h, demand output no unit, setSpeed parameter km/h, kp parameter no unit, ki parameter no unit → ` +
				`speed input km/h, demand output no unit, setSpeed parameter km/h, kp parameter no unit)`},
		{"two connectors swapped",
			"          <ssd:Connector name=\"throttle\" kind=\"output\"><ssc:Real/></ssd:Connector>\n          <ssd:Connector name=\"brake\" kind=\"output\"><ssc:Real/></ssd:Connector>",
			"          <ssd:Connector name=\"brake\" kind=\"output\"><ssc:Real/></ssd:Connector>\n          <ssd:Connector name=\"throttle\" kind=\"output\"><ssc:Real/></ssd:Connector>",
			`SystemStructure.ssd:33:11: Component[actuator].Connector[brake]: cannot change while running (restart beamconnect for it): the connectors of actuator (`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			edited := strings.Replace(original, tt.from, tt.to, 1)
			if edited == original {
				t.Fatal("the edit changes nothing")
			}
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, []byte(original), 0o644)
			ch, ds, err := Reload(path, running, func(*ports.Plan) (ports.Changes, error) {
				t.Error("a structural edit went on to the session's reload")
				return ports.Changes{}, nil
			}, nil)
			if err != nil || len(ds) != 1 || !strings.Contains(ds.Error(), tt.want) || ch.Params != "" {
				t.Errorf("err %v, changes %+v; got\n%s\nwant\n%s", err, ch, ds, tt.want)
			}
		})
	}
}

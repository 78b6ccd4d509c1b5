package coupling

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/models"
	"beamconnect/ports"
)

// The model's time is the simulation's: a message's id times the period,
// one step per simulation step whichever vehicle's message comes first in
// it, and a new start when BeamNG starts a coupling again.
func TestModelClock(t *testing.T) {
	type msg struct {
		v       int
		id      float64
		restart bool
		t       float64 // the model's time, in periods
		reset   bool
	}
	for _, tt := range []struct {
		name  string
		reads []bool
		msgs  []msg
	}{
		{"one vehicle, from its first id", []bool{true}, []msg{
			{0, 400, false, 400, false}, {0, 401, false, 401, false}, {0, 402, false, 402, false}}},
		{"a lost message: the time BeamNG simulated meanwhile", []bool{true}, []msg{
			{0, 0, false, 0, false}, {0, 1, false, 1, false}, {0, 4, false, 4, false}, {0, 5, false, 5, false}}},
		{"a restart: the model starts over at the new coupling's time", []bool{true}, []msg{
			{0, 0, false, 0, false}, {0, 300, false, 300, false}, {0, 0, true, 0, true}, {0, 1, false, 1, false}}},
		{"a new session from a new port, ids not from 0", []bool{true}, []msg{
			{0, 10, false, 10, false}, {0, 11, false, 11, false}, {0, 7, true, 7, true}, {0, 8, false, 8, false}}},
		{"two vehicles: once per simulation step", []bool{true, true}, []msg{
			{0, 100, false, 100, false}, {1, 3, false, 100, false},
			{0, 101, false, 101, false}, {1, 4, false, 101, false},
			{1, 5, false, 102, false}, {0, 102, false, 102, false}}},
		{"a vehicle silent: the other goes on, the silent one joins again", []bool{true, true}, []msg{
			{0, 10, false, 10, false}, {1, 50, false, 10, false},
			{0, 11, false, 11, false}, {0, 12, false, 12, false}, {0, 13, false, 13, false},
			{1, 51, false, 13, false}, {1, 52, false, 14, false}, {0, 14, false, 14, false}}},
		{"every vehicle's coupling started again at once: one start over", []bool{true, true}, []msg{
			{0, 500, false, 500, false}, {1, 700, false, 500, false},
			{0, 0, true, 0, true}, {1, 701, false, 0, false}, {0, 1, false, 1, false}, {1, 0, true, 1, false},
			{0, 2, false, 2, false}, {1, 1, false, 2, false}}},
		{"a model that reads no vehicle (time alone) starts over with its vehicle", []bool{false}, []msg{
			{0, 0, false, 0, false}, {0, 300, false, 300, false}, {0, 0, true, 0, true}, {0, 1, false, 1, false}}},
		{"a model that reads no vehicle: every vehicle's coupling started again, one start over", []bool{false, false}, []msg{
			{0, 500, false, 500, false}, {1, 700, false, 500, false},
			{0, 0, true, 0, true}, {1, 0, true, 0, false}, {0, 1, false, 1, false}, {1, 1, false, 1, false}}},
		{"a vehicle the model does not read starts again: no start over", []bool{true, false}, []msg{
			{0, 20, false, 20, false}, {1, 40, false, 20, false},
			{1, 0, true, 20, false}, {0, 21, false, 21, false}, {1, 1, false, 21, false}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const period = 0.005
			c := newModelClock(len(tt.reads), period)
			for i, m := range tt.msgs {
				got, reset := c.place(m.v, m.id, m.restart, tt.reads)
				if math.Abs(got-m.t*period) > 1e-12 || reset != m.reset {
					t.Errorf("message %d (vehicle %d, id %v): time %v reset %v, want %v and %v", i, m.v, m.id, got/period, reset, m.t, m.reset)
				}
			}
		})
	}
}

// timeLog records the times a model is stepped at, and its resets.
type timeLog struct {
	mu     sync.Mutex
	times  []float64
	resets []int // how many steps came before each reset
}

func (m *timeLog) Step(t float64, _, _ [][]float64) bool {
	m.mu.Lock()
	m.times = append(m.times, t)
	m.mu.Unlock()
	return true
}

func (m *timeLog) Reset() error {
	m.mu.Lock()
	m.resets = append(m.resets, len(m.times))
	m.mu.Unlock()
	return nil
}

// A model's time is BeamNG's simulated time in every time sync mode, not
// the wall clock: with BeamNG paused for 1.5 s the model's time pauses too,
// and every step is one period on.
func TestModelTimeIsSimulationTime(t *testing.T) {
	for _, mode := range []string{"none", "BeamNG master", "beamconnect master"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := load(t, "../examples/cruise-pedals.json")
				switch mode {
				case "BeamNG master":
					cfg.Outputs[0].TimeSync = true
				case "beamconnect master":
					cfg.Inputs[0].TimeSync = true
				}
				m := &timeLog{}
				h := rig{cfg: cfg, model: func(*ports.Plan) models.Model { return m },
					faults: map[int]emulator.Faults{0: {PauseAt: time.Second, PauseFor: 1500 * time.Millisecond}},
					em:     emulator.Config{Steps: 8000}}.sim(t)
				h.run(t)
				if len(m.times) < 700 {
					t.Fatalf("%d steps", len(m.times))
				}
				for i, tm := range m.times {
					if want := float64(i) * h.plan.Period; math.Abs(tm-want) > 1e-9 {
						t.Fatalf("step %d at %v s, want %v: the model's time is not BeamNG's", i, tm, want)
					}
				}
			})
		})
	}
}

// With two vehicles the model steps once per simulation step: each
// vehicle's message in a step gets that step's time, and the time never
// runs twice as fast.
func TestModelTimeSeveralVehicles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &timeLog{}
		h := rig{cfg: load(t, "../examples/follow.json"), model: func(*ports.Plan) models.Model { return m },
			starts: []int64{0, 37}, em: emulator.Config{Steps: 4000}}.sim(t)
		h.run(t)
		distinct := slices.Compact(slices.Clone(m.times))
		perVehicle := h.s.Link(0).Stats().Get(Messages)
		// (A step whose messages were all answered neutral, which a slow
		// run such as the race detector's can cause, has no model step.)
		if n := int64(len(distinct)); n < perVehicle*95/100 || n > perVehicle+2 {
			t.Errorf("%d distinct model times for %d messages a vehicle: want one per simulation step", n, perVehicle)
		}
		if last := m.times[len(m.times)-1]; math.Abs(last-h.emSum.SimS) > 3*h.plan.Period {
			t.Errorf("the model's time at the end %v s, BeamNG simulated %v s", last, h.emSum.SimS)
		}
		for i := 1; i < len(m.times); i++ {
			if d := m.times[i] - m.times[i-1]; d < 0 || d > h.plan.Period*1.5 {
				t.Fatalf("the model's time went from %v to %v", m.times[i-1], m.times[i])
			}
		}
	})
}

// BeamNG starting its coupling again (the controller reloaded: ids from 0,
// from a new port) starts the model over: reset once, its time from the new
// coupling's first message. So does a model of time alone, which reads no
// vehicle's data (an FMU with outputs only): before, it went on from where
// it was, its old trajectory sent to the restarted car. A model that cannot
// start over (no Reset, or a Reset that fails) is not counted as reset: it
// is counted and said as one that kept its state, and the run is not
// healthy; one the config tells to keep its state is neither reset nor a
// fault.
func TestModelResetOnRestart(t *testing.T) {
	for _, tt := range []struct {
		name  string
		model func(m *timeLog) models.Model
		reset bool   // the model started over
		said  string // the log says
	}{
		{"a model that reads the vehicle", func(m *timeLog) models.Model { return m }, true, "BeamNG started its coupling again: the model starts over"},
		{"a model of time alone", func(m *timeLog) models.Model { return timeAlone{m} }, true, "BeamNG started its coupling again: the model starts over"},
		{"a model that cannot be reset", func(m *timeLog) models.Model { return noReset{m} }, false, "the model cannot start over: it keeps its state"},
		{"a model whose reset fails", func(m *timeLog) models.Model { return failingReset{m} }, false, "the model could not start over: it keeps its state"},
		{"a model that keeps its state on purpose", func(m *timeLog) models.Model { return keepsState{m} }, false, "the model keeps its state, as the config says"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &timeLog{}
				h := rig{cfg: load(t, "../examples/cruise-pedals.json"), model: func(*ports.Plan) models.Model { return tt.model(m) },
					faults: map[int]emulator.Faults{0: {Restart: true, RestartAt: time.Second}},
					em:     emulator.Config{Steps: 6000}}.sim(t)
				h.run(t)
				v := h.s.Values()
				if !h.log.Has(tt.said) {
					t.Errorf("log does not say %q:\n%s", tt.said, h.log)
				}
				if _, kept := tt.model(m).(keepsState); kept {
					if len(m.resets) != 0 || v[ModelResets] != 0 || v[ModelNotReset] != 0 || len(v.Problems("next")) != 0 {
						t.Fatalf("resets %v, counted %d reset and %d not reset, problems %v: want none", m.resets, v[ModelResets], v[ModelNotReset], v.Problems("next"))
					}
					return
				}
				if !tt.reset {
					if len(m.resets) != 0 || v[ModelResets] != 0 || v[ModelNotReset] != 1 {
						t.Fatalf("resets %v, counted %d reset and %d not reset: want 0 and 1", m.resets, v[ModelResets], v[ModelNotReset])
					}
					if len(v.Problems("next")) == 0 {
						t.Error("a run whose model kept its state across BeamNG's restart is called healthy")
					}
					return
				}
				if len(m.resets) != 1 || v[ModelResets] != 1 || v[ModelNotReset] != 0 {
					t.Fatalf("resets %v, counted %d reset and %d not reset", m.resets, v[ModelResets], v[ModelNotReset])
				}
				at := m.resets[0]
				if before, after := m.times[at-1], m.times[at]; before < 0.9 || after != 0 {
					t.Errorf("the model's time went from %v to %v at the reset, want back to 0", before, after)
				}
			})
		})
	}
}

// noReset is a model that cannot start over: it has no Reset.
type noReset struct{ m *timeLog }

func (n noReset) Step(t float64, out, in [][]float64) bool { return n.m.Step(t, out, in) }

// failingReset is a model whose Reset says it cannot start over.
type failingReset struct{ m *timeLog }

func (f failingReset) Step(t float64, out, in [][]float64) bool { return f.m.Step(t, out, in) }
func (failingReset) Reset() error                               { return errors.New("the program does not speak reset") }

// keepsState is a model the config tells to keep its state.
type keepsState struct{ m *timeLog }

func (k keepsState) Step(t float64, out, in [][]float64) bool { return k.m.Step(t, out, in) }
func (keepsState) Reset() error {
	return fmt.Errorf("modelParams.reset is \"none\": %w", models.ErrKeepsState)
}

// timeAlone is a model that reads no vehicle's data: its steps depend on
// time alone.
type timeAlone struct{ *timeLog }

func (timeAlone) Reads(int) bool { return false }

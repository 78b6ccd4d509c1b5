package coupling

import (
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/internal/scope"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/recording"
	"beamconnect/recording/mdf/mdftest"
)

// namedModel is a model with variables of its own (models.Sampler): it
// drives in1.throttle from "pedal" (the field then named in1.pedal), and
// keeps "sq" (the step's time squared) and "t" (its time). After renameAt
// steps it lists a new variable, "extra", as a program naming its values
// late would.
type namedModel struct {
	throttle models.Ref
	vars     []models.Variable
	t        float64
	steps    int
	renameAt int
	renamed  bool
}

func newNamedModel(p *ports.Plan, renameAt int) *namedModel {
	m := &namedModel{renameAt: renameAt}
	for _, f := range p.Inputs[1].Fields {
		if f.Name == "throttle" {
			m.throttle = models.Ref{Port: 1, Elem: f.Offset}
		}
	}
	m.vars = []models.Variable{
		{Name: "pedal", Unit: "1", Description: "the pedal it asks for", Kind: "output", Drives: true, At: m.throttle},
		{Name: "sq", Unit: "s2", Description: "its time squared", Kind: "local"},
		{Name: "t", Unit: "s", Description: "its time", Kind: "local"},
	}
	return m
}

func (m *namedModel) Step(t float64, out, in [][]float64) bool {
	m.t = t
	m.steps++
	m.throttle.Set(in, 0.25)
	if m.renameAt > 0 && m.steps == m.renameAt && !m.renamed {
		m.renamed = true
		m.vars = append(slices.Clip(m.vars), models.Variable{Name: "extra", Kind: "local"}) // a new list
	}
	return true
}

func (m *namedModel) Variables() []models.Variable { return m.vars }

func (m *namedModel) Sample(v []float64) {
	v[0], v[1], v[2] = 0.25, m.t*m.t, m.t
	if len(v) > 3 {
		v[3] = 7
	}
}

// readCSV reads a recording: its header rows' columns, and its rows.
func readCSV(t *testing.T, path string) (headers [][]string, rows [][]float64) {
	t.Helper()
	src, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = src(func(h *recording.Header) error {
		cols := slices.Clone(h.Columns)
		for i := range cols {
			if i < len(h.Units) && h.Units[i] != "" {
				cols[i] += " [" + h.Units[i] + "]"
			}
		}
		headers = append(headers, cols)
		return nil
	}, func(h *recording.Header, r *recording.Row) error {
		rows = append(rows, slices.Clone(r.Values))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return headers, rows
}

// A recording's time is BeamNG's simulation time: message id × period,
// whatever the wall clock did; the local time is a column of its own; the
// model's variables are recorded under their names and units, the field a
// variable drives named after it. BeamNG starting its coupling again (ids
// from 0) does not run the time axis back.
func TestRecordingOnSimulationTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.csv")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var faults emulator.Faults
		emulator.ParseFault("restart@3s", &faults)
		emulator.ParseFault("pause=1s@1s", &faults)
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 10000, Faults: faults},
			model: func(p *ports.Plan) models.Model { return newNamedModel(p, 0) },
			opts:  func(_ *harness, o *Options) { o.Record = NewRecorder(f, o.Plan, nil) }}.sim(t)
		h.run(t)
		headers, rows := readCSV(t, path)
		if len(headers) != 1 {
			t.Fatalf("%d header rows: %q", len(headers), headers)
		}
		cols := headers[0]
		for i, want := range []string{"time", "status", "id", "reply_id", "reloads", "local_time"} {
			if cols[i] != want {
				t.Fatalf("column %d is %q, want %q: %q", i, cols[i], want, cols)
			}
		}
		if !slices.Contains(cols, "in1.pedal [1]") || slices.Contains(cols, "in1.throttle") ||
			!slices.Equal(cols[len(cols)-2:], []string{"model.sq [s2]", "model.t [s]"}) {
			t.Errorf("the model's variables: columns %q", cols)
		}
		id, local, mt := 2, 5, len(cols)-1
		period := h.plan.Period
		restarts, last := 0, math.Inf(-1)
		for _, r := range rows {
			if r[0] < last {
				t.Fatalf("time ran back from %v to %v (id %v)", last, r[0], r[id])
			}
			if r[0] == last {
				t.Fatalf("two rows at %v", last)
			}
			if r[id] == 0 && last > 0 {
				restarts++
				if math.Abs(r[0]-(last+period)) > 1e-9 {
					t.Errorf("after BeamNG's restart the time went on from %v to %v, want one period on", last, r[0])
				}
			}
			if restarts == 0 && math.Abs(r[0]-r[id]*period) > 1e-9 { // the CSV's microseconds
				t.Fatalf("time %v for id %v: want id × %v", r[0], r[id], period)
			}
			last = r[0]
		}
		if restarts != 1 {
			t.Errorf("%d restarts seen in the ids", restarts)
		}
		// The pause: simulation time stands still while the wall clock goes
		// on, so the local time gains a second on it.
		end := rows[len(rows)-1]
		if gain := (end[local] - end[0]); gain < 0.9 {
			t.Errorf("at the end local time %v, simulation time %v: the 1 s pause is not in the local time", end[local], end[0])
		}
		// The model's time is its own: the simulation's, started over at the
		// restart.
		if m := end[mt]; math.Abs(m-(end[id]+1)*period) > period*1.01 && math.Abs(m-end[id]*period) > 1e-9 {
			t.Errorf("the model's time %v at id %v", m, end[id])
		}
	})
}

// A model whose variables change while it runs (a program naming its
// values late) lays the recording and the scope out anew: a new file for
// the new columns, a new generation of the scope's layout.
func TestVariablesChangeRelayout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.csv")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fm, _ := recording.FormatFor(path, "")
		w, err := fm.Create(f, recording.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ring *scope.Ring
		var rec *Recorder
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 2000},
			model: func(p *ports.Plan) models.Model { return newNamedModel(p, 100) },
			opts: func(_ *harness, o *Options) {
				rec = NewRecorderOf(w, path, o.Plan, nil)
				o.Record = rec
				ring = scope.New(ScopeColumns(o.Plan, nil), 1000, 1)
				o.Scope = ring
			}}.sim(t)
		h.run(t)
		rec.Close() // as a run's end does: run-2.csv is closed too
		headers, rows := readCSV(t, path)
		if len(headers) != 2 || slices.Contains(headers[0], "model.extra") || headers[1][len(headers[1])-1] != "model.extra" {
			t.Fatalf("headers %q: want a second with model.extra", headers)
		}
		if _, err := os.Stat(recording.Continuation(path, 2)); err != nil || len(rows) < 190 {
			t.Errorf("the new columns' file: %v; %d rows", err, len(rows))
		}
		if last := rows[len(rows)-1]; last[len(last)-1] != 7 {
			t.Errorf("model.extra %v, want 7", last[len(last)-1])
		}
		cols := ring.Layout().Columns
		if c := cols[len(cols)-1]; c.Name != "model.extra" || c.Port != "model" {
			t.Errorf("the scope's last column %+v", c)
		}
		var smp scope.Samples
		ring.Since(0, ring.Layout().Generation, &smp)
		if n := len(smp.T); n == 0 || smp.V[n*smp.Width-1] != 7 || math.Abs(smp.T[n-1]-199*h.plan.Period) > 1e-9 {
			t.Errorf("the scope's last sample at %v: %v", smp.T[max(0, len(smp.T)-1)], smp.V[max(0, len(smp.V)-smp.Width):])
		}
	})
}

// The per-message path allocates nothing with everything that watches it
// attached: a recording in either format and the scope, of a model with
// variables of its own.
func TestObservedAllocs(t *testing.T) {
	for _, format := range []string{"csv", "mdf"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			f, err := os.Create(filepath.Join(dir, "run."+format))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fm, _ := recording.FormatFor(f.Name(), format)
			w, err := fm.Create(f, recording.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := load(t, "../examples/cruise-pedals.json")
			var m *namedModel
			d := newDirect(t, cfg, nil, nil, func(o *Options) {
				m = newNamedModel(o.Plan, 0)
				o.Model = m
				o.Record = NewRecorderOf(w, f.Name(), o.Plan, nil)
				o.Scope = scope.New(ScopeColumns(o.Plan, m.Variables()), 1000, 1)
			})
			d.msg[1] = 12
			from, now := d.from(50000), d.start()
			step := func() {
				d.msg[0]++
				now = now.Add(5 * time.Millisecond)
				if _, ok := d.send(from, now); !ok {
					t.Fatal("message dropped")
				}
			}
			for range 10 {
				step()
			}
			if a := testing.AllocsPerRun(1000, step); a != 0 {
				t.Errorf("%v allocations per message", a)
			}
			d.s.opt.Record.Close()
			b, _ := os.ReadFile(f.Name())
			if format == "csv" && !strings.Contains(string(b), "model.sq [s2]") {
				t.Errorf("the recording lacks the model's columns:\n%.300s", b)
			}
			if format == "mdf" {
				// The model's channels, the local time and all, as the two
				// independent readers read them.
				if dump := mdftest.Agree(t, f.Name()); dump != "" && (!strings.Contains(dump, `"model.sq" unit="s2"`) || !strings.Contains(dump, `"in1.pedal" unit="1"`) || !strings.Contains(dump, `"local_time" unit="s"`)) {
					t.Errorf("the readers read:\n%s", dump)
				}
			}
		})
	}
}

// lateModel names its variables only at its 50th step, as a program that
// names its values once it has started: until then they are pending.
type lateModel struct{ *namedModel }

func (m lateModel) Variables() []models.Variable {
	if m.steps < 50 {
		return nil
	}
	return m.vars
}

func (m lateModel) Sample(v []float64) {
	if m.steps >= 50 {
		m.namedModel.Sample(v)
	}
}

func (m lateModel) VariablesPending() bool { return m.steps < 50 }

// Rows of a model whose names come late are held back until they come,
// then written under the header they make, in one file: the model's
// columns empty (NaN) before it named them.
func TestRecordingWaitsForLateNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.csv")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fm, _ := recording.FormatFor(path, "")
		w, err := fm.Create(f, recording.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := rig{cfg: load(t, "../examples/cruise-pedals.json"), em: emulator.Config{Steps: 2000},
			model: func(p *ports.Plan) models.Model { return lateModel{newNamedModel(p, 0)} },
			opts:  func(_ *harness, o *Options) { o.Record = NewRecorderOf(w, path, o.Plan, nil) }}.sim(t)
		h.run(t)
		headers, rows := readCSV(t, path)
		if len(headers) != 1 || !slices.Contains(headers[0], "in1.pedal [1]") || headers[0][len(headers[0])-1] != "model.t [s]" {
			t.Fatalf("headers %q: want one, with the model's names", headers)
		}
		if _, err := os.Stat(recording.Continuation(path, 2)); err == nil {
			t.Errorf("a second file for the names that came late")
		}
		if len(rows) < 190 || !math.IsNaN(rows[0][len(rows[0])-1]) || math.IsNaN(rows[len(rows)-1][len(rows[0])-1]) || rows[0][2] != 0 {
			t.Errorf("%d rows; the first %v, the last %v: want them all, the model's values NaN until it named them", len(rows), rows[0], rows[len(rows)-1])
		}
	})
}

// The runtime reaches models only through the models package's
// interfaces (a model's variables included): it builds with no FMU, exec
// or process package.
func TestRuntimeReachesModelsOnlyThroughTheContract(t *testing.T) {
	goTool, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go tool here")
	}
	out, err := osexec.Command(goTool, "list", "-deps", "beamconnect/coupling").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, bad := range []string{"beamconnect/fmu", "beamconnect/models/", "beamconnect/internal/proctree", "beamconnect/internal/mailbox"} {
			if p == bad || strings.HasPrefix(p, bad+"/") || strings.HasPrefix(p, bad) && strings.HasSuffix(bad, "/") {
				t.Errorf("coupling depends on %s", p)
			}
		}
	}
}

package recording

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// bbPlan is a rig whose two inputs (custom1, custom2) a model's outputs
// drive: BouncingBall's h and v, as init --from-fmu maps them.
func bbPlan(t *testing.T) *ports.Plan {
	t.Helper()
	cfg, err := config.Parse("bb.json", []byte(`{"version": 2,
	  "inputs": [{"updatePeriodMs": 10, "ports": [[{"propertyName": "custom1", "initialValue": 0}, {"propertyName": "custom2", "initialValue": 0}]]}],
	  "outputs": [{"updatePeriodMs": 10, "ports": [[{"propertyName": "groundspeed"}]]}],
	  "beamng": {"protocol": "fixed"}}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// bbVars are BouncingBall's variables as its FMU model lists them: h and
// v drive the custom fields; der(v) and a name a CSV must quote have
// columns of their own.
var bbVars = []models.Variable{
	{Name: "h", Unit: "m", Description: "Position of the ball", Kind: "output", Drives: true, At: models.Ref{Port: 1, Elem: 0}},
	{Name: "v", Unit: "m/s", Description: "Velocity of the ball", Kind: "output", Drives: true, At: models.Ref{Port: 1, Elem: 1}},
	{Name: "der(v)", Unit: "m/s2", Description: "Derivative of v", Kind: "local"},
	{Name: `A[1,2] "gain"`, Kind: "parameter"},
}

// A field a model's variable drives is named after it, with its unit and
// description; the others have columns of their own after the setpoints;
// simulation time comes first, the local time beside the ids.
func TestLayoutOfModelVariables(t *testing.T) {
	l := LayoutOf(bbPlan(t), bbVars)
	want := []string{"time", "status", "id", "reply_id", "reloads", "local_time", "out1.groundspeed", "directive", "in1.h", "in1.v", "model.der(v)", `model.A[1,2] "gain"`}
	if !slices.Equal(l.Names(), want) {
		t.Fatalf("columns %q, want %q", l.Names(), want)
	}
	h := l.Columns[8]
	if h.Unit != "m" || !strings.Contains(h.Comment, "Position of the ball") || !strings.Contains(h.Comment, `the model's output "h", sent to BeamNG as custom1`) {
		t.Errorf("in1.h: %+v", h)
	}
	if d := l.Columns[10]; d.Role != Model || d.Unit != "m/s2" || d.Vehicle != -1 || !strings.Contains(d.Comment, `the model's local "der(v)"`) {
		t.Errorf("model.der(v): %+v", d)
	}
	if !slices.Equal(l.Sampled, []int{2, 3}) {
		t.Errorf("sampled %v, want the variables that drive nothing", l.Sampled)
	}
	if c := l.Columns[0]; c.Role != Time || c.Unit != "s" || !strings.Contains(c.Comment, "simulation time") {
		t.Errorf("time: %+v", c)
	}
	if c := l.Columns[5]; c.Role != Own || !c.Out || c.Unit != "s" || !strings.Contains(c.Comment, "local time") {
		t.Errorf("local_time: %+v", c)
	}
}

// A CSV header says a column's unit where its name does not, quotes a
// name a comma or a quote would break, and reads back as it was written:
// the same names, units and roles.
func TestCSVHeaderUnitsAndQuotes(t *testing.T) {
	l := LayoutOf(bbPlan(t), bbVars)
	var b bytes.Buffer
	c := NewCSV(&b)
	buf := c.Header(nil, l)
	vals := l.Flatten(nil, &Entry{Time: 0.01, LocalTime: 0.002, Status: 3, ID: 1, ReplyID: 2,
		Outputs: [][]float64{{3}, {12}}, Inputs: [][]float64{{1}, {0.9995, -0.098}}, Model: []float64{-9.81, 2}})
	buf = c.Row(buf, 0, vals)
	if _, _, err := c.Write(buf, nil); err != nil {
		t.Fatal(err)
	}
	const header = `time,status,id,reply_id,reloads,local_time,out1.groundspeed,directive,in1.h [m],in1.v [m/s],model.der(v) [m/s2],"model.A[1,2] ""gain"""`
	if first, _, _ := strings.Cut(b.String(), "\n"); first != header {
		t.Fatalf("header\n%s\nwant\n%s", first, header)
	}
	var got *Layout
	var row []float64
	err := Scan(&b, "bb.csv", func(h *Header) error { got = LayoutOfHeader(h); return nil },
		func(h *Header, r *Row) error { row = slices.Clone(r.Values); return nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range got.Columns {
		if o := l.Columns[i]; c.Name != o.Name || c.Unit != o.Unit || c.Role != o.Role {
			t.Errorf("column %d read back %+v, written %+v", i, c, o)
		}
	}
	if !slices.Equal(row, vals) {
		t.Errorf("row read back %v, written %v", row, vals)
	}
}

// Header cells a reader must refuse say where and why.
func TestCSVHeaderErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unclosed quote", "time,\"a,b\n0,1\n", `h.csv:1:6: a quoted column name without its closing quote`},
		{"text after a quote", "time,\"a\"b,c\n0,1,2\n", `h.csv:1:9: expected a comma after a quoted column name`},
		{"empty name", "time,,b\n0,1,2\n", `h.csv:1:6: expected a column name, got an empty one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Scan(strings.NewReader(tc.text), "h.csv", func(*Header) error { return nil }, func(*Header, *Row) error { return nil })
			if err == nil || err.Error() != tc.want {
				t.Errorf("%v, want %s", err, tc.want)
			}
		})
	}
}

// One header per file: a layout with the columns already written writes
// none (a reload of parameters); one that changes them starts the next
// file, run-2.csv, which the reader reads on from run.csv; written to a
// pipe, the new header row follows in the same stream.
func TestCSVOneHeaderPerFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.csv")
	stale := Continuation(path, 2)
	os.WriteFile(stale, []byte("time,status,id,reply_id,reloads\n9,3,9,10,0\n"), 0o644) // an earlier run's
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := csvFormat.Create(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // closes run-2.csv, which it makes
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the earlier recording's continuation is still there: %v", err)
	}
	plan := bbPlan(t)
	a, b := LayoutOf(plan, nil), LayoutOf(plan, bbVars)
	write := func(w Writer, lays ...*Layout) {
		var buf []byte
		for i, l := range lays {
			buf = w.Header(buf, l)
			e := &Entry{Time: float64(i) * 0.01, Status: 3, ID: float64(i), ReplyID: float64(i + 1), Reloads: int64(i),
				Outputs: [][]float64{{3}, {12}}, Inputs: [][]float64{{1}, {0.5, 0.25}}, Model: []float64{-9.81, 2}}
			if len(l.Sampled) == 0 {
				e.Model = nil
			}
			buf = w.Row(buf, 0, l.Flatten(nil, e))
		}
		if n, lost, err := w.Write(buf, nil); err != nil || lost != 0 || n != int64(len(lays)) {
			t.Fatalf("wrote %d, lost %d: %v", n, lost, err)
		}
	}
	write(w, a, LayoutOf(plan, nil), b, LayoutOf(plan, bbVars))
	first, _ := os.ReadFile(path)
	second, _ := os.ReadFile(stale)
	if n := headerRows(string(first)); n != 1 || strings.Count(string(first), "\n") != 3 {
		t.Errorf("run.csv: %d header rows (want 1: a layout like the last writes none):\n%s", n, first)
	}
	if !strings.HasPrefix(string(second), "time,status,id,reply_id,reloads,local_time,out1.groundspeed,directive,in1.h [m]") || strings.Count(string(second), "\n") != 3 {
		t.Errorf("run-2.csv, the new columns':\n%s", second)
	}
	src, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	span, err := Measure(src)
	if err != nil || span.Rows != 4 || span.Headers != 2 {
		t.Errorf("read on from run.csv into run-2.csv: %+v %v", span, err)
	}
	// A pipe: no file to start, a header row in the stream.
	var pipe bytes.Buffer
	write(NewCSV(struct{ io.Writer }{&pipe}), a, b)
	if n := headerRows(pipe.String()); n != 2 {
		t.Errorf("a pipe: %d header rows, want 2:\n%s", n, pipe.String())
	}
}

// A row's values come in the layout's order, the model's last, and NaN
// where the model has no value yet.
func TestFlattenModel(t *testing.T) {
	l := LayoutOf(bbPlan(t), bbVars)
	vals := l.Flatten(nil, &Entry{Time: 1, LocalTime: 2, Status: 3, ID: 4, ReplyID: 5, Reloads: 6,
		Outputs: [][]float64{{3}, {7}}, Inputs: [][]float64{{1}, {8, 9}}, Model: []float64{math.NaN(), 10}})
	if len(vals) != len(l.Columns) || vals[5] != 2 || vals[8] != 8 || !math.IsNaN(vals[10]) || vals[11] != 10 {
		t.Errorf("values %v for columns %q", vals, l.Names())
	}
}

// headerRows counts a CSV recording's header rows.
func headerRows(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "time,") {
			n++
		}
	}
	return n
}

// closeCounter is a continuation file that says when it was closed.
type closeCounter struct {
	bytes.Buffer
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// The files a CSV recording makes for new columns are its own: each is
// closed once the rows move on to the next, and the last at Close. (One
// left open cannot be removed on Windows until the program exits.)
func TestCSVClosesItsContinuations(t *testing.T) {
	var made []*closeCounter
	w := &CSV{w: io.Discard, Next: func(int) (io.Writer, error) {
		made = append(made, &closeCounter{})
		return made[len(made)-1], nil
	}}
	plan := bbPlan(t)
	var buf []byte
	for _, l := range []*Layout{LayoutOf(plan, nil), LayoutOf(plan, bbVars), LayoutOf(plan, nil)} {
		buf = w.Header(buf, l)
	}
	if _, _, err := w.Write(buf, nil); err != nil {
		t.Fatal(err)
	}
	if len(made) != 2 || made[0].closed != 1 || made[1].closed != 0 {
		t.Fatalf("after three layouts: %d files made, closed %v", len(made), closes(made))
	}
	w.Close()
	if made[1].closed != 1 || made[0].closed != 1 {
		t.Errorf("after Close: closed %v, want each once", closes(made))
	}
}

func closes(cs []*closeCounter) (n []int) {
	for _, c := range cs {
		n = append(n, c.closed)
	}
	return n
}

package recording

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/config/configtest"
)

// The format is the one a file's name says, or the one named; CSV for
// names no format claims; a name no format has is an error naming them.
func TestFormatFor(t *testing.T) {
	for _, tc := range []struct{ path, name, want string }{
		{"run.csv", "", "csv"},
		{"run.log", "", "csv"},
		{"run.CSV", "", "csv"},
		{"run.log", "csv", "csv"},
	} {
		t.Run(strings.TrimSpace(tc.path+" "+tc.name), func(t *testing.T) {
			f, err := FormatFor(tc.path, tc.name)
			if err != nil || f.Name != tc.want {
				t.Errorf("%s %q: %v %v, want %s", tc.path, tc.name, f, err, tc.want)
			}
		})
	}
	if _, err := FormatFor("run.csv", "parquet"); err == nil || !strings.Contains(err.Error(), `recording format "parquet": expected one of csv`) {
		t.Errorf("an unknown format: %v", err)
	}
}

// Open reads a CSV recording by its first row, whatever its name; a file
// that is none says where and what was expected.
func TestOpenCSV(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.dat")
	os.WriteFile(rec, []byte(reloaded), 0o644)
	src, err := Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	span, err := Measure(src)
	if err != nil || span.Rows != 6 || span.Headers != 2 || span.First != 0 || span.Last != 0.025 {
		t.Errorf("%+v %v", span, err)
	}
	notes := filepath.Join(dir, "notes.csv")
	os.WriteFile(notes, []byte("lab notes\n"), 0o644)
	src, err = Open(notes)
	if err == nil {
		_, err = Measure(src)
	}
	if err == nil || !strings.Contains(err.Error(), `notes.csv:1:1: expected a recording's header row starting "time,"`) {
		t.Errorf("not a recording: %v", err)
	}
}

// A run's columns are named as its recording always named them, with the
// units and meanings of BeamNG's catalogue; a CSV header gives the same
// names, units and vehicles back.
func TestLayoutOf(t *testing.T) {
	l := LayoutOf(configtest.Plan(t, "../examples/follow.json"), nil)
	byName := map[string]Column{}
	for _, c := range l.Columns {
		byName[c.Name] = c
	}
	if !l.Several() || l.Columns[1].Role != Vehicle || l.Vehicles[0] != "ego" || l.Vehicles[1] != "lead" {
		t.Fatalf("vehicles %q, columns %v", l.Vehicles, l.Names())
	}
	for name, want := range map[string]string{"out1.ego.groundspeed": "m/s", "out2.ego.gap:lead": "m", "time": "s", "in1.ego.throttle": ""} {
		if c, ok := byName[name]; !ok || c.Unit != want {
			t.Errorf("%s: %+v, want unit %q", name, c, want)
		}
	}
	if c := byName["out1.ego.groundspeed"]; !strings.Contains(c.Comment, "[B") || c.Vehicle != 0 || !c.Out {
		t.Errorf("groundspeed: %+v", c)
	}
	if c := byName["out2.ego.gap:lead"]; !strings.Contains(c.Comment, "gap from ego to lead") {
		t.Errorf("gap: %+v", c)
	}
	back := LayoutOfHeader(NewHeader(l.Names(), nil))
	if !back.Several() || back.Vehicles[0] != "ego" || len(back.Columns) != len(l.Columns) {
		t.Fatalf("from the header: %q %v", back.Vehicles, back.Names())
	}
	for i, c := range back.Columns {
		if o := l.Columns[i]; c.Name != o.Name || c.Unit != o.Unit || c.Role != o.Role || c.Vehicle != o.Vehicle || c.Out != o.Out {
			t.Errorf("column %d from the header %+v, from the plan %+v", i, c, o)
		}
	}
}

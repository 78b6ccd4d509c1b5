package recordingtest

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// A recording with a model variable's unit, a reload's header again, a
// value that is not a number; a table whose name comes twice.
func TestRows(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.csv")
	os.WriteFile(rec, []byte("time,id,model.e [m/s]\n0.005,1,0.5\n0.01,2,nan\ntime,id,out3.fuel,model.e [m/s]\n0.015,3,7,0.25\n"), 0o644)
	rows := Rows(t, rec)
	if len(rows) != 3 || rows[0]["model.e"] != 0.5 || rows[0]["model.e [m/s]"] != 0.5 || !math.IsNaN(rows[1]["model.e"]) || rows[2]["id"] != 3 || rows[2]["out3.fuel"] != 7 {
		t.Errorf("rows %v", rows)
	}
	if c := Column(t, rec, "id"); len(c) != 3 || c[2] != 3 {
		t.Errorf("the id column %v", c)
	}
	if v := Last(t, rec, "model.e [m/s]"); v != 0.25 {
		t.Errorf("the last model.e %v", v)
	}
	sim := filepath.Join(dir, "fmusim.csv")
	os.WriteFile(sim, []byte("time,time,x\n0,1,2\n"), 0o644)
	if r := Rows(t, sim); r[0]["time"] != 0 || r[0]["#time"] != 1 || r[0]["x"] != 2 {
		t.Errorf("fmusim's rows %v", r)
	}
}

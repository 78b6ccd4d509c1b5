// Package recordingtest reads, for tests, what runs leave behind as CSV (a
// recording, BeamNG's debug logs, fmusim's output) as rows of named values,
// with encoding/csv: independently of package recording, whose writer the
// tests check.
package recordingtest

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Read reads a whole CSV file, its header first; rows may differ in
// length. It fails the test when the file cannot be read or has no row
// below its header.
func Read(t testing.TB, file string) [][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	all, err := r.ReadAll()
	if err != nil || len(all) < 2 {
		t.Fatalf("%s: %v, %d rows", file, err, len(all))
	}
	return all
}

// Rows reads a CSV file's rows by column name. A recording's column of a
// model variable is also under its name without the unit ("model.e [m/s]"
// and "model.e"); a column whose name came before (fmusim's own time
// column, then a variable of that name) is under "#" and the name. A
// header again (a recording's reload) names the rows below it, and a
// value that is not a number is NaN.
func Rows(t testing.TB, file string) []map[string]float64 {
	t.Helper()
	all := Read(t, file)
	var names []string
	header := func(line []string) {
		names = make([]string, len(line))
		seen := map[string]bool{}
		for i, name := range line {
			if seen[name] {
				name = "#" + name
			}
			seen[name], names[i] = true, name
		}
	}
	header(all[0])
	var rows []map[string]float64
	for _, line := range all[1:] {
		if len(line) > 0 && line[0] == all[0][0] {
			header(line)
			continue
		}
		row := make(map[string]float64, len(names))
		for i, v := range line[:min(len(line), len(names))] {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				f = math.NaN()
			}
			row[names[i]] = f
			if base, _, unit := strings.Cut(names[i], " ["); unit {
				row[base] = f
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// Column is a column's values, a value per row, failing the test when
// the file has no such column.
func Column(t testing.TB, file, name string) []float64 {
	t.Helper()
	rows := Rows(t, file)
	var out []float64
	for _, r := range rows {
		v, ok := r[name]
		if !ok {
			t.Fatalf("%s: no column %q", file, name)
		}
		out = append(out, v)
	}
	return out
}

// Last is a column's value in the last row.
func Last(t testing.TB, file, name string) float64 {
	t.Helper()
	c := Column(t, file, name)
	if len(c) == 0 {
		t.Fatalf("%s: no rows", file)
	}
	return c[len(c)-1]
}

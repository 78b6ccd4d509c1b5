package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmu"
	"beamconnect/recording"
	"beamconnect/recording/mdf"
)

// The Modelica Association's Reference FMUs, as a new user meets them: a
// draft of each (init --from-fmu) validates with no warning and runs, and
// its recording, CSV and MDF 4 alike, holds every output under
// its own name and unit, against simulation time. They are not in the
// repository: BEAMCONNECT_REFERENCE_FMUS names a folder of fmi2/ and fmi3/
// .fmu files, built from github.com/modelica/Reference-FMUs (see
// docs/development.md).
func TestReferenceFMUDrafts(t *testing.T) {
	dir := os.Getenv("BEAMCONNECT_REFERENCE_FMUS")
	if dir == "" {
		t.Skip("BEAMCONNECT_REFERENCE_FMUS names no folder of the Reference FMUs")
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "fmi*", "*.fmu"))
	if len(paths) == 0 {
		t.Fatalf("no FMUs in %s/fmi*/", dir)
	}
	for _, path := range paths {
		name := filepath.Base(filepath.Dir(path)) + "/" + strings.TrimSuffix(filepath.Base(path), ".fmu")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := fmu.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			desc := f.Desc
			f.Close()
			if _, err := desc.Interface(""); err != nil {
				t.Skipf("not run by beamconnect: %v", err) // Clocks: scheduled execution only
			}
			work := t.TempDir()
			local := filepath.Join(work, filepath.Base(path))
			data, _ := os.ReadFile(path)
			os.WriteFile(local, data, 0o644)
			rig := filepath.Join(work, "rig.json")
			if _, errOut, code := exec(t, nil, "init", "--from-fmu", local, "-o", rig); code != exitOK || strings.Contains(errOut, "is bound to no field") {
				t.Fatalf("init: exit %d\n%s", code, errOut)
			}
			if out, _, code := exec(t, nil, "validate", rig); code != exitOK || strings.TrimSpace(out) != rig+": valid" {
				text, _ := os.ReadFile(rig)
				t.Fatalf("validate: exit %d\n%s\n%s", code, out, text)
			}
			// The outputs a draft sends to BeamNG, each under its name
			// and unit.
			want := map[string]string{}
			for _, v := range desc.Variables {
				if v.Causality == "output" && v.Kind.Numeric() {
					for _, n := range elementNamesOf(&v) {
						want["in1."+n] = v.Unit
					}
				}
			}
			// Run as written, for 2 s of BeamNG's time as fast as the
			// model goes: in lockstep, the default, a loaded machine's late
			// answer slows the run and changes nothing recorded.
			for _, format := range []string{"csv", "mf4"} {
				rec := filepath.Join(work, "run."+format)
				if _, errOut, code := exec(t, nil, "run", rig, "--emulate", "--free-running", "--sim-duration", "2s", "--record", rec); code != exitOK {
					t.Fatalf("run --record %s: exit %d\n%s", format, code, errOut)
				}
				checkRecorded(t, rec, want)
			}
		})
	}
}

// elementNamesOf are a variable's names in a recording: its own, or an
// array's elements' at their start sizes.
func elementNamesOf(v *fmu.Variable) []string {
	if !v.Array {
		return []string{v.Name}
	}
	n := 1
	for _, d := range v.Dims {
		n *= int(d.Start)
	}
	var out []string
	for i := range n {
		out = append(out, v.Name+"["+strconv.Itoa(i+1)+"]")
	}
	return out
}

// checkRecorded: the recording has a column per output, named and united
// as wanted, its units said where its name does not imply them (the CSV's
// header, the MDF channel's unit), and its time is id × period.
func checkRecorded(t *testing.T, rec string, want map[string]string) {
	t.Helper()
	src, err := recording.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var times, ids []float64
	idCol := -1
	err = src(func(h *recording.Header) error {
		l := recording.LayoutOfHeader(h)
		for _, c := range l.Columns {
			got[c.Name] = c.Unit
		}
		idCol = slices.Index(h.Columns, "id")
		return nil
	}, func(h *recording.Header, r *recording.Row) error {
		times, ids = append(times, r.Values[0]), append(ids, r.Values[idCol])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, unit := range want {
		if u, ok := got[name]; !ok || u != unit {
			t.Errorf("%s: %s recorded as %q (%v), want unit %q; columns %v", filepath.Ext(rec), name, u, ok, unit, got)
		}
	}
	if len(times) < 5 { // Stair ends its simulation after a few steps

		t.Fatalf("%s: %d rows", rec, len(times))
	}
	period := (times[len(times)-1] - times[0]) / (ids[len(ids)-1] - ids[0])
	for i := range times {
		if math.Abs(times[i]-ids[i]*period) > 1e-6 {
			t.Fatalf("%s: row %d at %v for id %v: not id × %v", rec, i, times[i], ids[i], period)
		}
	}
	if strings.HasSuffix(rec, ".mf4") {
		f, _ := os.Open(rec)
		defer f.Close()
		st, _ := f.Stat()
		mf, err := mdf.Read(f, st.Size(), rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range mf.Groups {
			if g.Name != "to BeamNG" {
				continue
			}
			for _, c := range g.Channels {
				if unit, ok := want[c.Name]; ok && c.Unit != unit {
					t.Errorf("MDF channel %s: unit %q, want %q", c.Name, c.Unit, unit)
				}
			}
		}
	}
}

package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
)

// fixtures copies testdata into a folder of the test's with the example's
// two FMUs built beside the .ssd files.
func fixtures(t *testing.T) string {
	t.Helper()
	ctl, act := testfmu.SystemForTest(t)
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/*")
	for _, f := range append(files, ctl, act) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
	}
	return dir
}

// Every mistake in a system is said where it is written, in the words of
// what was expected, with the closest name for a misspelt one: each
// fixture testdata/NAME.ssd has its diagnostic in NAME.err (a warning,
// for a system that loads all the same: typo-param).
func TestCheckRefuses(t *testing.T) {
	dir := fixtures(t)
	errs, _ := filepath.Glob("testdata/*.err")
	if len(errs) < 15 {
		t.Fatalf("only %d fixtures", len(errs))
	}
	for _, e := range errs {
		name := strings.TrimSuffix(filepath.Base(e), ".err")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(e)
			if err != nil {
				t.Fatal(err)
			}
			s, ds, err := Load(filepath.Join(dir, name+".ssd"))
			if err != nil {
				t.Fatal(err)
			}
			warning := strings.Contains(string(want), ": warning: ")
			if s != nil {
				s.Close()
			}
			if (s != nil) != warning {
				t.Errorf("loaded %v, want %v: %v", s != nil, warning, ds)
			}
			if got := ds.Error(); !strings.Contains(got, strings.TrimSpace(string(want))) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	if s, ds, err := Load(filepath.Join(dir, "valid.ssd")); s == nil || len(ds) != 0 {
		t.Errorf("the valid fixture: %v %v", err, ds)
	} else {
		s.Close()
	}
}

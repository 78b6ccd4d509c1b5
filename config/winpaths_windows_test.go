package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Gen 2 config names its CSV as Windows users write paths: relative with
// backslashes, or absolute with a drive letter. Both load, and a finding
// in the CSV names the file as Windows would.
func TestWindowsPathsToTheCSV(t *testing.T) {
	b, err := os.ReadFile("../examples/gen2-cruise.json")
	if err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile("../examples/gen2-cruise.csv")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "csv", "rig.csv"), csv, 0o644); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "csv", "rig.csv")
	if filepath.VolumeName(abs) == "" {
		t.Fatalf("%s has no drive letter", abs)
	}
	for _, iface := range []string{`csv\rig.csv`, `.\csv\rig.csv`, abs, strings.ToUpper(abs)} {
		name, _ := json.Marshal(iface)
		cfg := strings.Replace(string(b), `"interface": "gen2-cruise.csv"`, `"interface": `+string(name), 1)
		if cfg == string(b) {
			t.Fatal("the example names its CSV otherwise")
		}
		path := filepath.Join(dir, "rig.json")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Errorf("interface %s: %v", iface, err)
		}
	}
	// A CSV that is not there is named with its folder, backslashes and all.
	cfg := strings.Replace(string(b), `"interface": "gen2-cruise.csv"`, `"interface": "csv\\missing.csv"`, 1)
	path := filepath.Join(dir, "missing.json")
	os.WriteFile(path, []byte(cfg), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `csv\missing.csv`) {
		t.Errorf("a missing CSV: %v", err)
	}
}

package runsetup

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"beamconnect/config/configtest"
)

// A recording keeps the config's text and name, the Gen 2 CSVs it names,
// and the version `beamconnect version` says, wherever it is made.
func TestRecordingOptions(t *testing.T) {
	plan := configtest.Plan(t, "../examples/gen2-follow.json")
	o := RecordingOptions(plan)
	if o.Version != Version() || o.ConfigName != "gen2-follow.json" || string(o.Config) != string(plan.Config) || o.Start.IsZero() {
		t.Errorf("options %+v", o)
	}
	var names []string
	for _, f := range o.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "gen2-follow-ego.csv gen2-follow-lead.csv" {
		t.Errorf("files kept %q, want the two vehicles' CSVs", got)
	}
}

// Record opens a recorder on a new file, and refuses the config itself.
func TestRecord(t *testing.T) {
	plan := configtest.Plan(t, "../examples/cruise-pedals.json")
	path := filepath.Join(t.TempDir(), "run.csv")
	rec, done, err := Record(path, "", false, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	done()
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "time,status,id,reply_id") {
		t.Errorf("recording %q, %v", b, err)
	}
	if _, _, err := Record(plan.Source, "", true, plan, nil); err == nil || !strings.Contains(err.Error(), "is the config file being run") {
		t.Errorf("recording onto the config: %v", err)
	}
}

// The version is the release's, or Go's pseudo-version of the clone, or
// "devel"; the revision and the tree's state come from the build.
func TestBuildOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want Build
	}{
		{"a clone", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123141545-d78539622e38"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "d785"}, {Key: "vcs.time", Value: "2026-11-23T14:15:45Z"}, {Key: "vcs.modified", Value: "true"}}},
			Build{Version: "v0.0.0-20261123141545-d78539622e38", Revision: "d785", RevisionTime: "2026-11-23T14:15:45Z", Modified: true}},
		{"no repository", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Build{Version: "devel"}},
		{"no build info", nil, Build{Version: "devel"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildOf(tt.bi)
			got.Go, got.Platform = "", ""
			if got != tt.want {
				t.Errorf("%+v, want %+v", got, tt.want)
			}
		})
	}
}

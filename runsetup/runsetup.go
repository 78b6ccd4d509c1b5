// Package runsetup is what a run of a config sets up alike wherever it
// runs (beamconnect run, and the exported FMU's child process, which runs
// the coupling for another master): the build's version, as `beamconnect
// version` says it; the recording, with what it keeps of the run besides
// its rows; and the run's first log line, which names both.
package runsetup

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"beamconnect/coupling"
	"beamconnect/ports"
	"beamconnect/recording"
)

// version is set at release time with
// -ldflags "-X beamconnect/runsetup.version=v1.2.3".
var version = ""

// Build is what the binary knows of its own build.
type Build struct {
	Version      string `json:"version"`
	Revision     string `json:"revision"`      // full VCS revision, "" when not built from a repository
	RevisionTime string `json:"revision_time"` // the commit's time, RFC 3339
	Modified     bool   `json:"modified"`      // the working tree had uncommitted changes
	Go           string `json:"go"`
	Platform     string `json:"platform"`
}

// ReadBuild is the running binary's build.
func ReadBuild() Build {
	bi, _ := debug.ReadBuildInfo()
	return BuildOf(bi)
}

// BuildOf is what bi says of the build (nil: nothing known), the version
// set at release time first.
func BuildOf(bi *debug.BuildInfo) Build {
	b := Build{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if b.Version == "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.RevisionTime = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" || b.Version == "(devel)" {
		b.Version = "devel"
	}
	return b
}

// Version is the running binary's version: a release tag, the
// pseudo-version Go derives from the repository, or "devel".
func Version() string { return ReadBuild().Version }

// RecordingOptions are what a recording of plan's run keeps besides its
// rows: when it started, the build's version, the config's text and name,
// and the Gen 2 CSVs it names.
func RecordingOptions(plan *ports.Plan) recording.Options {
	o := recording.Options{Start: time.Now(), Version: Version(), Config: plan.Config, ConfigName: filepath.Base(plan.Source)}
	for _, p := range plan.CSVPaths {
		if data, err := os.ReadFile(p); err == nil {
			o.Files = append(o.Files, recording.NamedFile{Name: filepath.Base(p), Data: data})
		}
	}
	return o
}

// Record opens path for a recording of plan's run, in format (a
// registered format's name; "" for the one path's extension says), as
// coupling.OpenRecording allows (force overwrites what is not a
// recording), and starts its recorder, which logs to log. Close the
// recorder first (the session's Run does), then the file with done.
func Record(path, format string, force bool, plan *ports.Plan, log *slog.Logger) (rec *coupling.Recorder, done func(), err error) {
	f, fm, err := coupling.OpenRecording(path, plan.Source, format, force)
	if err != nil {
		return nil, nil, err
	}
	w, err := fm.Create(f, RecordingOptions(plan))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return coupling.NewRecorderOf(w, f.Name(), plan, log), func() { f.Close() }, nil
}

// Announce logs the run's first line: beamconnect's version, the config,
// BeamNG's protocol, the vehicles and the period, and attrs.
func Announce(log *slog.Logger, msg string, plan *ports.Plan, attrs ...any) {
	log.Info(msg, append([]any{"version", Version(), "config", filepath.Base(plan.Source),
		"protocol", plan.Protocol.Controller(), "vehicles", len(plan.Vehicles), "period_ms", plan.Period * 1000}, attrs...)...)
}

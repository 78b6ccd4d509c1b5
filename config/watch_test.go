package config

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"beamconnect/internal/eventually"
	"beamconnect/internal/logtest"
)

// watch runs a watcher on a fresh file and returns a channel of what it
// reports.
func watch(t *testing.T) (string, *Watcher, <-chan string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "rig.json")
	if err := os.WriteFile(path, []byte("v0"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(path, 20*time.Millisecond, nil)
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx, func(b []byte) { got <- string(b) }); close(done) }()
	// Ended before the temporary folder is removed: the watcher holds it
	// open, and on Windows that fails the removal.
	t.Cleanup(func() { cancel(); <-done })
	w.Force() // served by the running loop: the watch is in place
	expect(t, got, "v0")
	return path, w, got
}

func expect(t *testing.T, got <-chan string, want string) {
	t.Helper()
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("reported %q, want %q", s, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("%q not reported", want)
	}
}

// expectLast waits for a report of the last of states, accepting before
// it reports of earlier states in the order the file went through them.
func expectLast(t *testing.T, got <-chan string, states []string) {
	t.Helper()
	want := states[len(states)-1]
	for next := 0; ; {
		select {
		case s := <-got:
			if s == want {
				return
			}
			i := slices.Index(states[next:len(states)-1], s)
			if i < 0 {
				t.Fatalf("reported %q, want %q (or a state before it, in order: %q)", s, want, states[next:len(states)-1])
			}
			next += i + 1
		case <-time.After(2 * time.Second):
			t.Fatalf("%q not reported", want)
		}
	}
}

func quiet(t *testing.T, got <-chan string) {
	t.Helper()
	select {
	case s := <-got:
		t.Fatalf("reported %q, want nothing", s)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestWatchInPlaceAndRename(t *testing.T) {
	path, _, got := watch(t)
	os.WriteFile(path, []byte("v1"), 0o644) // in place: truncate, write
	expect(t, got, "v1")
	// An editor's atomic save: write a temporary file, rename it over.
	tmp := filepath.Join(filepath.Dir(path), ".rig.json.swp")
	os.WriteFile(tmp, []byte("v2"), 0o644)
	os.Rename(tmp, path)
	expect(t, got, "v2")
	// A second rename still works: the directory, not the inode, is watched.
	os.WriteFile(tmp, []byte("v3"), 0o644)
	os.Rename(tmp, path)
	expect(t, got, "v3")
}

func TestWatchIgnoresNoise(t *testing.T) {
	path, w, got := watch(t)
	os.WriteFile(path, []byte("v0"), 0o644) // same bytes
	os.Chmod(path, 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(path), "other.json"), []byte("x"), 0o644)
	quiet(t, got)
	// A burst of writes ends in a report of the last content, and nothing
	// after. The burst is usually one report; on a loaded machine the
	// watcher may read the file part-way (truncated by a write, or between
	// two), which the next event then corrects: such reports are states the
	// file passed through, in order.
	var states []string
	for i := range 5 {
		os.WriteFile(path, []byte{'b', byte('0' + i)}, 0o644)
		states = append(states, "", string([]byte{'b', byte('0' + i)})) // truncated, then written
	}
	expectLast(t, got, states)
	quiet(t, got)
	// SIGHUP's Force reports even unchanged content.
	w.Force()
	expect(t, got, "b4")
}

// watchLogged is watch with a short health check and a log to read.
func watchLogged(t *testing.T) (string, <-chan string, *logtest.Buffer) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rig")
	os.Mkdir(dir, 0o755)
	path := filepath.Join(dir, "rig.json")
	os.WriteFile(path, []byte("v0"), 0o644)
	log := &logtest.Buffer{}
	w := NewWatcher(path, 20*time.Millisecond, log.Logger())
	w.SetHealthInterval(50 * time.Millisecond)
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { w.Run(ctx, func(b []byte) { got <- string(b) }); close(done) }()
	w.Force() // served by the running loop: the watch is in place
	expect(t, got, "v0")
	return path, got, log
}

// The config's folder deleted and created again, or
// renamed away and back: the watch comes back and later edits are still
// seen; a missing file is warned about at once, not at debug level.
func TestWatchSurvivesFolderChurn(t *testing.T) {
	t.Run("deleted and re-created", func(t *testing.T) {
		path, got, log := watchLogged(t)
		dir := filepath.Dir(path)
		soon(t, func() error { return os.RemoveAll(dir) })
		log.WaitFor(t, "the config's folder was removed or renamed")
		log.WaitFor(t, "the config file is missing")
		os.Mkdir(dir, 0o755)
		os.WriteFile(path, []byte("v1"), 0o644)
		expect(t, got, "v1")
		log.WaitFor(t, "the config file is back")
		os.WriteFile(path, []byte("v2"), 0o644) // and the watch works on
		expect(t, got, "v2")
	})
	t.Run("renamed away and back", func(t *testing.T) {
		path, got, log := watchLogged(t)
		dir := filepath.Dir(path)
		soon(t, func() error { return os.Rename(dir, dir+".away") })
		log.WaitFor(t, "the config's folder was removed or renamed")
		os.WriteFile(filepath.Join(dir+".away", "rig.json"), []byte("elsewhere"), 0o644) // not our file any more
		quiet(t, got)
		os.Rename(dir+".away", dir)
		expect(t, got, "elsewhere") // the file changed while away: read at re-arming
		os.WriteFile(path, []byte("v3"), 0o644)
		expect(t, got, "v3")
	})
	t.Run("file removed", func(t *testing.T) {
		path, got, log := watchLogged(t)
		soon(t, func() error { return os.Remove(path) })
		log.WaitFor(t, "level=WARN msg=\"the config file is missing; the running config stays until it is back\"")
		quiet(t, got)
		os.WriteFile(path, []byte("v4"), 0o644)
		expect(t, got, "v4")
	})
}

// A save between the run reading its config and the watch starting made
// no event the watch could see; it is still reported, as soon as the
// watch runs.
func TestWatchSaveBeforeTheWatchStarts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rig.json")
	if err := os.WriteFile(path, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(path, 20*time.Millisecond, nil)
	w.SetRunning([]byte("v0")) // what the run compiled, before the save
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx, func(b []byte) { got <- string(b) }); close(done) }()
	// Ended before the temporary folder is removed: the watcher holds it
	// open, and on Windows that fails the removal.
	t.Cleanup(func() { cancel(); <-done })
	expect(t, got, "v1")
}

// soon does what may fail for a moment on Windows, where a file cannot
// be removed or its folder renamed while it is open, and the watcher
// opens it now and then to read it: tried again until it goes through.
func soon(t *testing.T, do func() error) {
	t.Helper()
	var err error
	if !eventually.True(10*time.Second, func() bool { err = do(); return err == nil }) {
		t.Fatal(err)
	}
}

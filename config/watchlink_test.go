package config

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"beamconnect/logtest"
	"beamconnect/wine"
)

// watchPath runs a watcher on path (which exists), named what, with a
// short health check, and returns what it reports and its log. It returns
// once the watch is in place: Force is served only by the running loop,
// after the folders are watched.
func watchPath(t *testing.T, what, path string) (<-chan string, *logtest.Buffer) {
	t.Helper()
	log := &logtest.Buffer{}
	w := NewFileWatcher(what, path, 20*time.Millisecond, log.Logger())
	w.SetHealthInterval(50 * time.Millisecond)
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { w.Run(ctx, func(b []byte) { got <- string(b) }); close(done) }()
	w.Force()
	b, _ := os.ReadFile(path)
	expect(t, got, string(b))
	return got, log
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// saveAtomic saves as editors do: a temporary file renamed over path.
func saveAtomic(t *testing.T, path, s string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".save.tmp")
	write(t, tmp, s)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// relink points the link at path to dest, atomically (ln -sfn).
func relink(t *testing.T, dest, path string) {
	t.Helper()
	tmp := path + ".tmp"
	wine.Symlink(t, dest, tmp)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// The config in the rig's folder is a link to a file
// kept in another folder (a repository checkout). Editing that file, in
// place or by an editor's atomic save, reloads the config. Before, only
// the link's folder was watched and nothing was ever reloaded, silently.
func TestWatchSymlinkTarget(t *testing.T) {
	root := t.TempDir()
	rig, repo := filepath.Join(root, "rig"), filepath.Join(root, "repo")
	os.Mkdir(rig, 0o755)
	os.Mkdir(repo, 0o755)
	real := filepath.Join(repo, "cruise.json")
	write(t, real, "v0")
	path := filepath.Join(rig, "rig.json")
	relink(t, real, path)
	got, _ := watchPath(t, "config", path)

	write(t, real, "v1")
	expect(t, got, "v1")
	saveAtomic(t, real, "v2")
	expect(t, got, "v2")
	saveAtomic(t, real, "v3") // the folder is watched, not the file's first inode
	expect(t, got, "v3")
}

// The link pointed at another file in another folder: its content is
// reported, edits of the new file reload, edits of the old one do not.
func TestWatchSymlinkRetargeted(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"rig", "a", "b"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
	}
	oldFile, newFile := filepath.Join(root, "a", "rig.json"), filepath.Join(root, "b", "rig.json")
	write(t, oldFile, "old")
	write(t, newFile, "new")
	path := filepath.Join(root, "rig", "rig.json")
	relink(t, "../a/rig.json", path) // relative, as ln -s makes them
	got, _ := watchPath(t, "config", path)

	relink(t, "../b/rig.json", path)
	expect(t, got, "new")
	write(t, newFile, "new edited")
	expect(t, got, "new edited")
	write(t, oldFile, "old edited")
	quiet(t, got)
}

// A Kubernetes ConfigMap: rig.json -> ..data/rig.json, ..data -> a
// timestamped folder, swapped for a new one on every update. The swap
// reloads; so does an edit in the new folder (the link is resolved again).
func TestWatchKubernetesSwap(t *testing.T) {
	cfg := t.TempDir()
	v1 := filepath.Join(cfg, "..2026_01_01")
	os.Mkdir(v1, 0o755)
	write(t, filepath.Join(v1, "rig.json"), "v1")
	relink(t, filepath.Base(v1), filepath.Join(cfg, "..data"))
	path := filepath.Join(cfg, "rig.json")
	relink(t, "..data/rig.json", path)
	got, _ := watchPath(t, "config", path)

	v2 := filepath.Join(cfg, "..2026_01_02")
	os.Mkdir(v2, 0o755)
	write(t, filepath.Join(v2, "rig.json"), "v2")
	relink(t, filepath.Base(v2), filepath.Join(cfg, "..data"))
	os.RemoveAll(v1)
	expect(t, got, "v2")
	write(t, filepath.Join(v2, "rig.json"), "v2 edited")
	expect(t, got, "v2 edited")
}

// A config replaced by a folder is not back: it is
// warned about as a folder, never logged "back", and reported again only
// when a file is there once more. Before, "back" followed "unreadable"
// 5 ms later.
func TestWatchReplacedByFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rig.json")
	write(t, path, "v0")
	got, log := watchPath(t, "config", path)
	os.Remove(path)
	os.Mkdir(path, 0o755)
	log.WaitFor(t, `the config file is a folder now; the running config stays until it is back`)
	quiet(t, got) // three health checks
	if log.Has("the config file is back") {
		t.Fatalf("a folder was taken for the config coming back:\n%s", log)
	}
	os.Remove(path)
	write(t, path, "v1")
	expect(t, got, "v1")
	log.WaitFor(t, "the config file is back")
}

// The watcher says which file it watches: a deleted
// interface CSV is not "the config file".
func TestWatchNamesItsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signals.csv")
	write(t, path, "a,b\n")
	_, log := watchPath(t, "interface CSV", path)
	os.Remove(path)
	log.WaitFor(t, `msg="the interface CSV file is missing; the running config stays until it is back" file=`+path)
	if log.Has("config file") {
		t.Errorf("the CSV was called the config file:\n%s", log)
	}
}

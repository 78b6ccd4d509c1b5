package config

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher reports a config file's new content whenever it changes on disk.
//
// It watches the file's directory, not the file: editors save by writing a
// temporary file and renaming it over the old one, and a watch on the old
// inode would go quiet after the first save (fsnotify's README). Events for
// the file (or for Kubernetes' "..data" link) restart a short debounce
// timer; when it fires, the file is read and reported only if its bytes
// changed. A half-written file is simply reported too: loading it fails and
// the running plan stays, and the write that completes it is reported next.
//
// A path that is a symbolic link (a config kept in a repository and linked
// into the rig's folder, or a Kubernetes ConfigMap whose "..data" link is
// swapped) is followed: the folders of the links and of the file they lead
// to are watched too, and the links are resolved again on every event and
// every second, so an edit of the file they lead to, or a link pointed
// elsewhere, is a change like any other.
//
// It cannot die silently. The directory's parent is watched too, and the
// watch itself is checked every second: when the folder is deleted and
// created again, or renamed away and back, the watch is set up again (and
// the file read); when the file disappears, cannot be read or is replaced
// by a folder, a warning says so at once, and again when it is back. If
// inotify is unavailable, or the watcher stops, it polls once a second
// instead.
type Watcher struct {
	what              string // what the file is, for the log: "config", "interface CSV"
	path, dir, parent string
	debounce          time.Duration
	health            time.Duration
	log               *slog.Logger
	force             chan struct{}
	last              []byte
	dirInfo           os.FileInfo // the folder as last watched
	missing           bool        // the file is known to be missing or unreadable
	links             linkWatch   // where path's links lead
}

// NewWatcher watches the config file at path; debounce 0 means 20 ms. The
// debounce only lets an editor finish a burst of writes: a file caught
// half-written is refused by the reload and the write that completes it
// triggers the next one, so a short debounce costs nothing and keeps edits
// live within 100 ms even on a busy machine.
func NewWatcher(path string, debounce time.Duration, log *slog.Logger) *Watcher {
	return NewFileWatcher("config", path, debounce, log)
}

// NewFileWatcher is NewWatcher for a file the config depends on; what
// names it in the log ("the interface CSV file is missing").
func NewFileWatcher(what, path string, debounce time.Duration, log *slog.Logger) *Watcher {
	if debounce <= 0 {
		debounce = 20 * time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{what: what, path: filepath.Clean(path), debounce: debounce, health: time.Second, log: log, force: make(chan struct{}, 1)}
	w.dir = filepath.Dir(w.path)
	w.parent = filepath.Dir(w.dir)
	w.last, _ = readFile(w.path) // the content already running
	return w
}

// SetRunning sets the content the run is already using, read when the
// config was compiled: an edit saved between that read and the watch
// starting is then a change, reported once the watch is armed, and not
// mistaken for the running content.
func (w *Watcher) SetRunning(data []byte) { w.last = data }

// SetHealthInterval changes how often the watch itself is checked (1 s by
// default); tests make it short.
func (w *Watcher) SetHealthInterval(d time.Duration) { w.health = d }

// Force asks for the file to be reported at once even if unchanged (SIGHUP).
func (w *Watcher) Force() {
	select {
	case w.force <- struct{}{}:
	default:
	}
}

// Run reports changes to onChange until ctx ends. onChange runs on Run's
// goroutine, one call at a time.
func (w *Watcher) Run(ctx context.Context, onChange func(data []byte)) {
	fw, err := fsnotify.NewWatcher()
	var events <-chan fsnotify.Event
	var errs <-chan error
	poll := time.NewTicker(time.Hour)
	defer poll.Stop()
	if err != nil {
		w.log.Warn("cannot watch the "+w.what+"'s folder; polling the file every second", "file", w.path, "err", err)
		poll.Reset(time.Second)
	} else {
		defer fw.Close()
		events, errs = fw.Events, fw.Errors
		if !w.arm(fw) {
			w.log.Warn("cannot watch the "+w.what+"'s folder yet; trying again every second", "dir", w.dir)
		}
		w.links.follow(fw, w)
	}
	health := time.NewTicker(w.health)
	defer health.Stop()
	// A save before the watch was armed made no event: look once at the
	// start, then whenever writing settles.
	settle := time.NewTimer(w.debounce)
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				// The watcher itself stopped: never go quiet, poll instead.
				w.log.Warn("the "+w.what+" file watcher stopped; polling the file every second instead", "file", w.path)
				events, errs, fw = nil, nil, nil
				poll.Reset(time.Second)
				continue
			}
			name := filepath.Clean(ev.Name)
			switch {
			case name == w.dir && ev.Has(fsnotify.Remove|fsnotify.Rename):
				w.log.Warn("the "+w.what+"'s folder was removed or renamed; the running config stays; watching for it to come back", "dir", w.dir, "file", w.path)
				w.dirInfo = nil
			case name == w.dir && ev.Has(fsnotify.Create):
				if w.arm(fw) {
					// The file may have changed while the folder was away, or
					// be being written now: read it once writing settles.
					w.links.follow(fw, w)
					settle.Reset(w.debounce)
				}
			case w.concerns(name) && ev.Op != fsnotify.Chmod:
				// A link may point elsewhere now: follow it before reading.
				w.links.follow(fw, w)
				settle.Reset(w.debounce)
			}
		case err, ok := <-errs:
			if ok {
				// An overflowed queue may have lost the event that mattered.
				w.log.Warn("config watch", "err", err)
				settle.Reset(w.debounce)
			}
		case <-health.C:
			if fw != nil && !w.armed(fw) && w.arm(fw) {
				w.log.Info("watching the "+w.what+"'s folder again", "dir", w.dir)
				w.links.follow(fw, w)
				settle.Reset(w.debounce)
				continue
			}
			// A link changed where no watch could see it (a folder on the
			// way that is itself a link): read the file it leads to now.
			if fw != nil && w.links.follow(fw, w) {
				settle.Reset(w.debounce)
			}
			w.present()
		case <-poll.C:
			w.report(onChange, false)
		case <-settle.C:
			w.report(onChange, false)
		case <-w.force:
			w.report(onChange, true)
		}
	}
}

// arm (re)watches the folder, and its parent so that the folder coming
// back is seen at once. It reports whether the folder is watched.
func (w *Watcher) arm(fw *fsnotify.Watcher) bool {
	if w.parent != w.dir && !slices.Contains(fw.WatchList(), w.parent) {
		fw.Add(w.parent) // best effort: the health check covers its absence
	}
	fw.Remove(w.dir) // a stale watch on a folder that was replaced
	if err := fw.Add(w.dir); err != nil {
		w.dirInfo = nil
		return false
	}
	w.dirInfo, _ = os.Stat(w.dir)
	return true
}

// armed reports whether the folder watched is still the one at its path.
func (w *Watcher) armed(fw *fsnotify.Watcher) bool {
	if w.dirInfo == nil || !slices.Contains(fw.WatchList(), w.dir) {
		return false
	}
	fi, err := os.Stat(w.dir)
	return err == nil && os.SameFile(fi, w.dirInfo)
}

// concerns reports whether an event for name may change what path
// reads: the file itself, a link on the way to it, the file the links
// lead to, or Kubernetes' "..data" link beside it.
func (w *Watcher) concerns(name string) bool {
	return name == w.path || filepath.Dir(name) == w.dir && filepath.Base(name) == "..data" || w.links.concerns(name)
}

// errFolder says a folder stands where the file should be: it opens, but
// it is no config.
var errFolder = errors.New("a folder, not a file")

// present warns, once, when the file has gone missing, unreadable, or is
// a folder now.
func (w *Watcher) present() {
	f, err := os.Open(w.path)
	if err == nil {
		if fi, serr := f.Stat(); serr == nil && fi.IsDir() {
			err = &os.PathError{Op: "open", Path: w.path, Err: errFolder}
		}
		f.Close()
	}
	w.note(err)
}

// readFile reads the file at path, which must not be a folder.
func readFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, &os.PathError{Op: "read", Path: path, Err: errFolder}
	}
	return os.ReadFile(path)
}

// note tracks whether the file can be read, warning at once when it stops
// and saying when it is back.
func (w *Watcher) note(err error) {
	switch {
	case err != nil && !w.missing:
		w.missing = true
		why := "unreadable"
		switch {
		case errors.Is(err, os.ErrNotExist):
			why = "missing"
		case errors.Is(err, errFolder):
			why = "a folder now"
		}
		w.log.Warn("the "+w.what+" file is "+why+"; the running config stays until it is back", "file", w.path, "err", err)
	case err == nil && w.missing:
		w.missing = false
		w.log.Info("the "+w.what+" file is back", "file", w.path)
	}
}

func (w *Watcher) report(onChange func([]byte), force bool) {
	data, err := readFile(w.path)
	w.note(err)
	if err != nil {
		return
	}
	if !force && bytes.Equal(data, w.last) {
		return
	}
	w.last = data
	onChange(data)
}

package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
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
// If the directory cannot be watched (inotify limits), it polls once a
// second instead.
type Watcher struct {
	path     string
	debounce time.Duration
	log      *slog.Logger
	force    chan struct{}
	last     []byte
}

// NewWatcher watches path; debounce 0 means 20 ms. The debounce only lets
// an editor finish a burst of writes: a file caught half-written is refused
// by the reload and the write that completes it triggers the next one, so
// a short debounce costs nothing and keeps edits live within 100 ms even on
// a busy machine.
func NewWatcher(path string, debounce time.Duration, log *slog.Logger) *Watcher {
	if debounce <= 0 {
		debounce = 20 * time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{path: filepath.Clean(path), debounce: debounce, log: log, force: make(chan struct{}, 1)}
	w.last, _ = os.ReadFile(w.path) // the content already running
	return w
}

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
	if err == nil {
		if err = fw.Add(filepath.Dir(w.path)); err != nil {
			fw.Close()
		}
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	poll := time.NewTicker(time.Hour)
	defer poll.Stop()
	if err != nil {
		w.log.Warn("cannot watch the config's directory; polling it every second", "err", err)
		poll.Reset(time.Second)
	} else {
		defer fw.Close()
		events, errs = fw.Events, fw.Errors
	}
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			if (name != w.path && filepath.Base(name) != "..data") || ev.Op == fsnotify.Chmod {
				continue
			}
			settle.Reset(w.debounce)
		case err, ok := <-errs:
			if ok {
				w.log.Warn("config watch", "err", err)
			}
		case <-poll.C:
			w.report(onChange, false)
		case <-settle.C:
			w.report(onChange, false)
		case <-w.force:
			w.report(onChange, true)
		}
	}
}

func (w *Watcher) report(onChange func([]byte), force bool) {
	data, err := os.ReadFile(w.path)
	if err != nil {
		// Between an editor's rename steps the file may be briefly absent;
		// the event that recreates it comes next.
		w.log.Debug("config unreadable for now", "err", err)
		return
	}
	if !force && bytes.Equal(data, w.last) {
		return
	}
	w.last = data
	onChange(data)
}

package config

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/fsnotify/fsnotify"
)

// linkWatch follows a watched path's symbolic links: the links on the way,
// the file they lead to, and watches on their folders. Only a Watcher's
// Run goroutine uses it.
type linkWatch struct {
	links  []string // the links followed, the path first
	target string   // the file they lead to; "" while the path is no link
	dirs   []string // folders watched for them, beyond the path's own and its parent
}

// follow resolves w.path's links again, and moves the watches to the
// folders they now involve. It reports whether the links lead elsewhere
// than at the last call.
func (l *linkWatch) follow(fw *fsnotify.Watcher, w *Watcher) bool {
	links, target := resolve(w.path)
	changed := target != l.target || !slices.Equal(links, l.links)
	l.links, l.target = links, target
	var want []string
	for _, p := range append(slices.Clone(links), target) {
		if p == "" {
			continue
		}
		if d := filepath.Dir(p); !sameDir(d, append([]string{w.dir, w.parent}, want...)) {
			want = append(want, d)
		}
	}
	watched := fw.WatchList()
	var kept []string
	for _, d := range l.dirs {
		if slices.Contains(want, d) {
			kept = append(kept, d)
		} else {
			fw.Remove(d) // fails harmlessly for a folder already deleted
		}
	}
	for _, d := range want {
		if !slices.Contains(kept, d) || !slices.Contains(watched, d) {
			// Best effort: a folder that does not exist yet is retried at
			// the next event or health check.
			if fw.Add(d) == nil && !slices.Contains(kept, d) {
				kept = append(kept, d)
			}
		}
	}
	l.dirs = kept
	return changed
}

// concerns reports whether name is one of the links or the file they lead
// to.
func (l *linkWatch) concerns(name string) bool {
	return l.target != "" && (name == l.target || slices.Contains(l.links, name))
}

// resolve follows path's symbolic links: each link on the way, and the
// file they lead to with every link among its folders resolved too
// (Kubernetes' "..data"). A path that is no link, and has none among its
// folders, gives nothing.
func resolve(path string) (links []string, target string) {
	p := path
	for range 64 { // a loop of links ends here; reading the file reports it
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		dest, err := os.Readlink(p)
		if err != nil {
			break
		}
		links = append(links, p)
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = filepath.Clean(dest)
	}
	if t, err := filepath.EvalSymlinks(p); err == nil {
		p = t
	}
	if p == path {
		return nil, ""
	}
	return links, p
}

// sameDir reports whether folder d is one of dirs, by path or by identity
// (two paths to one folder would share one inotify watch, and removing
// either would end both).
func sameDir(d string, dirs []string) bool {
	if slices.Contains(dirs, d) {
		return true
	}
	fi, err := os.Stat(d)
	if err != nil {
		return false
	}
	for _, o := range dirs {
		if oi, err := os.Stat(o); err == nil && os.SameFile(fi, oi) {
			return true
		}
	}
	return false
}

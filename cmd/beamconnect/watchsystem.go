package main

import (
	"context"
	"errors"
	"os"
	"sync"

	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/ports"
	"beamconnect/system"
)

// watchSystem reloads a running system when one of its files changes
// (unless noWatch), and on SIGHUP: an .ssp archive written again; an
// .ssd, the parameter sets and mappings it binds, BeamNG's config. A
// reload is the system checked whole again, then the run moved to it as a
// config's reload moves it (coupling.Session.Reload): BeamNG's config,
// and each FMU's parameters retuned live, all or nothing. A change of the
// system's structure (components, connectors, connections) is refused:
// it needs a restart. Every outcome is logged, as watchConfig logs it.
func watchSystem(ctx context.Context, c *call, sess *coupling.Session, path string, noWatch bool, hup <-chan os.Signal, obs reloadObserver) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	running, _, err := system.Load(path)
	if err != nil || running == nil {
		c.log.Warn("the system cannot be read again: its files are not watched", "file", path, "err", err)
		cancel()
		return func() {}
	}
	var mu sync.Mutex // one reload at a time, whichever file changed
	reload := func() {
		mu.Lock()
		defer mu.Unlock()
		// Refused before the session saw it: counted as its refusals are.
		ch, ds, err := system.Reload(path, running, sess.Reload, sess.RefuseReload)
		if len(ds) > 0 {
			err = ds
		}
		logReload(c, path, "system", ch, err, sess.Plan().Config, obs)
	}
	files := []string{path}
	if !running.Pkg.Archive {
		files = append(append(files, running.ParamFiles...), running.ConfigFile)
	}
	running.Close() // its structure is what is kept: the files are read anew
	// (Restructured compares with what Load read, not with the files)
	if !noWatch {
		seen := map[string]bool{}
		for _, f := range files {
			if seen[f] {
				continue
			}
			seen[f] = true
			w := config.NewFileWatcher("system's file", f, 0, c.log)
			if data, err := os.ReadFile(f); err == nil {
				w.SetRunning(data)
			}
			wg.Go(func() { w.Run(ctx, func([]byte) { reload() }) })
		}
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				c.log.Info("SIGHUP: reloading the system", "file", path)
				reload()
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// logReload logs a reload's outcome, of a config or a system (what): the
// changes applied, or why it was refused; data is the config's text.
func logReload(c *call, path, what string, ch ports.Changes, err error, data []byte, obs reloadObserver) {
	var ds config.Diagnostics
	switch {
	case errors.As(err, &ds):
		c.log.Warn(what+" reload refused; the running "+what+" stays", "file", path, "errors", ds.Errors())
		var why []string
		for _, d := range ds {
			c.log.Warn(d.String())
			why = append(why, d.String())
		}
		if obs != nil {
			obs.Refused(why)
		}
	case err != nil:
		c.log.Warn(what+" reload refused; the running "+what+" stays", "file", path, "why", err.Error())
		if obs != nil {
			obs.Refused([]string{err.Error()})
		}
	case ch.None():
		c.log.Info(what+" rewritten with nothing a run can see changed", "file", path)
	default:
		lines := ch.Live
		if ch.Params != "" {
			lines = append(lines, ch.Params)
		}
		c.log.Info(what+" reloaded", "file", path, "changes", len(lines))
		for _, l := range lines {
			c.log.Info("  " + l)
		}
		if obs != nil {
			obs.Reloaded(lines, data)
		}
	}
}

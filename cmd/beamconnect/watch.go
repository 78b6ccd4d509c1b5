package main

import (
	"context"
	"os"
	"sync"

	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/ports"
	"beamconnect/ssp"
)

// watchConfig reloads the config when its file changes (unless noWatch),
// or any vehicle's interface CSV does, and on SIGHUP (hup). Every outcome is
// logged: the diff of an applied reload, or each reason a reload was
// refused, with file:line:col.
func watchConfig(ctx context.Context, c *call, sess *coupling.Session, path string, plan *ports.Plan, noWatch bool, hup <-chan os.Signal, obs reloadObserver) func() {
	if ssp.IsSystem(path) {
		return watchSystem(ctx, c, sess, path, noWatch, hup, obs) // watchsystem.go
	}
	ctx, cancel := context.WithCancel(ctx)
	w := config.NewWatcher(path, 0, c.log)
	w.SetRunning(plan.Config)
	var wg sync.WaitGroup
	reload := func(data []byte) {
		// The file's part here, the run's in the session: a config that
		// does not parse or compile is refused before it reaches it.
		var ch ports.Changes
		p, err := config.ParsePlan(path, data)
		if err != nil {
			sess.RefuseReload()
		} else {
			ch, err = sess.Reload(p)
		}
		logReload(c, path, "config", ch, err, data, obs)
	}
	if !noWatch {
		// A Gen 2 config depends on its vehicles' CSVs too: an edit of one
		// re-checks the config, and is refused unless the layout stays.
		seen := map[string]bool{}
		for _, v := range plan.Vehicles {
			if v.CSV == nil || seen[v.CSV.Path] {
				continue
			}
			seen[v.CSV.Path] = true
			csv := v.CSV.Path
			cw := config.NewFileWatcher("interface CSV", csv, 0, c.log)
			wg.Go(func() {
				cw.Run(ctx, func([]byte) {
					c.log.Info("an interface CSV changed: re-checking the config", "csv", csv)
					w.Force()
				})
			})
		}
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				c.log.Info("SIGHUP: reloading the config", "file", path)
				w.Force()
				if noWatch {
					if data, err := os.ReadFile(path); err == nil {
						reload(data)
					} else {
						c.log.Warn("config unreadable", "err", err)
					}
				}
			}
		}
	})
	wg.Go(func() {
		if noWatch {
			<-ctx.Done()
			return
		}
		w.Run(ctx, reload)
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

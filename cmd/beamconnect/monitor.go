package main

import (
	"context"
	"net"
	"os"
	"sync"

	"beamconnect/coupling"
	"beamconnect/internal/scope"
	"beamconnect/models"
	"beamconnect/monitor"
	"beamconnect/ports"
)

// Scope sizing: at most scopeRate samples a second are kept, for
// scopeSeconds, and never more than scopeValues values in all.
const (
	scopeRate    = 500
	scopeSeconds = 130
	scopeValues  = 4 << 20
)

// httpMonitor is run --http: bound before the coupling starts, so a busy
// port is a usage error at once, and served while it runs.
type httpMonitor struct {
	ln   net.Listener
	ring *scope.Ring
	srv  *monitor.Server
	wg   sync.WaitGroup
}

// prepareMonitor binds --http and hooks the scope and status history into
// opts. It returns nil when --http is not given.
func prepareMonitor(addr string, plan *ports.Plan, opts *coupling.Options) (*httpMonitor, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := monitor.Listen(addr)
	if err != nil {
		return nil, err
	}
	var vars []models.Variable
	if sm, ok := opts.Model.(models.Sampler); ok {
		vars = sm.Variables()
	}
	cols := coupling.ScopeColumns(plan, vars)
	every := max(1, int(1/(plan.Period*scopeRate)+0.5))
	rate := float64(len(plan.Vehicles)) / plan.Period / float64(every)
	capacity := min(int(rate*scopeSeconds), scopeValues/len(cols))
	m := &httpMonitor{ln: ln, ring: scope.New(cols, capacity, every)}
	opts.Scope = m.ring
	opts.OnStatus = func(v int, s ports.Status) {
		// Set before any loop runs (start is called before Run).
		if m.srv != nil {
			m.srv.StatusChanged(v, s)
		}
	}
	return m, nil
}

// start serves the page until ctx ends.
func (m *httpMonitor) start(ctx context.Context, c *call, plan *ports.Plan, sess *coupling.Session, hosts []string) {
	text, _ := os.ReadFile(plan.Source)
	m.srv = monitor.New(monitor.Options{Plan: plan, Session: sess, Ring: m.ring, Config: text, Log: c.log, Hosts: hosts})
	c.log.Info("live page", "url", "http://"+m.ln.Addr().String()+"/", "metrics", "http://"+m.ln.Addr().String()+"/metrics")
	m.wg.Go(func() {
		if err := m.srv.Serve(ctx, m.ln); err != nil {
			c.log.Error("the live page stopped", "err", err)
		}
	})
}

// wait waits for the server to stop (ctx ended).
func (m *httpMonitor) wait() {
	if m != nil {
		m.wg.Wait()
	}
}

// observer is what watchConfig tells of each reload, or nil.
func (m *httpMonitor) observer() reloadObserver {
	if m == nil || m.srv == nil {
		return nil
	}
	return m.srv
}

// reloadObserver hears of reloads applied and refused.
type reloadObserver interface {
	Reloaded(changes []string, config []byte)
	Refused(why []string)
}

package coupling

import (
	"errors"
	"fmt"
	"strings"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/contracts"
	"beamconnect/models"
	"beamconnect/ports"
)

// ReloadConfig is a whole reload of the config file at path with content
// data: parse and check it, compile a plan, and hand it to Reload. Nothing
// is applied unless every step succeeds; the error says why (a
// config.Diagnostics for a bad file, with file:line:col).
func (c *Coupling) ReloadConfig(path string, data []byte) (ports.Changes, error) {
	cfg, err := config.Parse(path, data)
	if err != nil {
		c.stats.ReloadErrors.Add(1)
		return ports.Changes{}, err
	}
	p, err := ports.Compile(cfg)
	if err != nil {
		c.stats.ReloadErrors.Add(1)
		return ports.Changes{}, err
	}
	return c.Reload(p)
}

// Reload checks a compiled plan against the running one, as nats-server
// validates a whole reload before applying any of it: if anything that
// cannot change live changed, nothing is applied and the error names it.
// Otherwise the plan replaces the running one between two messages, so
// every reply is built from one plan only. Safe to call while Run runs.
func (c *Coupling) Reload(p *ports.Plan) (ports.Changes, error) {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	ch := ports.Diff(c.latest.Load(), p)
	if len(ch.RestartOnly) > 0 {
		c.stats.ReloadErrors.Add(1)
		return ch, fmt.Errorf("reload refused, nothing applied: these cannot change while running (restart beamconnect for them): %s",
			strings.Join(ch.RestartOnly, "; "))
	}
	if err := models.Check(p.Model, p); err != nil {
		c.stats.ReloadErrors.Add(1)
		return ch, fmt.Errorf("reload refused, nothing applied: %w", err)
	}
	if len(p.Vehicles) != 1 {
		c.stats.ReloadErrors.Add(1)
		return ch, errors.New("reload refused: one vehicle per run is supported")
	}
	if ch.None() {
		return ch, nil
	}
	c.latest.Store(p)
	c.pending.Store(p)
	return ch, nil
}

// Plan is the plan replies are built from right now.
func (c *Coupling) Plan() *ports.Plan { return c.active.Load() }

// applyPending swaps in a reloaded plan, if there is one. It runs on the
// loop goroutine, between two messages. Port values carry over for fields
// that still carry the same thing (the same signal, or the same meta value
// of the same contract), so the model's inputs and the outputs it reads do
// not jump; the model rebinds and keeps its state.
func (c *Coupling) applyPending() {
	p := c.pending.Swap(nil)
	if p == nil {
		return
	}
	old := c.plan
	keep := map[string][]float64{}
	save := func(dir beamng.Direction, list []ports.Port, vecs [][]float64) {
		for i := range list[1:] {
			pt := &list[i+1]
			for fi := range pt.Fields {
				f := &pt.Fields[fi]
				key := dir.String() + ":" + ports.FieldKey(dir, f, contractName(old, pt))
				keep[key] = vecs[pt.Number][f.Offset : f.Offset+f.Width]
			}
		}
	}
	save(beamng.FromBeamNG, old.Outputs, c.outs)
	save(beamng.ToBeamNG, old.Inputs, c.ins)
	outs := [][]float64{c.outs[0]}
	ins := [][]float64{c.ins[0]}
	restore := func(dir beamng.Direction, list []ports.Port, vecs *[][]float64) {
		for i := range list[1:] {
			pt := &list[i+1]
			v := initial(*pt)
			for fi := range pt.Fields {
				f := &pt.Fields[fi]
				// A changed initial value is the user's intent: apply it.
				if was, ok := keep[dir.String()+":"+ports.FieldKey(dir, f, contractName(p, pt))]; ok && sameInitial(old, dir, f, p) {
					copy(v[f.Offset:f.Offset+f.Width], was)
				}
			}
			*vecs = append(*vecs, v)
		}
	}
	restore(beamng.FromBeamNG, p.Outputs, &outs)
	restore(beamng.ToBeamNG, p.Inputs, &ins)

	// Contracts keep their state by name.
	in := make([]contracts.Incoming, len(p.Contracts))
	for i, ct := range p.Contracts {
		in[i] = contracts.Incoming{Schedule: ct.Schedule, Overdue: ct.Overdue}
		in[i].Start(c.sync.IdleTime())
		for j, oc := range old.Contracts {
			if oc.Name == ct.Name {
				st := c.in[j]
				st.Schedule, st.Overdue = ct.Schedule, ct.Overdue
				in[i] = st
			}
		}
	}
	if old.TimeSync != p.TimeSync || old.TimeDilation != p.TimeDilation {
		c.sync.Retune(p.TimeSync, p.TimeDilation)
	}
	if rb, ok := c.model.(models.Rebinder); ok {
		if err := rb.Rebind(p); err != nil {
			// Reload checked the binding; this is not expected.
			c.log.Error("model rebind failed; keeping the previous plan", "err", err)
			return
		}
	}
	c.plan, c.outs, c.ins, c.in = p, outs, ins, in
	c.active.Store(p)
	c.stats.Reloads.Add(1)
	if c.opt.Record != nil {
		c.opt.Record.Header(p)
	}
	if c.opt.Scope != nil {
		c.opt.Scope.SetColumns(ScopeColumns(p))
	}
}

// sameInitial reports whether the field's initial value is unchanged (or
// the field is new to the plan).
func sameInitial(old *ports.Plan, dir beamng.Direction, f *ports.Field, p *ports.Plan) bool {
	list := old.Outputs
	if dir == beamng.ToBeamNG {
		list = old.Inputs
	}
	for _, pt := range list[1:] {
		for fi := range pt.Fields {
			of := &pt.Fields[fi]
			if of.Source == f.Source && of.Slot == f.Slot && of.Meta == f.Meta && of.Width == f.Width && of.Vehicle == f.Vehicle {
				return of.Initial == f.Initial
			}
		}
	}
	return true
}

func contractName(p *ports.Plan, pt *ports.Port) string {
	if pt.Contract < 0 {
		return ""
	}
	return p.Contracts[pt.Contract].Name
}

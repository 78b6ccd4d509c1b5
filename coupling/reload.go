package coupling

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"beamconnect/beamng"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
)

// ReloadConfig is a whole reload of the config file at path with content
// data: parse and check it, compile a plan, and hand it to Reload. Nothing
// is applied unless every step succeeds; the error says why (a
// config.Diagnostics for a bad file, with file:line:col).
func (s *Session) ReloadConfig(path string, data []byte) (ports.Changes, error) {
	cfg, err := config.Parse(path, data)
	if err != nil {
		s.stats.inc(ReloadErrors)
		return ports.Changes{}, err
	}
	p, err := ports.Compile(cfg)
	if err != nil {
		s.stats.inc(ReloadErrors)
		return ports.Changes{}, err
	}
	return s.Reload(p)
}

// Reload checks a compiled plan against the running one, as nats-server
// validates a whole reload before applying any of it: if anything that
// cannot change live changed, nothing is applied and the error names it.
// Otherwise the plan replaces the running one between two messages, for
// every vehicle at once, so every reply is built from one plan only. Safe
// to call while Run runs.
func (s *Session) Reload(p *ports.Plan) (ports.Changes, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	ch := ports.Diff(s.latest, p)
	if err := s.check(ch, p); err != nil {
		s.stats.inc(ReloadErrors)
		return ch, fmt.Errorf("reload refused, nothing applied: %w", err)
	}
	if ch.None() {
		return ch, nil
	}
	s.latest = p
	s.stage.pending.Store(p)
	return ch, nil
}

// check says why a new plan cannot replace the running one, if it cannot.
func (s *Session) check(ch ports.Changes, p *ports.Plan) error {
	restart := ch.RestartOnly
	if ch.Params != "" {
		t, ok := s.stage.model.(models.Tuner)
		switch {
		case s.opt.ModelName != p.Model:
			restart = append(restart, ch.Params+" (the model running is "+s.opt.ModelName+", not the config's)")
		case !ok:
			restart = append(restart, ch.Params+" (model "+p.Model+" takes its parameters at the start only)")
		default:
			if err := t.CheckTune(p.ModelParams); err != nil {
				return err
			}
		}
	}
	if len(restart) > 0 {
		return fmt.Errorf("these cannot change while running (restart beamconnect for them): %s", strings.Join(restart, "; "))
	}
	var bad []string
	for _, f := range models.Validate(s.opt.ModelName, p.ModelParams, p) {
		if !f.Warning {
			bad = append(bad, f.Error())
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	if len(p.Vehicles) != len(s.links) {
		return errors.New("the number of vehicles changed: restart beamconnect")
	}
	return nil
}

// apply swaps in a reloaded plan, under the stage's lock, between two
// messages. Port values carry over for fields that still carry the same
// thing (the same signal of the same vehicle, or the same meta value of the
// same contract), so the model's inputs and the outputs it reads do not
// jump; the model rebinds and keeps its state, and takes new parameters.
// The links move to the plan at their next message.
func (st *stage) apply(p *ports.Plan) {
	old := st.plan
	keep := map[string][]float64{}
	save := func(dir beamng.Direction, list []ports.Port, vecs [][]float64) {
		for i := range list[1:] {
			pt := &list[i+1]
			for fi := range pt.Fields {
				f := &pt.Fields[fi]
				keep[dir.String()+":"+ports.FieldKey(dir, f, contractName(old, pt))] = vecs[pt.Number][f.Offset : f.Offset+f.Width]
			}
		}
	}
	save(beamng.FromBeamNG, old.Outputs, st.outs)
	save(beamng.ToBeamNG, old.Inputs, st.ins)
	restore := func(dir beamng.Direction, list []ports.Port, port0 []float64) [][]float64 {
		vecs := [][]float64{port0}
		for i := range list[1:] {
			pt := &list[i+1]
			v := initial(*pt)
			for fi := range pt.Fields {
				f := &pt.Fields[fi]
				// A changed initial value is the user's intent: apply it.
				if was, ok := keep[dir.String()+":"+ports.FieldKey(dir, f, contractName(p, pt))]; ok && sameInitial(old, dir, f) {
					copy(v[f.Offset:f.Offset+f.Width], was)
				}
			}
			vecs = append(vecs, v)
		}
		return vecs
	}
	outs := restore(beamng.FromBeamNG, p.Outputs, st.outs[0])
	ins := restore(beamng.ToBeamNG, p.Inputs, st.ins[0])
	if rb, ok := st.model.(models.Rebinder); ok {
		if err := rb.Rebind(p); err != nil {
			// Reload checked the binding; this is not expected.
			st.log.Error("model rebind failed; keeping the previous plan", "err", err)
			return
		}
	}
	if t, ok := st.model.(models.Tuner); ok && !reflect.DeepEqual(old.ModelParams, p.ModelParams) {
		t.Tune(p.ModelParams)
	}
	st.plan, st.outs, st.ins = p, outs, ins
	st.active.Store(p)
	st.stats.inc(Reloads)
	if st.onReload != nil {
		st.onReload(p)
	}
}

// sameInitial reports whether the field's initial value is unchanged (or
// the field is new to the plan).
func sameInitial(old *ports.Plan, dir beamng.Direction, f *ports.Field) bool {
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

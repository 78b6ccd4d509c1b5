package coupling

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"beamconnect/beamng"
	"beamconnect/models"
	"beamconnect/ports"
)

// RefuseReload counts a reload refused before it came to the session: a
// config edit that does not parse or compile (which is the caller's to
// do: the session takes plans, never files).
func (s *Session) RefuseReload() { s.stats.inc(ReloadErrors) }

// Reload moves the run to a compiled plan, whole or not at all, as Caddy
// provisions a config before it swaps it in. Everything that can fail is
// done first, off the message path, while the coupling goes on with the
// running plan: what cannot change live (nats-server's check of a whole
// reload), the model's rebind to the new ports and its new parameters
// (tried where the model can refuse them), the new port vectors. Only then
// is it swapped in between two messages, for every vehicle at once, by a
// step that cannot fail, and Reload returns once it has been (so the next
// reload is compared with what runs). A refused reload changes nothing:
// the running plan, the model and its parameters, what the next reload is
// compared with. Safe to call while Run runs.
func (s *Session) Reload(p *ports.Plan) (ports.Changes, error) { return s.reloads.apply(p) }

// reloads are a session's: one at a time, each compared with the newest
// plan accepted (latest), prepared, and submitted to the stage.
type reloads struct {
	mu       sync.Mutex
	latest   *ports.Plan
	opt      *Options
	stage    *stage
	stats    *Stats
	vehicles int
}

// apply is Session.Reload.
func (r *reloads) apply(p *ports.Plan) (ports.Changes, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opt.RealTime && !p.RealTime {
		p = p.InRealTime() // the run's mode, as the command line set it
	}
	ch := ports.Diff(r.latest, p)
	if ch.None() {
		return ch, nil
	}
	pr, err := r.prepare(ch, p)
	if err != nil {
		r.stats.inc(ReloadErrors)
		return ch, fmt.Errorf("reload refused, nothing applied: %w", err)
	}
	r.stage.submit(pr)
	r.latest = p
	return ch, nil
}

// prepared is a reload ready to be swapped in: the plan, the model's
// commit, the new port vectors (port 0 aside, which carries over) and how
// the running values move into them.
type prepared struct {
	plan      *ports.Plan
	commit    func()
	outs, ins [][]float64
	loops     *controlLoops
	outMoves  []move
	inMoves   []move
	swappedIn chan struct{}
}

// move copies a field's running values to its place in the new vectors.
type move struct{ fromPort, from, toPort, to, width int }

// prepare does all of a reload that can fail, or says why it cannot be.
func (r *reloads) prepare(ch ports.Changes, p *ports.Plan) (*prepared, error) {
	name := r.opt.ModelName
	restart := ch.RestartOnly
	if ch.Params != "" && name != p.Model {
		restart = append(restart, ch.Params+" (the model running is "+name+", not the config's)")
	}
	if len(restart) > 0 {
		return nil, fmt.Errorf("these cannot change while running (restart beamconnect for them): %s", strings.Join(restart, "; "))
	}
	if len(p.Vehicles) != r.vehicles {
		return nil, errors.New("the number of vehicles changed: restart beamconnect")
	}
	rb, ok := r.stage.model.(models.Rebinder)
	if !ok {
		return nil, fmt.Errorf("model %s cannot move to a reloaded config while it runs: restart beamconnect for this change", name)
	}
	commit, err := rb.Rebind(p, r.params(r.latest), r.params(p))
	if err != nil {
		return nil, err
	}
	loops, err := newControlLoops(p, setpoints(r.opt.Params, p))
	if err != nil {
		return nil, err
	}
	pr := &prepared{plan: p, commit: commit, loops: loops, swappedIn: make(chan struct{})}
	old := r.latest
	pr.outs, pr.outMoves = carry(beamng.FromBeamNG, old, p, old.Outputs, p.Outputs)
	pr.ins, pr.inMoves = carry(beamng.ToBeamNG, old, p, old.Inputs, p.Inputs)
	return pr, nil
}

// params are the modelParams of plan p that the running model takes: the
// config's, unless the model running is another (run --model).
func (r *reloads) params(p *ports.Plan) models.Params {
	if r.opt.ModelName != p.Model {
		return nil
	}
	return p.ModelParams
}

// carry makes the new plan's port vectors (ports 1 on, at their initial
// values) and the moves that carry the running values over, for fields
// that still carry the same thing (the same signal of the same vehicle, or
// the same meta value of the same contract) with an unchanged initial
// value, so the model's inputs and the outputs it reads do not jump. A
// changed initial value is the user's intent: it applies.
func carry(dir beamng.Direction, old, p *ports.Plan, was, now []ports.Port) ([][]float64, []move) {
	at := map[string]move{}
	for i := range was[1:] {
		pt := &was[i+1]
		for fi := range pt.Fields {
			f := &pt.Fields[fi]
			at[ports.FieldKey(dir, f, contractName(old, pt))] = move{fromPort: pt.Number, from: f.Offset, width: f.Width}
		}
	}
	vecs := [][]float64{nil} // port 0 carries over as it is
	var moves []move
	for i := range now[1:] {
		pt := &now[i+1]
		vecs = append(vecs, initial(*pt))
		for fi := range pt.Fields {
			f := &pt.Fields[fi]
			mv, ok := at[ports.FieldKey(dir, f, contractName(p, pt))]
			if ok && mv.width == f.Width && sameInitial(old, dir, f) {
				mv.toPort, mv.to = pt.Number, f.Offset
				moves = append(moves, mv)
			}
		}
	}
	return vecs, moves
}

// submit hands a prepared reload to the running links and waits until one
// has swapped it in; with no run in progress it swaps it in at once.
func (st *stage) submit(r *prepared) {
	st.mu.Lock()
	if !st.running {
		st.swap(r)
		st.mu.Unlock()
		return
	}
	st.reload.Store(r)
	st.mu.Unlock()
	for {
		select {
		case <-r.swappedIn:
			return
		case <-time.After(idleStep):
			// The links enter the stage at every message and at least
			// every idleStep while BeamNG is silent; one that has ended
			// its run leaves the swap to this goroutine.
			st.mu.Lock()
			if !st.running && st.reload.Load() == r {
				st.swap(st.reload.Swap(nil))
			}
			st.mu.Unlock()
		}
	}
}

// begin and end mark the run: while it runs, reloads are swapped in by
// the links between two messages.
func (st *stage) begin() {
	st.mu.Lock()
	st.running = true
	st.mu.Unlock()
}

func (st *stage) end() {
	st.mu.Lock()
	st.running = false
	if r := st.reload.Swap(nil); r != nil {
		st.swap(r)
	}
	st.mu.Unlock()
}

// swap puts a prepared reload in force, under the stage's lock, between
// two messages: the running values move into the new vectors, the model
// switches over, and the plan replies are built from is the new one. It
// cannot fail. The links move to the plan at their next message.
func (st *stage) swap(r *prepared) {
	r.outs[0], r.ins[0] = st.outs[0], st.ins[0]
	for _, mv := range r.outMoves {
		copy(r.outs[mv.toPort][mv.to:mv.to+mv.width], st.outs[mv.fromPort][mv.from:mv.from+mv.width])
	}
	for _, mv := range r.inMoves {
		copy(r.ins[mv.toPort][mv.to:mv.to+mv.width], st.ins[mv.fromPort][mv.from:mv.from+mv.width])
	}
	r.commit()
	st.plan, st.outs, st.ins = r.plan, r.outs, r.ins
	r.loops.carry(st.loops)
	st.loops = r.loops
	st.shown.Store(r.loops)
	st.fresh.reads = modelReads(st.model, r.plan)
	st.active.Store(r.plan)
	st.stats.inc(Reloads)
	st.useVariables(r.plan) // the commit may have changed them
	if st.onLayout != nil {
		st.onLayout(r.plan, st.vars.list)
	}
	close(r.swappedIn)
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

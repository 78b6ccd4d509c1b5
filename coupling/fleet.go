package coupling

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"beamconnect/beamng"
	"beamconnect/ports"
	"beamconnect/relative"
)

// shared is what the links of several vehicles share: one model, one set
// of port vectors, and the lock under which one vehicle's message at a
// time fills its outputs, steps the model and reads its controls.
//
// Pairing (spec §4a): each vehicle's message steps the model at once, with
// that vehicle's fresh data and every other vehicle's latest (at most one
// period old, since every vehicle sends once a period). No vehicle's reply
// ever waits for another vehicle's message, so the simulation, which
// freezes while any vehicle's controller blocks, never waits on a pairing:
// the only wait is this lock, held for one model step.
type shared struct {
	mu       sync.Mutex
	outs     [][]float64
	ins      [][]float64
	links    []*Coupling
	lastT    float64 // the model's time never goes back, whichever vehicle steps it
	panicked error   // a panic in the model stops it for every vehicle

	// Each vehicle's latest position, heading and velocity, for the
	// cross-vehicle properties; slots says where they are in a message.
	state []relative.State
	seen  []bool
	slots [7]int // posX posY posZ yaw velX velY groundspeed; 0 when the layout lacks one
}

// capture keeps vehicle v's state from its message, under the lock.
func (sh *shared) capture(v int, msg []float64) {
	at := func(i int) float64 {
		if i <= 0 || i >= len(msg) {
			return 0
		}
		return msg[i]
	}
	s := &sh.state[v]
	s.X, s.Y, s.Z, s.Yaw = at(sh.slots[0]), at(sh.slots[1]), at(sh.slots[2]), at(sh.slots[3])
	s.VX, s.VY, s.Speed = at(sh.slots[4]), at(sh.slots[5]), at(sh.slots[6])
	sh.seen[v] = true
}

// relative computes a cross-vehicle field from both vehicles' latest
// states: the other's is at most one period old (it sends once a period).
func (sh *shared) relative(f *ports.Field) float64 {
	if !sh.seen[f.Vehicle] || !sh.seen[f.Other] {
		return f.Invalid
	}
	v, ok := f.Relative.Compute(sh.state[f.Vehicle], sh.state[f.Other])
	if !ok || v-v != 0 {
		return f.Invalid
	}
	return v
}

func (c *Coupling) lockShared() {
	if c.sh != nil {
		c.sh.mu.Lock()
	}
}

func (c *Coupling) unlockShared() {
	if c.sh != nil {
		c.sh.mu.Unlock()
	}
}

// directive reads port 0's connection directive (shared by every vehicle).
func (c *Coupling) directive() bool {
	if c.sh == nil {
		return c.ins[0][0] != 0
	}
	c.sh.mu.Lock()
	d := c.ins[0][0] != 0
	c.sh.mu.Unlock()
	return d
}

// portStatus is port 0's connection status: this vehicle's, or with
// several vehicles the coupling's as a whole: an error if any vehicle has
// one, connected only when every vehicle is.
func (c *Coupling) portStatus() Status {
	if c.sh == nil {
		return c.Status()
	}
	return c.sh.status()
}

func (sh *shared) status() Status {
	all := Connected
	for _, l := range sh.links {
		switch s := l.Status(); {
		case s == Error:
			return Error
		case s == Disconnecting:
			all = Disconnecting
		case s == Connecting && all != Disconnecting:
			all = Connecting
		case s == Unconnected && all == Connected:
			all = Unconnected
		case s == Unknown && all == Connected:
			all = Unknown
		}
	}
	return all
}

// modelTime keeps the model's time monotonic across vehicles: their
// clocks (remote times count from each controller's own load) differ.
func (c *Coupling) modelTime(t float64) float64 {
	if c.sh == nil {
		return t
	}
	if t < c.sh.lastT {
		return c.sh.lastT
	}
	c.sh.lastT = t
	return t
}

// Fleet couples every vehicle of a config: one link (socket pair, reply
// ids, status, counters) per vehicle, one model for all of them.
type Fleet struct {
	Links []*Coupling
	sh    *shared
}

// NewFleet prepares the coupling of every vehicle of opt.Plan; it binds
// nothing yet. opt.Local, when set, is bound for every vehicle (port 0:
// a free port each); opt.Remote is ignored: set each link's with SetRemote.
func NewFleet(opt Options) (*Fleet, error) {
	p := opt.Plan
	if p == nil || opt.Model == nil {
		return nil, errors.New("coupling: a plan and a model are needed")
	}
	if len(p.Vehicles) == 1 {
		c, err := New(opt)
		if err != nil {
			return nil, err
		}
		return &Fleet{Links: []*Coupling{c}}, nil
	}
	sh := &shared{state: make([]relative.State, len(p.Vehicles)), seen: make([]bool, len(p.Vehicles))}
	for i, name := range []string{"posX", "posY", "posZ", "yaw", "velX", "velY", "groundspeed"} {
		if s, ok := p.Vehicles[0].Layout.Find(beamng.FromBeamNG, name); ok {
			sh.slots[i] = s.Index
		}
	}
	for _, pt := range p.Outputs {
		sh.outs = append(sh.outs, initial(pt))
	}
	for _, pt := range p.Inputs {
		sh.ins = append(sh.ins, initial(pt))
	}
	f := &Fleet{sh: sh}
	log := opt.Log
	for v, veh := range p.Vehicles {
		o := opt
		o.Remote = veh.Remote
		if log != nil {
			o.Log = log.With("vehicle", veh.Name)
		}
		c := newLink(o, v, sh)
		f.Links = append(f.Links, c)
	}
	sh.links = f.Links
	return f, nil
}

// Bind binds every vehicle's local address; the errors of those that
// failed are joined (Run retries them with backoff).
func (f *Fleet) Bind() error {
	var errs []error
	for _, c := range f.Links {
		if err := c.Bind(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run runs every vehicle's link until ctx ends.
func (f *Fleet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.Links))
	for i, c := range f.Links {
		wg.Go(func() { errs[i] = c.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Status is port 0's status: the coupling's as a whole.
func (f *Fleet) Status() Status {
	if f.sh == nil {
		return f.Links[0].Status()
	}
	return f.sh.status()
}

// Name is vehicle v's name (its remoteObject).
func (f *Fleet) Name(v int) string { return f.Links[v].plan.Vehicles[v].Name }

// Faults lists what went wrong, each vehicle's faults named by vehicle.
func (f *Fleet) Faults() []string {
	if f.sh == nil {
		return f.Links[0].Faults()
	}
	var out []string
	for v, c := range f.Links {
		for _, s := range c.Faults() {
			out = append(out, fmt.Sprintf("vehicle %q: %s", f.Name(v), s))
		}
	}
	return out
}

// ReloadConfig reloads a single vehicle's config; with several vehicles a
// reload is refused for now: restart to change the config.
func (f *Fleet) ReloadConfig(path string, data []byte) (ports.Changes, error) {
	if f.sh == nil {
		return f.Links[0].ReloadConfig(path, data)
	}
	for _, c := range f.Links {
		c.stats.ReloadErrors.Add(1)
	}
	return ports.Changes{}, errors.New("reload refused, nothing applied: a config with several vehicles cannot be reloaded while running yet; restart beamconnect")
}

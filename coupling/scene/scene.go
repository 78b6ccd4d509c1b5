// Package scene runs BeamNG's side of a coupling session in this
// process: a vehicle per link on loopback ports, all in one physics loop,
// as BeamNG steps every vehicle of a scene together. `run --emulate`, the
// fleet bench and the soak stand on it.
package scene

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/ports"
)

// Options shape the scene.
type Options struct {
	// FreeRunning steps as fast as the replies come instead of in real
	// time.
	FreeRunning bool
	// Log hears where each vehicle's BeamNG binds (nil: nowhere).
	Log *slog.Logger
	// Tune, when set, adjusts vehicle v's emulator config (faults, steps).
	Tune func(v int, cfg *emulator.Config)
	// Listen, when set, says where vehicle v's BeamNG binds (default a
	// free loopback port).
	Listen func(v int) netip.AddrPort
}

// Scene is the emulated vehicles of one session.
type Scene struct {
	ems   []*emulator.Emulator
	links []*emulator.UDP
	sums  []emulator.Summary
}

// Start binds the session's links and starts an emulated vehicle for
// each, laid out as the plan says (Gen 2 vehicles from their own CSVs), in
// a row along +X, 40 m apart, each sending on another step of the period
// (controllers loaded in different frames).
func Start(sess *coupling.Session, plan *ports.Plan, o Options) (*Scene, error) {
	if err := sess.Bind(); err != nil {
		sess.Close()
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Scene{}
	steps := int(plan.Period/plan.PhysicsDt + 0.5)
	n := len(plan.Vehicles)
	for v, link := range sess.Links() {
		at := netip.MustParseAddrPort("127.0.0.1:0")
		if o.Listen != nil {
			at = o.Listen(v)
		}
		ul, err := emulator.ListenUDP(at, link.SendTo())
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("the emulated BeamNG cannot bind %v: %w", at, err)
		}
		e.links = append(e.links, ul)
		link.SetRemote(ul.LocalAddr())
		veh := emulator.DefaultVehicle()
		veh.Start = [3]float64{40 * float64(v), 0, 0}
		cfg := emulator.Config{
			SimulinkTime: plan.Period, PingTime: plan.PingTime, PhysicsDt: plan.PhysicsDt, FreeRunning: o.FreeRunning,
			CSV: plan.Vehicles[v].CSV, Vehicle: veh,
			StartStep: int64(v * (steps/n + 1) % max(steps, 1)),
		}
		if n == 1 {
			cfg.StartStep = 0
		}
		if o.Tune != nil {
			o.Tune(v, &cfg)
		}
		em, err := emulator.New(cfg, ul)
		if err != nil {
			e.Close()
			return nil, err
		}
		args := []any{"beamng", ul.LocalAddr(), "beamconnect", link.LocalAddr()}
		if n > 1 {
			args = append(args, "vehicle", link.Name(), "start_step", cfg.StartStep)
		}
		log.Info("emulating BeamNG in process", args...)
		e.ems = append(e.ems, em)
	}
	e.ems[0].Attach(e.ems[1:]...)
	return e, nil
}

// Run steps every emulated vehicle until ctx ends (or their steps are
// done), then keeps each one's summary.
func (e *Scene) Run(ctx context.Context) {
	s, _ := e.ems[0].Run(ctx)
	e.sums = append(e.sums[:0], s)
	for _, em := range e.ems[1:] {
		e.sums = append(e.sums, em.Summary())
	}
}

// Summary is vehicle v's emulator tally after Run (nil before).
func (e *Scene) Summary(v int) *emulator.Summary {
	if e == nil || v >= len(e.sums) {
		return nil
	}
	return &e.sums[v]
}

// Close releases the emulated sockets.
func (e *Scene) Close() {
	for _, l := range e.links {
		l.Close()
	}
}

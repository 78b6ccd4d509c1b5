package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/ports"
)

// emulated is BeamNG's side of a session in this process: a vehicle per
// link on free loopback ports, all in one physics loop, as BeamNG steps
// every vehicle of a scene together.
type emulated struct {
	ems   []*emulator.Emulator
	links []*emulator.UDP
	sums  []emulator.Summary
}

// emulate binds the session's links and starts an emulated vehicle for
// each, laid out as the plan says (Gen 2 vehicles from their own CSVs).
// tune, when set, adjusts each vehicle's emulator config (faults, steps);
// listen, when set, says where vehicle v's BeamNG binds (default a free
// loopback port).
func emulate(sess *coupling.Session, plan *ports.Plan, freeRunning bool, log *slog.Logger, tune func(v int, cfg *emulator.Config), listen func(v int) netip.AddrPort) (*emulated, error) {
	if err := sess.Bind(); err != nil {
		return nil, err
	}
	e := &emulated{}
	steps := int(plan.Period/plan.PhysicsDt + 0.5)
	n := len(plan.Vehicles)
	for v, link := range sess.Links() {
		at := netip.MustParseAddrPort("127.0.0.1:0")
		if listen != nil {
			at = listen(v)
		}
		ul, err := emulator.ListenUDP(at, link.SendTo())
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("the emulated BeamNG cannot bind %v: %w", at, err)
		}
		e.links = append(e.links, ul)
		link.SetRemote(ul.LocalAddr())
		veh := emulator.DefaultVehicle()
		veh.Start = [3]float64{40 * float64(v), 0, 0} // in a row along +X, 40 m apart
		cfg := emulator.Config{
			SimulinkTime: plan.Period, PingTime: plan.PingTime, PhysicsDt: plan.PhysicsDt, FreeRunning: freeRunning,
			CSV: plan.Vehicles[v].CSV, Vehicle: veh,
			// Controllers loaded in different frames: each vehicle sends on
			// another step of the period.
			StartStep: int64(v * (steps/n + 1) % max(steps, 1)),
		}
		if n == 1 {
			cfg.StartStep = 0
		}
		if tune != nil {
			tune(v, &cfg)
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

// Run steps every emulated vehicle until ctx ends (or their steps are done),
// then keeps each one's summary.
func (e *emulated) Run(ctx context.Context) {
	s, _ := e.ems[0].Run(ctx)
	e.sums = append(e.sums[:0], s)
	for _, em := range e.ems[1:] {
		e.sums = append(e.sums, em.Summary())
	}
}

// Summary is vehicle v's emulator tally after Run (nil before).
func (e *emulated) Summary(v int) *emulator.Summary {
	if e == nil || v >= len(e.sums) {
		return nil
	}
	return &e.sums[v]
}

// Close releases the emulated sockets.
func (e *emulated) Close() {
	for _, l := range e.links {
		l.Close()
	}
}

package main

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/models"
	"beamconnect/ports"
)

// runFleet is run for a config of several vehicles: a link per vehicle, one
// model, and with --emulate the vehicles in one emulated physics loop.
func runFleet(c *call, o *runOpts, plan *ports.Plan, name string, model models.Model, opts coupling.Options, faults emulator.Faults, mon *httpMonitor) int {
	fl, err := coupling.NewFleet(opts)
	if err != nil {
		return c.fail("run", err)
	}
	ctx, cancel := runContext(o.duration)
	defer cancel()

	var emWait sync.WaitGroup
	var ems []*emulator.Emulator
	var emSums []emulator.Summary
	if o.emulate {
		if err := fl.Bind(); err != nil {
			return c.fail("run", err)
		}
		steps := int(plan.Period/plan.PhysicsDt + 0.5)
		for v, link := range fl.Links {
			ul, err := emulator.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), link.LocalAddr())
			if err != nil {
				return c.fail("run", err)
			}
			defer ul.Close()
			link.SetRemote(ul.LocalAddr())
			veh := emulator.DefaultVehicle()
			veh.Start = [3]float64{40 * float64(v), 0, 0} // in a row along +X, 40 m apart
			cfg := emulator.Config{
				SimulinkTime: plan.Period, PingTime: plan.PingTime, PhysicsDt: plan.PhysicsDt, FreeRunning: o.freeRunning,
				// Controllers loaded in different frames: each vehicle
				// sends on another step of the period (spec §4a).
				StartStep: int64(v * (steps/len(fl.Links) + 1) % max(steps, 1)),
				Vehicle:   veh,
			}
			if v == 0 {
				cfg.Faults = faults
			}
			em, err := emulator.New(cfg, ul)
			if err != nil {
				return c.fail("run", err)
			}
			c.log.Info("emulating BeamNG's vehicle in process", "vehicle", fl.Name(v), "beamng", ul.LocalAddr(), "beamconnect", link.LocalAddr(), "start_step", cfg.StartStep)
			ems = append(ems, em)
		}
		ems[0].Attach(ems[1:]...)
		emWait.Add(1)
		go func() {
			defer emWait.Done()
			s, _ := ems[0].Run(ctx)
			emSums = append(emSums, s)
			for _, em := range ems[1:] {
				emSums = append(emSums, em.Summary())
			}
		}()
	}

	if mon != nil {
		mon.start(ctx, c, plan, fl.Links, fl.Status)
	}
	stopWatch := watchConfig(ctx, c, fl, c.args[0], plan.Vehicles[0].CSV, o.noWatch, mon.observer())
	stopLine := fleetStatusLine(c, fl)
	start := time.Now()
	runErr := fl.Run(ctx)
	stopLine()
	stopWatch()
	emWait.Wait()
	mon.wait()

	sum := summarize(fl.Links[0], plan, name, model, nil)
	total := runSummary{ReplyID: sum.ReplyID, Model: name, TimeSync: sum.TimeSync, TimeDilation: sum.TimeDilation,
		StatusAtEnd: int(coupling.Connected), FinalStatus: int(fl.Status()), Vehicles: map[string]vehicleSummary{}, Connected: true}
	for v, link := range fl.Links {
		s := summarize(link, plan, name, model, nil)
		total.Messages += s.Messages
		total.Replies += s.Replies
		total.Dropped += s.Dropped
		total.Foreign += s.Foreign
		total.WrongSize += s.WrongSize
		total.Malformed += s.Malformed
		total.Duplicates += s.Duplicates
		total.IDJumps += s.IDJumps
		total.Drained += s.Drained
		total.StallsRecovered += s.StallsRecovered
		total.LateReplies += s.LateReplies
		total.Restarts += s.Restarts
		total.SourceChanges += s.SourceChanges
		total.Silences += s.Silences
		total.BindFailures += s.BindFailures
		total.LockstepLost += s.LockstepLost
		total.OutOfLockstepS += s.OutOfLockstepS
		total.Connected = total.Connected && s.Connected
		total.TurnaroundP50 = max(total.TurnaroundP50, s.TurnaroundP50)
		total.TurnaroundP99 = max(total.TurnaroundP99, s.TurnaroundP99)
		total.TurnaroundMax = max(total.TurnaroundMax, s.TurnaroundMax)
		total.ModelFaults = max(total.ModelFaults, s.ModelFaults)
		total.NeutralReplies += s.NeutralReplies
		total.SimS = max(total.SimS, s.SimS)
		if s.StatusAtEnd != int(coupling.Connected) {
			total.StatusAtEnd = s.StatusAtEnd
		}
		vs := vehicleSummary{Messages: s.Messages, Replies: s.Replies, Dropped: s.Dropped, StallsRecovered: s.StallsRecovered,
			Restarts: s.Restarts, Silences: s.Silences, LockstepLost: s.LockstepLost, TurnaroundP50: s.TurnaroundP50,
			TurnaroundP99: s.TurnaroundP99, StatusAtEnd: s.StatusAtEnd, Faults: link.Faults()}
		if vs.Faults == nil {
			vs.Faults = []string{}
		}
		if v < len(emSums) {
			vs.Emulator = &emSums[v]
		}
		total.Vehicles[fl.Name(v)] = vs
	}
	total.Faults = fl.Faults()
	if total.Faults == nil {
		total.Faults = []string{}
	}
	if opts.Record != nil {
		err := opts.Record.Close()
		total.RecordRows, total.RecordWritten, total.RecordLost = opts.Record.Rows(), opts.Record.Written(), opts.Record.Lost()
		if err != nil {
			total.RecordError = err.Error()
			total.Faults = append(total.Faults, fmt.Sprintf("the recording lost %d of %d rows: %v", total.RecordLost, total.RecordRows, err))
		}
	}
	total.Healthy = len(total.Faults) == 0
	total.WallS = time.Since(start).Seconds()
	if c.json {
		writeJSON(c.stdout, total)
	} else {
		printRunSummary(c, total)
		for v := range fl.Links {
			vs := total.Vehicles[fl.Name(v)]
			fmt.Fprintf(c.stdout, "  vehicle %q: %d messages, %d replies, stalls recovered %d, lockstep lost %d, turnaround p50 %.0f µs p99 %.0f µs, status at end %s\n",
				fl.Name(v), vs.Messages, vs.Replies, vs.StallsRecovered, vs.LockstepLost, vs.TurnaroundP50, vs.TurnaroundP99, coupling.Status(vs.StatusAtEnd))
		}
	}
	if runErr != nil {
		return c.fail("run", runErr)
	}
	if !total.Healthy {
		return exitFailed
	}
	return exitOK
}

// fleetStatusLine redraws one line on a terminal: the coupling's status,
// then each vehicle's status and message rate.
func fleetStatusLine(c *call, fl *coupling.Fleet) func() {
	if !c.stderrIsTTY {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		last := make([]int64, len(fl.Links))
		lastT := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(c.stderr, "\r\033[K")
				return
			case now := <-t.C:
				var b strings.Builder
				fmt.Fprintf(&b, "\r\033[K%s", fl.Status())
				for v, l := range fl.Links {
					st := l.Stats()
					n := st.Messages.Load()
					fmt.Fprintf(&b, " | %s %s %.0f msg/s", fl.Name(v), l.Status(), float64(n-last[v])/now.Sub(lastT).Seconds())
					if o := st.Overdue.Load(); o > 0 {
						fmt.Fprintf(&b, " OVERDUE %d", o)
					}
					last[v] = n
				}
				lastT = now
				fmt.Fprint(c.stderr, b.String())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

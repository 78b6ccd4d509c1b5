package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models"
	"beamconnect/ports"
)

// fleetResult is one line of bench --vehicles: N vehicles at one period.
type fleetResult struct {
	Vehicles       int     `json:"vehicles"`
	PeriodMs       float64 `json:"period_ms"`
	RealtimeFactor float64 `json:"realtime_factor"`
	Stalls         int64   `json:"stalls"`
	Sent           int64   `json:"sent"`
	Accepted       int64   `json:"accepted"`
	PerSecond      float64 `json:"round_trips_per_s"`
	PerCPUSecond   float64 `json:"round_trips_per_cpu_s"`
	CPUCores       float64 `json:"cpu_cores_used"`
	P99us          float64 `json:"turnaround_p99_us"`
	RealTime       bool    `json:"holds_real_time"`
}

// fleetConfigText is a config of n vehicles, each sending its speed and
// reading its pedals, at one period.
func fleetConfigText(n int, period time.Duration) string {
	var vehicles, outs, ins []string
	for v := range n {
		name := fmt.Sprintf("car%d", v)
		vehicles = append(vehicles, fmt.Sprintf(`%q: {"localPort": %d, "remotePort": %d}`, name, 40000+2*v, 40001+2*v))
		outs = append(outs, fmt.Sprintf(`{"remoteObject": %q, "updatePeriodMs": %v, "ports": [[{"propertyName": "groundspeed"}, {"propertyName": "posX"}]]}`, name, period.Seconds()*1000))
		ins = append(ins, fmt.Sprintf(`{"remoteObject": %q, "updatePeriodMs": %v, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}`, name, period.Seconds()*1000))
	}
	return fmt.Sprintf(`{"version": 2, "outputs": [%s], "inputs": [%s], "beamng": {"vehicles": {%s}}}`,
		strings.Join(outs, ","), strings.Join(ins, ","), strings.Join(vehicles, ","))
}

// benchFleet couples n vehicles to emulated ones stepped in one physics
// loop paced in real time, each loaded on another step of the period, for d.
func benchFleet(ctx context.Context, n int, period, d time.Duration) (fleetResult, error) {
	r := fleetResult{Vehicles: n, PeriodMs: period.Seconds() * 1000}
	text := fleetConfigText(n, period)
	if n == 1 {
		text = strings.Replace(text, `"remoteObject": "car0", `, "", 2)
		text = strings.Replace(text, `"beamng": {"vehicles": {"car0": {"localPort": 40000, "remotePort": 40001}}}`, `"beamng": {}`, 1)
	}
	cfg, err := config.Parse("fleet-bench.json", []byte(text))
	if err != nil {
		return r, err
	}
	plan, err := ports.Compile(cfg)
	if err != nil {
		return r, err
	}
	sess, err := coupling.New(coupling.Options{Plan: plan, Model: models.Hold{}, Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		return r, err
	}
	em, err := emulate(sess, plan, false, slog.New(slog.DiscardHandler), func(v int, cfg *emulator.Config) {
		cfg.Steps = int64(d.Seconds() / plan.PhysicsDt)
	}, nil)
	if err != nil {
		return r, err
	}
	defer em.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { sess.Run(ctx); close(done) }()
	cpu0, wall0 := cpuTime(), time.Now()
	em.Run(ctx)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	cancel()
	<-done
	r.RealtimeFactor = em.Summary(0).RealtimeFactor
	for i, l := range sess.Links() {
		s := em.Summary(i)
		r.Stalls += s.Stalls
		r.Sent += s.Sent
		r.Accepted += s.Accepted
		r.P99us = max(r.P99us, us(l.Stats().Turnaround.Quantile(0.99)))
	}
	r.PerSecond = float64(r.Accepted) / wall.Seconds()
	if cpu > 0 {
		r.PerCPUSecond = float64(r.Accepted) / cpu.Seconds()
		r.CPUCores = cpu.Seconds() / wall.Seconds()
	}
	r.RealTime = r.Stalls == 0 && r.RealtimeFactor >= 0.98 && r.Accepted >= r.Sent-int64(n)
	return r, nil
}

func printFleetBench(w io.Writer, rs []fleetResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VEHICLES\tPERIOD\tREAL-TIME FACTOR\tSTALLS\tREPLIES APPLIED\tROUND TRIPS/S\tPER CPU-SECOND\tCPU CORES\tTURNAROUND P99\tHOLDS REAL TIME")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%g ms\t%.3f\t%d\t%d of %d\t%.0f\t%.0f\t%.2f\t%.0f µs\t%v\n", r.Vehicles, r.PeriodMs, r.RealtimeFactor, r.Stalls,
			r.Accepted, r.Sent, r.PerSecond, r.PerCPUSecond, r.CPUCores, r.P99us, r.RealTime)
	}
	tw.Flush()
}

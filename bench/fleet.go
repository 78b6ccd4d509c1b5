package bench

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/coupling/scene"
	"beamconnect/models"
)

// FleetResult is N vehicles at one period.
type FleetResult struct {
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

// Fleet couples n vehicles (one config, one process) to emulated ones
// stepped in one physics loop paced in real time, each loaded on another
// step of the period, for d: does real time hold with no stalls, and at
// what cost in CPU.
func Fleet(ctx context.Context, n int, period, d time.Duration) (FleetResult, error) {
	r := FleetResult{Vehicles: n, PeriodMs: period.Seconds() * 1000}
	text := fleetConfigText(n, period)
	if n == 1 {
		text = strings.Replace(text, `"remoteObject": "car0", `, "", 2)
		text = strings.Replace(text, `"beamng": {"vehicles": {"car0": {"localPort": 40000, "remotePort": 40001}}}`, `"beamng": {}`, 1)
	}
	cfg, err := config.Parse("fleet-bench.json", []byte(text))
	if err != nil {
		return r, err
	}
	plan, err := config.Compile(cfg)
	if err != nil {
		return r, err
	}
	sess, err := coupling.New(coupling.Options{Plan: plan, Model: models.Hold{}, Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		return r, err
	}
	em, err := scene.Start(sess, plan, scene.Options{Tune: func(v int, cfg *emulator.Config) {
		cfg.Steps = int64(d.Seconds() / plan.PhysicsDt)
	}})
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

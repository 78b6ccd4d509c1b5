// Package bench measures beamconnect against BeamNG's side: round trips
// against responders side by side (beamconnect in process, its own binary,
// other programs), several vehicles at once, and long soaks with faults.
// The `bench` command holds its flags and prints what this package
// measures.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models"
)

// Result is one responder's figures.
type Result struct {
	Name        string  `json:"name"`
	RoundTrips  int64   `json:"round_trips"`
	PerSecond   float64 `json:"round_trips_per_s"`
	P50us       float64 `json:"turnaround_p50_us"`
	P99us       float64 `json:"turnaround_p99_us"`
	P999us      float64 `json:"turnaround_p999_us"`
	AllocsPerRT float64 `json:"allocs_per_round_trip"` // -1: not measured
	PeakRSSKiB  int64   `json:"peak_rss_kib"`
	Stalls      int64   `json:"stalls"`
	Load        int     `json:"busy_loops"`         // the busy loops beside it (Options.Load)
	Ratio       float64 `json:"vs_quiet,omitempty"` // loaded: its round trips over the quiet ones'
	Error       string  `json:"error,omitempty"`
}

// Driver is how BeamNG's side is played: by the emulator in process, or
// by Program (a BeamNG-like driver in its own process); waiting for
// replies blocked or spinning.
type Driver struct {
	Spin    bool
	Program string
	FMU     string // the FMU the FMU responders run
	// FMUSim, a master (fmusim), runs Exported: beamconnect exported as
	// an FMU of ExportRig.
	FMUSim, Exported string
}

// Responder is a program measured: Command "" is beamconnect in this
// process. In Command, {listen} is the address it binds (BeamNG sends
// there), {beamng} the one it replies to, {listen-port} and {beamng-port}
// their ports, {config} a rig config with both, {fmu-config} and
// {fmu-config-in-process} one that steps Driver.FMU.
type Responder struct{ Name, Command string }

// Responders lists beamconnect's own: in process and, when exe is the
// binary (not a test binary), the binary in its own process, busy-polling
// too, stepping the driver's FMU in its child process and in process, and
// exported as an FMU under the driver's master.
func Responders(exe string, drv Driver) []Responder {
	list := []Responder{{"beamconnect in process", ""}}
	if exe == "" || TestBinary(exe) {
		return list
	}
	list = append(list, Responder{"beamconnect", exe + " run {config} --no-watch --model hold --log-level error"},
		Responder{"beamconnect --busy-poll", exe + " run {config} --no-watch --model hold --log-level error --busy-poll"})
	if drv.FMU != "" {
		list = append(list, Responder{"beamconnect FMU in its child", exe + " run {fmu-config} --no-watch --log-level error"},
			Responder{"beamconnect FMU in process", exe + " run {fmu-config-in-process} --no-watch --log-level error"})
	}
	if drv.FMUSim != "" && drv.Exported != "" {
		// Stepped one period at a time for as long as it is measured (the
		// master is stopped then), BeamNG's message of each step its
		// outputs.
		list = append(list, Responder{"beamconnect exported, under fmusim", drv.FMUSim + " --interface-type cs --stop-time 1e6 --output-interval 0.0005" +
			" --start-value localPort {listen-port} --start-value remotePort {beamng-port} " + drv.Exported})
	}
	return list
}

// TestBinary reports whether exe is a test binary (x.test, x.test.exe),
// not beamconnect: given "run", it would run its tests.
func TestBinary(exe string) bool { return strings.HasSuffix(strings.TrimSuffix(exe, ".exe"), ".test") }

// ExportRig is the rig beamconnect is exported as for a master to run
// (Driver.Exported: 'fmu export' of it): BeamNG's groundspeed out, the
// pedals in, at BeamNG's fastest period, 0.5 ms. The master sets the
// ports.
const ExportRig = `{"version": 2, "remoteIP": "127.0.0.1", "remotePort": 64891,
  "outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}]]}],
  "inputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
  "beamng": {"localIP": "127.0.0.1", "localPort": 64890}}
`

// Options are what Run measures.
type Options struct {
	Responders []Responder
	Driver     Driver
	Duration   time.Duration // each responder's, each round
	Rounds     int
	Log        *slog.Logger
	Stderr     io.Writer // the responders' stderr
	// Load > 0 measures each responder quiet and then beside Load busy
	// loops, each a process running LoadArgv (Busy).
	Load     int
	LoadArgv []string
}

// Run measures each responder for the duration, in interleaved rounds:
// every responder once per round (quiet, then beside the busy loops), so
// a drift of the machine (another tenant, thermal) touches all alike;
// each one's round with the median round-trip rate is reported, quiet
// and loaded one after the other. warnings say which figures measure
// contention rather than the responder.
func Run(o Options) (results []Result, warnings []string) {
	for _, r := range o.Responders {
		if w := CoreShortage(r.Name, r.Command, o.Driver, runtime.NumCPU()); w != "" {
			o.Log.Warn(w)
			warnings = append(warnings, w)
		}
	}
	loads := []int{0}
	if o.Load > 0 {
		loads = append(loads, o.Load)
	}
	all := make([][]Result, len(o.Responders)*len(loads))
	for round := range max(o.Rounds, 1) {
		for i, r := range o.Responders {
			for j, n := range loads {
				o.Log.Info("measuring", "responder", r.Name, "busy_loops", n, "for", o.Duration, "round", round+1)
				all[i*len(loads)+j] = append(all[i*len(loads)+j], measureBeside(o, r, n))
			}
		}
	}
	for i, rs := range all {
		slices.SortFunc(rs, func(a, b Result) int { return cmpFloat(a.PerSecond, b.PerSecond) })
		r := rs[len(rs)/2]
		if i%len(loads) > 0 { // the quiet median, sorted above
			q := all[i-i%len(loads)]
			if quiet := q[len(q)/2]; quiet.Error == "" && r.Error == "" {
				r.Ratio = r.PerSecond / quiet.PerSecond
			}
		}
		results = append(results, r)
	}
	return results, warnings
}

// measureBeside measures r beside n busy loops (none: quiet).
func measureBeside(o Options, r Responder, n int) Result {
	if n > 0 {
		l, err := startLoad(o.LoadArgv, n)
		if err != nil {
			return Result{Name: r.Name, AllocsPerRT: -1, Load: n, Error: err.Error()}
		}
		defer l.stop()
	}
	res := measure(o, r, o.Duration)
	res.Load = n
	return res
}

// CoreShortage warns when a busy-polling responder and BeamNG's side need
// more cores than the machine gives this process: a spinning responder
// keeps a core busy for good, so BeamNG's side (the Go emulator, its
// runtime and the kernel's work; or a spinning driver) is left to share
// what remains, and the figures measure that contention, not the
// responder. "" when the cores suffice or the responder does not spin.
func CoreShortage(name, command string, drv Driver, cpus int) string {
	if !strings.Contains(name+" "+command, "--busy-poll") {
		return ""
	}
	need, why := 2, "one for it, one for BeamNG's side"
	switch {
	case drv.Spin:
		need, why = 3, "one for it, one for the spinning driver, one for everything else"
	case drv.Program == "":
		need, why = 3, "one for it, one for the emulator, one for the Go runtime and the kernel's work"
	}
	if cpus >= need {
		return ""
	}
	return fmt.Sprintf("%q busy-polls, a core kept busy, and needs %d cores (%s); this process may use %d, so its figures measure the contention: use --c-driver or a machine with more cores", name, need, why, cpus)
}

// measure runs BeamNG's side against one responder for d.
func measure(o Options, r Responder, d time.Duration) Result {
	drv := o.Driver
	res := Result{Name: r.Name, AllocsPerRT: -1}
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var clientAddr netip.AddrPort
	var stopClient func() int64
	var cp *coupling.Session
	if r.Command == "" {
		cfg, err := config.Parse("bench.json", []byte(`{"version": 2, "outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}]]}]}`))
		if err != nil {
			res.Error = err.Error()
			return res
		}
		plan, _ := config.Compile(cfg)
		cp, err = coupling.New(coupling.Options{Plan: plan, Model: models.Hold{}, Local: lo})
		if err == nil {
			if err = cp.Bind(); err != nil {
				cp.Close()
			}
		}
		if err != nil {
			res.Error = err.Error()
			return res
		}
		clientAddr = cp.Link(0).LocalAddr()
	} else {
		clientAddr = freeUDPPort()
	}
	if drv.Program != "" {
		return measureCDriver(o, res, cp, clientAddr, r.Command, d)
	}
	listen := emulator.ListenUDP
	if drv.Spin {
		listen = emulator.ListenUDPSpin
	}
	link, err := listen(lo, clientAddr)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer link.Close()

	var wg sync.WaitGroup
	if cp != nil {
		cp.Link(0).SetRemote(link.LocalAddr())
		wg.Go(func() { cp.Run(ctx) })
	} else {
		stop, err := startResponder(o.Stderr, r.Command, clientAddr, link.LocalAddr(), drv.FMU)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		stopClient = stop
	}

	// Lockstep with no skips: every step sends, and blocks for the reply.
	// The measurement lasts d from the first reply BeamNG accepts, however
	// long the responder takes to start (seconds under Wine on a loaded
	// machine); a responder that never answers is given up on after
	// startBound.
	const startBound = 10 * time.Second
	runCtx, stopRun := context.WithTimeout(ctx, d+startBound)
	var waits []time.Duration
	var measuring bool
	var started time.Time
	var first, last int64
	em, _ := emulator.New(emulator.Config{SimulinkTime: beamng.PhysicsDt, FreeRunning: true, Trace: func(r *emulator.StepRecord) {
		if !measuring && r.Accepted {
			measuring, started = true, time.Now()
			first = r.Step
		}
		if measuring && r.Blocking && r.Got && r.Accepted {
			waits = append(waits, r.Waited)
			last = r.Step
		}
		if measuring && time.Since(started) >= d {
			stopRun()
		}
	}}, link)
	waits = make([]time.Duration, 0, 1<<20)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	sum, _ := em.Run(runCtx)
	stopRun()
	runtime.ReadMemStats(&ms1)
	elapsed := time.Since(started)
	cancel()
	wg.Wait()
	res.Stalls = sum.Stalls
	res.PeakRSSKiB = selfPeakRSS()
	if stopClient != nil {
		res.PeakRSSKiB = stopClient()
	}
	if len(waits) == 0 {
		res.Error = "no replies"
		return res
	}
	res.RoundTrips = int64(len(waits))
	res.PerSecond = float64(len(waits)) / elapsed.Seconds()
	slices.Sort(waits)
	q := func(p float64) float64 { return float64(waits[int(p*float64(len(waits)-1))].Nanoseconds()) / 1e3 }
	res.P50us, res.P99us, res.P999us = q(0.5), q(0.99), q(0.999)
	if cp != nil && last > first {
		res.AllocsPerRT = float64(ms1.Mallocs-ms0.Mallocs) / float64(len(waits))
	}
	return res
}

// us is a duration in microseconds.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

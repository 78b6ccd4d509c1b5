package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models"
	"beamconnect/ports"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure round trips against BeamNG's side (emulated), beamconnect and other responders side by side",
		help: `Runs BeamNG's side (the emulator, free-running, in lockstep with no skip steps:
a message every physics step, the next one only once the reply is in) over
loopback against each responder in turn, and reports round trips a second,
turnaround as BeamNG sees it (how long its blocking receive waited) at p50,
p99 and p99.9, allocations per round trip (beamconnect only) and peak RSS.

beamconnect itself is always measured, in process. --responder NAME=COMMAND adds
another program; {listen} in COMMAND is the address it must bind (BeamNG sends
there), {beamng} the address it replies to, and {config} a rig config with both.
"beamconnect" is the binary itself running a coupling in its own process, the
fair comparison with other programs; "beamconnect in process" shares a process
with BeamNG's side and shows the floor. examples/bench has a C and a
Python responder:
  cc -O2 -o /tmp/responder examples/bench/responder.c
  beamconnect bench --responder "c=/tmp/responder {listen} {beamng}" \
                    --responder "python=python3 examples/bench/responder.py {listen} {beamng}"

The emulator is Go and shares this machine's cores with the responder, so at
these rates it is often the limit itself. --c-driver plays BeamNG's side with
a small C program in its own process instead (the same lockstep, timed by
it), which measures the responders, not the driver:
  cc -O2 -o /tmp/driver examples/bench/driver.c -lm
  beamconnect bench --c-driver /tmp/driver --rounds 10 --duration 1s \
                    --responder "c=/tmp/responder {listen} {beamng}" \
                    --responder "c spin=/tmp/responder {listen} {beamng} spin"

--fmu FILE adds the binary stepping that FMU at every message (bound by
name: groundspeed in, throttle and brake out, as examples/fmu-cruise's FMU),
in its child process and in process: what the safe default costs.

--soak runs beamconnect (in process, with a recording) against BeamNG's side
paced in real time at its fastest rate, a message every 0.5 ms, for
--duration (default 10 minutes) with faults on (--fault, repeatable; by
default every kind at low rates), and reports the messages lost and why,
BeamNG's stalls, how long BeamNG was out of lockstep and how fast it came
back (from BeamNG's own counters), the recording, and the memory growth.

--vehicles 1,2,4,8,16 couples that many vehicles at once (one config, one
process) to emulated vehicles stepped in one physics loop paced in real time,
each loaded on another step of the period, at each --period (default 5ms and
1ms), for --duration each, and reports whether real time holds with 0 stalls,
the round trips a second, per CPU-second, and the CPU cores used.`,
		flags: func(fs *pflag.FlagSet) func(*call) int {
			d := fs.Duration("duration", 3*time.Second, "how long to measure each responder (with --soak: how long to soak, default 10m)")
			rs := fs.StringArray("responder", nil, "NAME=COMMAND of another responder to measure (repeatable)")
			driver := fs.String("driver", "blocking", "how BeamNG's side waits for a reply: blocking (as BeamNG does) or spin (busy-polling, Linux)")
			rounds := fs.Int("rounds", 1, "measure the responders in turn this many times (interleaved, against drift) and report each one's median round")
			cDriver := fs.String("c-driver", "", "play BeamNG's side with this program instead of the emulator (examples/bench/driver.c: a BeamNG-like driver in C, in its own process)")
			fmuPath := fs.String("fmu", "", "measure beamconnect stepping this FMU too (its inputs groundspeed, its outputs throttle and brake, as the cruise FMU's), in its child process and in process")
			soak := fs.Bool("soak", false, "soak instead: beamconnect against BeamNG's side at 0.5 ms, paced in real time, with faults on; report losses, stalls, recovery and memory growth")
			faults := fs.StringArray("fault", nil, "with --soak: the faults to inflict (repeatable; default: every kind, at low rates)")
			vehicles := fs.IntSlice("vehicles", nil, "several vehicles instead: the vehicle counts to measure, e.g. 1,2,4,8,16")
			periods := fs.DurationSlice("period", []time.Duration{5 * time.Millisecond, time.Millisecond}, "with --vehicles: BeamNG's send periods to measure")
			fs.Bool("json", false, "print the results as JSON")
			return func(c *call) int {
				if len(*vehicles) > 0 {
					var rs []fleetResult
					for _, p := range *periods {
						for _, n := range *vehicles {
							if n < 1 || p < 500*time.Microsecond || p > 500*time.Millisecond {
								fmt.Fprintf(c.stderr, "%s bench: --vehicles %d --period %v: expected at least 1 vehicle and a period from 0.5 ms to 500 ms\n", programName, n, p)
								return exitUsage
							}
							c.log.Info("measuring", "vehicles", n, "period", p, "for", *d)
							r, err := benchFleet(context.Background(), n, p, *d)
							if err != nil {
								return c.fail("bench", err)
							}
							rs = append(rs, r)
						}
					}
					if c.json {
						writeJSON(c.stdout, rs)
					} else {
						printFleetBench(c.stdout, rs)
					}
					return exitOK
				}
				if *soak {
					if !fs.Changed("duration") {
						*d = 10 * time.Minute
					}
					if *d <= 0 {
						fmt.Fprintf(c.stderr, "%s bench: --duration must be positive\n", programName)
						return exitUsage
					}
					return soakCmd(c, *d, *faults)
				}
				if len(*faults) > 0 {
					fmt.Fprintf(c.stderr, "%s bench: --fault applies to --soak only\n", programName)
					return exitUsage
				}
				if *driver != "blocking" && *driver != "spin" {
					fmt.Fprintf(c.stderr, "%s bench: --driver %q: expected blocking or spin\n", programName, *driver)
					return exitUsage
				}
				if *rounds < 1 {
					fmt.Fprintf(c.stderr, "%s bench: --rounds must be at least 1\n", programName)
					return exitUsage
				}
				drv := benchDriver{spin: *driver == "spin", program: *cDriver}
				if *fmuPath != "" {
					abs, err := filepath.Abs(*fmuPath)
					if err != nil {
						return c.fail("bench", err)
					}
					drv.fmu = abs
				}
				return benchCmd(c, *d, *rs, drv, *rounds)
			}
		},
	})
}

type benchResult struct {
	Name           string  `json:"name"`
	RoundTrips     int64   `json:"round_trips"`
	PerSecond      float64 `json:"round_trips_per_s"`
	P50, P99, P999 float64 `json:"-"`
	P50us          float64 `json:"turnaround_p50_us"`
	P99us          float64 `json:"turnaround_p99_us"`
	P999us         float64 `json:"turnaround_p999_us"`
	AllocsPerRT    float64 `json:"allocs_per_round_trip"` // -1: not measured
	PeakRSSKiB     int64   `json:"peak_rss_kib"`
	Stalls         int64   `json:"stalls"`
	Error          string  `json:"error,omitempty"`
}

// benchDriver is how BeamNG's side is played: by the emulator in process,
// or by program (--c-driver); waiting for replies blocked or spinning.
type benchDriver struct {
	spin    bool
	program string
	fmu     string // --fmu: the FMU the FMU responders run
}

func benchCmd(c *call, d time.Duration, responders []string, drv benchDriver, rounds int) int {
	if d <= 0 {
		fmt.Fprintf(c.stderr, "%s bench: --duration must be positive\n", programName)
		return exitUsage
	}
	type resp struct{ name, cmd string }
	list := []resp{{"beamconnect in process", ""}}
	// The fair comparison with other programs: beamconnect's own binary
	// running a coupling in a process of its own.
	// (Not a test binary, x.test or x.test.exe: given "run", it would run
	// its tests.)
	if exe, err := os.Executable(); err == nil && !strings.HasSuffix(strings.TrimSuffix(exe, ".exe"), ".test") {
		list = append(list, resp{"beamconnect", exe + " run {config} --no-watch --model hold --log-level error"})
		list = append(list, resp{"beamconnect --busy-poll", exe + " run {config} --no-watch --model hold --log-level error --busy-poll"})
		if drv.fmu != "" {
			// The same binary stepping an FMU each message: in its child
			// process (the default), and loaded into beamconnect.
			list = append(list, resp{"beamconnect FMU in its child", exe + " run {fmu-config} --no-watch --log-level error"},
				resp{"beamconnect FMU in process", exe + " run {fmu-config-in-process} --no-watch --log-level error"})
		}
	}
	for _, r := range responders {
		name, cmd, ok := strings.Cut(r, "=")
		if !ok || name == "" || strings.TrimSpace(cmd) == "" {
			fmt.Fprintf(c.stderr, "%s bench: --responder %q: expected NAME=COMMAND\n", programName, r)
			return exitUsage
		}
		list = append(list, resp{name, cmd})
	}
	var warnings []string
	for _, r := range list {
		if w := coreShortage(r.name, r.cmd, drv, runtime.NumCPU()); w != "" {
			c.log.Warn(w)
			warnings = append(warnings, w)
		}
	}
	// Interleaved rounds: every responder once per round, so a drift of the
	// machine (another tenant, thermal) touches all alike; each responder's
	// round with the median round-trip rate is reported.
	all := make([][]benchResult, len(list))
	for round := range rounds {
		for i, r := range list {
			c.log.Info("measuring", "responder", r.name, "for", d, "round", round+1)
			all[i] = append(all[i], measure(c, r.name, r.cmd, d, drv))
		}
	}
	var results []benchResult
	for _, rs := range all {
		slices.SortFunc(rs, func(a, b benchResult) int { return cmpFloat(a.PerSecond, b.PerSecond) })
		results = append(results, rs[len(rs)/2])
	}
	if c.json {
		writeJSON(c.stdout, results)
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "responder\tround trips/s\tturnaround p50 µs\tp99 µs\tp99.9 µs\tallocs/round trip\tpeak RSS MiB\tstalls\t")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t\n", r.Name, r.Error)
			continue
		}
		allocs := "-"
		if r.AllocsPerRT >= 0 {
			allocs = fmt.Sprintf("%.2f", r.AllocsPerRT)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t%d\t\n", r.Name, r.PerSecond, r.P50us, r.P99us, r.P999us, allocs, float64(r.PeakRSSKiB)/1024, r.Stalls)
	}
	tw.Flush()
	how := "waiting for each reply in a blocking receive, as BeamNG does"
	if drv.spin {
		how = "busy-polling for each reply"
	}
	who := "the emulator, free-running, simulinkTime 0.5 ms"
	if drv.program != "" {
		who = drv.program + ", its own process, a message as soon as the last reply is in"
	}
	fmt.Fprintf(c.stdout, "(BeamNG's side: %s, one message in flight, %s; %s each, %d rounds; %s/%s, %d CPUs)\n",
		who, how, d, rounds, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	for _, w := range warnings {
		fmt.Fprintln(c.stdout, "warning: "+w)
	}
	return exitOK
}

// coreShortage warns when a busy-polling responder and BeamNG's side need
// more cores than the machine gives this process: a spinning responder
// keeps a core busy for good, so BeamNG's side (the Go emulator, its
// runtime and the kernel's work; or a spinning driver) is left to share
// what remains, and the figures measure that contention, not the
// responder. "" when the cores suffice or the responder does not spin.
func coreShortage(name, command string, drv benchDriver, cpus int) string {
	if !strings.Contains(name+" "+command, "--busy-poll") {
		return ""
	}
	need, why := 2, "one for it, one for BeamNG's side"
	switch {
	case drv.spin:
		need, why = 3, "one for it, one for the spinning driver, one for everything else"
	case drv.program == "":
		need, why = 3, "one for it, one for the emulator, one for the Go runtime and the kernel's work"
	}
	if cpus >= need {
		return ""
	}
	return fmt.Sprintf("%q busy-polls, a core kept busy, and needs %d cores (%s); this process may use %d, so its figures measure the contention: use --c-driver or a machine with more cores", name, need, why, cpus)
}

// measure runs the emulator against one responder for d.
func measure(c *call, name, command string, d time.Duration, drv benchDriver) benchResult {
	spin := drv.spin
	res := benchResult{Name: name, AllocsPerRT: -1}
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var clientAddr netip.AddrPort
	var stopClient func() (int64, error)
	var cp *coupling.Session
	if command == "" {
		cfg, err := config.Parse("bench.json", []byte(`{"version": 2, "outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}]]}]}`))
		if err != nil {
			res.Error = err.Error()
			return res
		}
		plan, _ := ports.Compile(cfg)
		cp, err = coupling.New(coupling.Options{Plan: plan, Model: models.Hold{}, Local: lo})
		if err == nil {
			err = cp.Bind()
		}
		if err != nil {
			res.Error = err.Error()
			return res
		}
		clientAddr = cp.Link(0).LocalAddr()
	} else {
		clientAddr = freeUDPPort()
	}
	if drv.program != "" {
		return measureCDriver(c, res, cp, clientAddr, command, d, drv)
	}
	listen := emulator.ListenUDP
	if spin {
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
		wg.Add(1)
		go func() { defer wg.Done(); cp.Run(ctx) }()
	} else {
		stop, err := startResponder(c, command, clientAddr, link.LocalAddr(), drv.fmu)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		stopClient = func() (int64, error) { return stop(), nil }
	}

	// Lockstep with no skips: every step sends, and blocks for the reply.
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
	}}, link)
	waits = make([]time.Duration, 0, 1<<20)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	runCtx, stopRun := context.WithTimeout(ctx, d+500*time.Millisecond)
	sum, _ := em.Run(runCtx)
	stopRun()
	runtime.ReadMemStats(&ms1)
	elapsed := time.Since(started)
	cancel()
	wg.Wait()
	res.Stalls = sum.Stalls
	res.PeakRSSKiB = selfPeakRSS()
	if stopClient != nil {
		res.PeakRSSKiB, _ = stopClient()
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

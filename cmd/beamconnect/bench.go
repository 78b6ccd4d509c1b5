package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	osexec "os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
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
				return benchCmd(c, *d, *rs, benchDriver{spin: *driver == "spin", program: *cDriver}, *rounds)
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
	if exe, err := os.Executable(); err == nil && !strings.HasSuffix(exe, ".test") {
		list = append(list, resp{"beamconnect", exe + " run {config} --no-watch --model hold --log-level error"})
		list = append(list, resp{"beamconnect --busy-poll", exe + " run {config} --no-watch --model hold --log-level error --busy-poll"})
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
		stop, err := startResponder(c, command, clientAddr, link.LocalAddr())
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

// benchConfig writes a rig config for a coupling bound at listen and
// replying to beamngAddr, at BeamNG's fastest rate, for {config}.
func benchConfig(listen, beamngAddr netip.AddrPort) (string, error) {
	f, err := os.CreateTemp("", "beamconnect-bench-*.json")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(f, `{"version": 2, "remoteIP": %q, "remotePort": %d,
  "outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}]]}],
  "beamng": {"localIP": %q, "localPort": %d}}`, beamngAddr.Addr(), beamngAddr.Port(), listen.Addr(), listen.Port())
	return f.Name(), f.Close()
}

// waitBound waits until the responder has bound addr. Binding the port
// ourselves to test it could make the responder's own bind fail, so on
// Linux the kernel's socket table is read instead; elsewhere a second
// is allowed for the start.
func waitBound(addr netip.AddrPort, limit time.Duration) error {
	if _, err := os.Stat("/proc/net/udp"); err != nil {
		time.Sleep(time.Second)
		return nil
	}
	// /proc/net/udp writes 127.0.0.1:64890 as 0100007F:FD7A.
	a := addr.Addr().As4()
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], addr.Port())
	deadline := time.Now().Add(limit)
	for {
		b, _ := os.ReadFile("/proc/net/udp")
		for _, line := range strings.Split(string(b), "\n") {
			// The second column is the local address; the third, the
			// remote one, also names this port for BeamNG's send socket.
			if f := strings.Fields(line); len(f) > 2 && f[1] == want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the responder did not bind %v within %v", addr, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freeUDPPort finds a loopback port for an external responder to bind.
// (It binds itself, so the port is only known free a moment before.)
func freeUDPPort() netip.AddrPort {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		return netip.AddrPort{}
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// measureCDriver measures one responder against the external driver: a
// separate process that binds BeamNG's address, sends and waits in
// lockstep, and reports what it saw as JSON.
func measureCDriver(c *call, in benchResult, cp *coupling.Session, clientAddr netip.AddrPort, command string, d time.Duration, drv benchDriver) (res benchResult) {
	res = in
	beamngAddr := freeUDPPort()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before the wait: Run ends when ctx does
	if cp != nil {
		cp.Link(0).SetRemote(beamngAddr)
		wg.Go(func() { cp.Run(ctx) })
	} else {
		stop, err := startResponder(c, command, clientAddr, beamngAddr)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		defer func() { res.PeakRSSKiB = stop() }()
	}
	args := []string{beamngAddr.String(), clientAddr.String(), fmt.Sprint(d.Seconds())}
	if drv.spin {
		args = append(args, "spin")
	}
	out, err := osexec.Command(drv.program, args...).Output()
	if err != nil {
		res.Error = "driver: " + err.Error()
		return res
	}
	var r struct {
		RoundTrips int64   `json:"round_trips"`
		PerSecond  float64 `json:"round_trips_per_s"`
		P50        float64 `json:"turnaround_p50_us"`
		P99        float64 `json:"turnaround_p99_us"`
		P999       float64 `json:"turnaround_p999_us"`
		Stalls     int64   `json:"stalls"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		res.Error = fmt.Sprintf("driver said %q: %v", out, err)
		return res
	}
	res.RoundTrips, res.PerSecond, res.P50us, res.P99us, res.P999us, res.Stalls = r.RoundTrips, r.PerSecond, r.P50, r.P99, r.P999, r.Stalls
	return res
}

// startResponder starts another responder's COMMAND with its addresses and
// a rig config filled in, and waits until it has bound its port: BeamNG's
// side must not send before, or the first message would be lost and cost a
// 2 s stall (Python alone takes ~0.4 s to start here). stop ends it and
// says its peak RSS (KiB).
func startResponder(c *call, command string, listen, beamng netip.AddrPort) (stop func() int64, err error) {
	cfgPath, err := benchConfig(listen, beamng)
	if err != nil {
		return nil, err
	}
	argv := strings.Fields(strings.NewReplacer("{listen}", listen.String(), "{beamng}", beamng.String(),
		"{config}", cfgPath).Replace(command))
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		os.Remove(cfgPath)
		return nil, fmt.Errorf("cannot start: %w", err)
	}
	stop = func() int64 {
		defer os.Remove(cfgPath)
		rss := livePeakRSS(cmd.Process.Pid)
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if rss == 0 {
			rss = childPeakRSS(cmd.ProcessState)
		}
		return rss
	}
	if err := waitBound(listen, 10*time.Second); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

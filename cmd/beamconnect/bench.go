package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"beamconnect/beamng/emulator"
	"beamconnect/bench"
)

var cmdBench = &command{
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
		d := fs.Duration("duration", 3*time.Second, "how long to measure each responder, from its first reply (with --soak: how long to soak, default 10m)")
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
				var rs []bench.FleetResult
				for _, p := range *periods {
					for _, n := range *vehicles {
						if n < 1 || p < 500*time.Microsecond || p > 500*time.Millisecond {
							fmt.Fprintf(c.stderr, "%s bench: --vehicles %d --period %v: expected at least 1 vehicle and a period from 0.5 ms to 500 ms\n", programName, n, p)
							return exitUsage
						}
						c.log.Info("measuring", "vehicles", n, "period", p, "for", *d)
						r, err := bench.Fleet(context.Background(), n, p, *d)
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
			drv := bench.Driver{Spin: *driver == "spin", Program: *cDriver}
			if *fmuPath != "" {
				abs, err := filepath.Abs(*fmuPath)
				if err != nil {
					return c.fail("bench", err)
				}
				drv.FMU = abs
			}
			return benchCmd(c, *d, *rs, drv, *rounds)
		}
	},
}

func benchCmd(c *call, d time.Duration, responders []string, drv bench.Driver, rounds int) int {
	if d <= 0 {
		fmt.Fprintf(c.stderr, "%s bench: --duration must be positive\n", programName)
		return exitUsage
	}
	exe, _ := os.Executable()
	list := bench.Responders(exe, drv)
	for _, r := range responders {
		name, cmd, ok := strings.Cut(r, "=")
		if !ok || name == "" || strings.TrimSpace(cmd) == "" {
			fmt.Fprintf(c.stderr, "%s bench: --responder %q: expected NAME=COMMAND\n", programName, r)
			return exitUsage
		}
		list = append(list, bench.Responder{Name: name, Command: cmd})
	}
	results, warnings := bench.Run(bench.Options{Responders: list, Driver: drv, Duration: d, Rounds: rounds, Log: c.log, Stderr: c.stderr})
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
	if drv.Spin {
		how = "busy-polling for each reply"
	}
	who := "the emulator, free-running, simulinkTime 0.5 ms"
	if drv.Program != "" {
		who = drv.Program + ", its own process, a message as soon as the last reply is in"
	}
	fmt.Fprintf(c.stdout, "(BeamNG's side: %s, one message in flight, %s; %s each, %d rounds; %s/%s, %d CPUs)\n",
		who, how, d, rounds, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	for _, w := range warnings {
		fmt.Fprintln(c.stdout, "warning: "+w)
	}
	return exitOK
}

// soakCmd soaks for d and prints the report.
func soakCmd(c *call, d time.Duration, faults []string) int {
	for _, spec := range faults {
		var f emulator.Faults
		if err := emulator.ParseFault(spec, &f); err != nil {
			fmt.Fprintf(c.stderr, "%s bench: --fault: %v\n", programName, err)
			return exitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := bench.Soak(ctx, d, faults, c.log)
	if err != nil {
		return c.fail("bench", err)
	}
	if c.json {
		writeJSON(c.stdout, r)
	} else {
		printSoak(c.stdout, r)
	}
	return exitOK
}

func printFleetBench(w io.Writer, rs []bench.FleetResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VEHICLES\tPERIOD\tREAL-TIME FACTOR\tSTALLS\tREPLIES APPLIED\tROUND TRIPS/S\tPER CPU-SECOND\tCPU CORES\tTURNAROUND P99\tHOLDS REAL TIME")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%g ms\t%.3f\t%d\t%d of %d\t%.0f\t%.0f\t%.2f\t%.0f µs\t%v\n", r.Vehicles, r.PeriodMs, r.RealtimeFactor, r.Stalls,
			r.Accepted, r.Sent, r.PerSecond, r.PerCPUSecond, r.CPUCores, r.P99us, r.RealTime)
	}
	tw.Flush()
}

func printSoak(w io.Writer, r bench.SoakResult) {
	fmt.Fprintf(w, "soak: %s at BeamNG's fastest rate (a message every 0.5 ms physics step), paced like BeamNG, with faults %s\n", r.Duration, strings.Join(r.Faults, " "))
	fmt.Fprintf(w, "  BeamNG sent %d messages; beamconnect answered %d; unanswered %d: %d dropped or cut by the faults, %d stale after stalls, %d other\n",
		r.Sent, r.Answered, r.Unanswered, r.LostToFaults, r.Drained, r.LostOther)
	fmt.Fprintf(w, "  BeamNG accepted %d replies, rejected %d; dropped datagrams %d\n", r.Accepted, r.Rejected, r.Dropped)
	fmt.Fprintf(w, "  stalls %d; lockstep lost %d times (%.3f s); episodes out of lockstep (BeamNG's counters) %d, recovery p50 %.1f ms, max %.1f ms; ended in lockstep %v\n",
		r.Stalls, r.LockstepLost, r.OutOfLockstepS, r.Episodes, r.RecoveryP50ms, r.RecoveryMaxms, r.EndedInLockstep)
	fmt.Fprintf(w, "  recording: %d rows, %d lost\n", r.RecordRows, r.RecordLost)
	if r.HeapStartMiB > 0 {
		fmt.Fprintf(w, "  memory: heap in use %.2f MiB after 10 s, %.2f MiB at the end (max %.2f); RSS %.1f → %.1f MiB; %d GCs after 10 s; %.4f allocations per message in the process (both sides)\n",
			r.HeapStartMiB, r.HeapEndMiB, r.HeapMaxMiB, r.RSSStartMiB, r.RSSEndMiB, r.GCs, r.AllocsPerMsg)
	} else {
		fmt.Fprintf(w, "  memory: heap in use %.2f MiB at the end, RSS %.1f MiB (growth needs a soak over 10 s)\n", r.HeapEndMiB, r.RSSEndMiB)
	}
	fmt.Fprintf(w, "  turnaround p50 %.1f µs, p99 %.1f µs\n", r.TurnaroundP50us, r.TurnaroundP99us)
	if r.Injected != nil {
		fmt.Fprintf(w, "  injected: %+v\n", *r.Injected)
	}
	for _, f := range r.ReportedFaults {
		fmt.Fprintf(w, "  reported: %s\n", f)
	}
}

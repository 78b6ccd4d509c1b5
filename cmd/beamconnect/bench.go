package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
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
--fmusim PATH adds the binary exported as an FMU ('fmu export' of a rig at
0.5 ms) and stepped one period at a time by that master (fmusim, the FMI
reference master: bash fmu/testdata/oracle/build builds it).

--load N measures each responder quiet and then beside N busy loops
(processes of their own that only compute, at normal priority, as the PC
beside BeamNG has every core busy), interleaved round by round, and reports
the two side by side with their ratio. --min-ratio R then exits 1 when a
responder's loaded round trips fall below R times its quiet ones. --only
NAME measures only the responders whose name contains NAME (repeatable):
  beamconnect bench --load 2 --fmu cruise.fmu --fmusim "$(bash fmu/testdata/oracle/build)" \
                    --only FMU --only exported --rounds 3

--soak runs beamconnect (in process, with a recording) against BeamNG's side
paced in real time at its fastest rate, a message every 0.5 ms, for
--duration (default 10 minutes), or for --sim-duration of BeamNG's simulated
time (the same messages on any machine; --duration then only bounds it), with
faults on (--fault, repeatable; by
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
		simDuration := fs.Duration("sim-duration", 0, "with --soak: soak for this much of BeamNG's simulated time instead (stalls add to it; --duration then only bounds it)")
		fmusim := fs.String("fmusim", "", "measure beamconnect exported as an FMU too, stepped by this FMI master (fmusim)")
		load := fs.Int("load", 0, "measure each responder quiet and beside this many busy loops, side by side")
		minRatio := fs.Float64("min-ratio", 0, "with --load: exit 1 when a responder's loaded round trips fall below this times its quiet ones")
		only := fs.StringArray("only", nil, "measure only the responders whose name contains this (repeatable)")
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
				if *d <= 0 || *simDuration < 0 {
					fmt.Fprintf(c.stderr, "%s bench: --duration must be positive, --sim-duration not negative\n", programName)
					return exitUsage
				}
				return soakCmd(c, *d, *simDuration, *faults)
			}
			if len(*faults) > 0 || fs.Changed("sim-duration") {
				fmt.Fprintf(c.stderr, "%s bench: --fault and --sim-duration apply to --soak only\n", programName)
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
			if *load < 0 || *load > 64 {
				fmt.Fprintf(c.stderr, "%s bench: --load %d: expected 0 to 64 busy loops\n", programName, *load)
				return exitUsage
			}
			if *minRatio != 0 && *load == 0 {
				fmt.Fprintf(c.stderr, "%s bench: --min-ratio applies with --load only\n", programName)
				return exitUsage
			}
			drv := bench.Driver{Spin: *driver == "spin", Program: *cDriver, FMUSim: *fmusim}
			if *fmuPath != "" {
				abs, err := filepath.Abs(*fmuPath)
				if err != nil {
					return c.fail("bench", err)
				}
				drv.FMU = abs
			}
			if drv.FMUSim != "" {
				dir, err := os.MkdirTemp("", "beamconnect-bench-")
				if err != nil {
					return c.fail("bench", err)
				}
				defer os.RemoveAll(dir)
				if drv.Exported, err = exportRig(dir); err != nil {
					return c.fail("bench", err)
				}
			}
			return benchCmd(c, *d, *rs, drv, benchRun{rounds: *rounds, load: *load, minRatio: *minRatio, only: *only})
		}
	},
}

// benchRun is how bench measures the responders: rounds, the busy loops
// beside them, the ratio they must keep, which of them.
type benchRun struct {
	rounds   int
	load     int
	minRatio float64
	only     []string
}

func benchCmd(c *call, d time.Duration, responders []string, drv bench.Driver, how benchRun) int {
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
	if len(how.only) > 0 {
		list = slices.DeleteFunc(list, func(r bench.Responder) bool {
			return !slices.ContainsFunc(how.only, func(s string) bool { return strings.Contains(r.Name, s) })
		})
		if len(list) == 0 {
			fmt.Fprintf(c.stderr, "%s bench: --only %s: no responder's name contains it\n", programName, strings.Join(how.only, ", "))
			return exitUsage
		}
	}
	results, warnings := bench.Run(bench.Options{Responders: list, Driver: drv, Duration: d, Rounds: how.rounds, Log: c.log, Stderr: c.stderr,
		Load: how.load, LoadArgv: []string{exe, cmdBenchBusy.name}})
	code := exitOK
	for _, r := range results {
		if r.Load > 0 && r.Ratio < how.minRatio {
			code = exitFailed
		}
	}
	if c.json {
		writeJSON(c.stdout, results)
		return code
	}
	if how.load > 0 {
		printLoadBench(c.stdout, results, how)
	} else {
		printBench(c.stdout, results)
	}
	how2 := "waiting for each reply in a blocking receive, as BeamNG does"
	if drv.Spin {
		how2 = "busy-polling for each reply"
	}
	who := "the emulator, free-running, simulinkTime 0.5 ms"
	if drv.Program != "" {
		who = drv.Program + ", its own process, a message as soon as the last reply is in"
	}
	fmt.Fprintf(c.stdout, "(BeamNG's side: %s, one message in flight, %s; %s each, %d rounds; %s/%s, %d CPUs)\n",
		who, how2, d, how.rounds, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	for _, w := range warnings {
		fmt.Fprintln(c.stdout, "warning: "+w)
	}
	return code
}

// printBench prints each responder's figures.
func printBench(w io.Writer, results []bench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
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
}

// printLoadBench prints each responder quiet and beside the busy loops,
// side by side (Run gives the two one after the other), and says which
// fall below the ratio.
func printLoadBench(w io.Writer, results []bench.Result, how benchRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "responder\tquiet: round trips/s\tp99 µs\tstalls\t%d busy loops: round trips/s\tp99 µs\tstalls\tloaded/quiet\t\n", how.load)
	var below []string
	for i := 0; i+1 < len(results); i += 2 {
		q, l := results[i], results[i+1]
		cell := func(r bench.Result) string {
			if r.Error != "" {
				return r.Error + "\t\t"
			}
			return fmt.Sprintf("%.0f\t%.1f\t%d", r.PerSecond, r.P99us, r.Stalls)
		}
		ratio := "-"
		if l.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", l.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", q.Name, cell(q), cell(l), ratio)
		if l.Ratio < how.minRatio {
			below = append(below, fmt.Sprintf("%s %s", q.Name, ratio))
		}
	}
	tw.Flush()
	if len(below) > 0 {
		fmt.Fprintf(w, "below --min-ratio %g: %s\n", how.minRatio, strings.Join(below, ", "))
	}
}

// exportRig exports bench's rig (bench.ExportRig) as an FMU into dir with
// this binary, as 'fmu export' does, and returns its path.
func exportRig(dir string) (string, error) {
	rig, out := filepath.Join(dir, "rig.json"), filepath.Join(dir, "rig.fmu")
	if err := os.WriteFile(rig, []byte(bench.ExportRig), 0o644); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if bench.TestBinary(exe) {
		return "", errors.New("--fmusim exports this binary, which is a test binary: run beamconnect itself")
	}
	if said, err := osexec.Command(exe, "fmu", "export", rig, "-o", out).CombinedOutput(); err != nil {
		return "", fmt.Errorf("exporting the rig for the master: %v: %s", err, said)
	}
	return out, nil
}

// cmdBenchBusy is one of bench --load's busy loops: this binary again,
// computing until it is killed.
var cmdBenchBusy = &command{
	name:     "bench-busy",
	summary:  "internal: a busy loop beside bench's measurements (bench --load)",
	internal: true,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		return func(c *call) int { bench.Busy(); return exitOK }
	},
}

// soakCmd soaks for d (or sim of BeamNG's time) and prints the report.
func soakCmd(c *call, d, sim time.Duration, faults []string) int {
	for _, spec := range faults {
		var f emulator.Faults
		if err := emulator.ParseFault(spec, &f); err != nil {
			fmt.Fprintf(c.stderr, "%s bench: --fault: %v\n", programName, err)
			return exitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := bench.Soak(ctx, d, sim, faults, c.log)
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

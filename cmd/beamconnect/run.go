package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"beamconnect/beamng/cosim"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/timesync"
)

func init() {
	register(&command{
		name:    "run",
		args:    "FILE",
		summary: "couple a model to BeamNG as the config says (the main job)",
		help: `Binds the config's local address, waits for BeamNG, and for every BeamNG message
updates the output ports, steps the model and replies with the input ports, at
whatever rate BeamNG sends. Port 0 carries the connection directive (in) and
status (out): 1 unconnected, 2 connecting, 3 connected, 4 error, 5 disconnecting.

The model is the config's beamng.model (built-ins: cruise-pedals, cruise-torque,
heading-hold, hold; or exec), unless --model names another; --model hold runs
any config as a pure logger.

With --emulate, BeamNG's side runs in the same process on free loopback ports,
so every example runs on a machine without BeamNG.

Reply ids: "next" (default) answers id+1 and, after BeamNG's 2 s blocking
timeout (a pause of the model, a lost reply), restarts its ids so BeamNG is
back in lockstep at once; "echo" is the S-function's; "counter" the FMU's.

Fail-safe: only BeamNG's datagrams count (its host, then the port it sends
from, latched at its first message; a new port only with id 0, a reloaded
controller, or after its silence), and ids that jump further than BeamNG can
have sent are dropped; others are counted and warned about, naming the
address seen and the one expected. A model that dies, hangs (longer than
beamng.modelTimeoutMs) or panics is a fault: an error is logged at once,
status 4 is reported, BeamNG gets neutral controls (pedals released, wheel
torques 0) instead of the last ones and keeps being answered. A bind that
fails (another program on the port) is retried with backoff. A watchdog
sees BeamNG run ahead of the replies (out of lockstep) and repairs its
window where the protocol allows. --record writes whole rows every 250 ms,
even while BeamNG is silent; it refuses the config file, and any existing
file that is not a recording unless --force; a write error (a full disk)
is logged at once and the coupling goes on.

A config with several vehicles (beamng.vehicles) couples every one of them:
a socket pair, reply ids and counters per vehicle, one model for all, stepped
by each vehicle's message with that vehicle's fresh data and the others'
latest; port 0 reports connected only when every vehicle is; --json adds a
"vehicles" object and --record a vehicle column. Fields may relate two
vehicles (distance or VSAP_DISTANCE, gap, closingSpeed, timeGap,
timeToCollision; params names the other vehicle).

--http 127.0.0.1:8080 serves a live page while it runs: the status and its
history, rates, turnaround, a scope of every port (uPlot, embedded; samples
by Server-Sent Events from a ring the loop never waits on), reloads and
refusals, the config in use; and /metrics in Prometheus' text format. It
binds only where told (":8080" is loopback) and answers only GET.
'beamconnect plot' draws a --record file afterwards.

Exit status: 0 for a healthy run, 1 when anything went wrong: never
connected, datagrams that were not BeamNG's, BeamNG stalls, silences or lost
lockstep, model faults, lost recording rows; the summary lists each.
--fault (with --emulate) makes the emulated BeamNG misbehave, to see all this.

` + coupling.PingResultsLayout + `

` + models.ExecProtocol,
		flags: func(fs *pflag.FlagSet) func(*call) int {
			o := &runOpts{}
			fs.StringVar(&o.model, "model", "", "the model to run instead of the config's beamng.model")
			fs.BoolVar(&o.emulate, "emulate", false, "run BeamNG's side in process on free loopback ports")
			fs.BoolVar(&o.freeRunning, "free-running", false, "with --emulate: step as fast as the coupling allows instead of in real time")
			fs.DurationVar(&o.duration, "duration", 0, "stop after this long (wall clock); 0 runs until interrupted")
			fs.StringVar(&o.record, "record", "", "write time, status and every port value per message to this CSV file")
			fs.BoolVar(&o.force, "force", false, "let --record overwrite an existing file that is not a recording (never the config itself)")
			fs.BoolVar(&o.noWatch, "no-watch", false, "do not reload the config when its file changes (SIGHUP still reloads)")
			fs.BoolVar(&o.busyPoll, "busy-poll", false, "read BeamNG's messages by busy polling on a locked thread (Linux): the lowest latency, one CPU core kept busy (per vehicle); as beamng.busyPoll")
			fs.StringArrayVar(&o.faults, "fault", nil, "with --emulate: make the emulated BeamNG misbehave, e.g. reorder-replies=0.05 (repeatable; see emulate --help)")
			fs.StringVar(&o.http, "http", "", "serve a live page (status, scope of every port, reloads, config) and Prometheus /metrics at this address, e.g. 127.0.0.1:8080 (a bare :PORT binds loopback only)")
			fs.Bool("json", false, "print the final summary as one JSON object")
			return func(c *call) int { return runCmd(c, o) }
		},
	})
}

type runOpts struct {
	model, record, http  string
	emulate, freeRunning bool
	noWatch, force       bool
	busyPoll             bool
	duration             time.Duration
	faults               []string
}

// runSummary is what a run reports at the end.
type runSummary struct {
	Messages        int64    `json:"messages"`
	Replies         int64    `json:"replies"`
	Dropped         int64    `json:"dropped"`
	Foreign         int64    `json:"foreign"`
	WrongSize       int64    `json:"wrong_size"`
	Malformed       int64    `json:"malformed"`
	Duplicates      int64    `json:"duplicates"`
	IDJumps         int64    `json:"id_jumps"`
	Drained         int64    `json:"drained"`
	StallsRecovered int64    `json:"stalls_recovered"`
	LateReplies     int64    `json:"late_replies"`
	Restarts        int64    `json:"restarts"`
	SourceChanges   int64    `json:"source_changes"`
	Silences        int64    `json:"silences"`
	BindFailures    int64    `json:"bind_failures"`
	Connected       bool     `json:"connected"` // BeamNG's messages came at all
	TurnaroundP50   float64  `json:"turnaround_p50_us"`
	TurnaroundP99   float64  `json:"turnaround_p99_us"`
	TurnaroundMax   float64  `json:"turnaround_max_us"`
	StatusAtEnd     int      `json:"status_at_end"` // when the run was asked to stop
	FinalStatus     int      `json:"final_status"`  // after it disconnected
	ReplyID         string   `json:"reply_id"`
	Model           string   `json:"model"`
	ModelFaults     int64    `json:"model_faults"`
	NeutralReplies  int64    `json:"neutral_replies"`
	ModelMissed     int64    `json:"model_missed,omitempty"`
	ModelDiscarded  int64    `json:"model_discarded,omitempty"`
	ModelSkipped    int64    `json:"model_skipped,omitempty"`
	ModelRestarts   int64    `json:"model_restarts,omitempty"`
	ModelMaxAgeMs   float64  `json:"model_oldest_answer_ms,omitempty"`
	LockstepLost    int64    `json:"lockstep_lost"`
	OutOfLockstepS  float64  `json:"out_of_lockstep_s"`
	RecordRows      int64    `json:"record_rows,omitempty"`
	RecordWritten   int64    `json:"record_written,omitempty"`
	RecordLost      int64    `json:"record_lost,omitempty"`
	RecordError     string   `json:"record_error,omitempty"`
	WallS           float64  `json:"wall_s"`
	SimS            float64  `json:"sim_s"`
	TimeSync        string   `json:"time_sync"`
	TimeDilation    float64  `json:"time_dilation"`
	PacingP50       float64  `json:"pacing_error_p50_us"`
	PacingP99       float64  `json:"pacing_error_p99_us"`
	Overruns        int64    `json:"pacing_overruns"`
	Reloads         int64    `json:"reloads"`
	ReloadErrors    int64    `json:"reload_errors"`
	Faults          []string `json:"faults"`
	Healthy         bool     `json:"healthy"`

	Emulator *emulator.Summary `json:"emulator,omitempty"`
	// Vehicles holds each vehicle's own figures when the config couples
	// several; the figures above are then their sums (turnaround: the worst).
	Vehicles map[string]vehicleSummary `json:"vehicles,omitempty"`
}

// vehicleSummary is one vehicle's part of a several-vehicle run.
type vehicleSummary struct {
	Messages        int64             `json:"messages"`
	Replies         int64             `json:"replies"`
	Dropped         int64             `json:"dropped"`
	StallsRecovered int64             `json:"stalls_recovered"`
	Restarts        int64             `json:"restarts"`
	Silences        int64             `json:"silences"`
	LockstepLost    int64             `json:"lockstep_lost"`
	TurnaroundP50   float64           `json:"turnaround_p50_us"`
	TurnaroundP99   float64           `json:"turnaround_p99_us"`
	StatusAtEnd     int               `json:"status_at_end"`
	Faults          []string          `json:"faults"`
	Emulator        *emulator.Summary `json:"emulator,omitempty"`
}

func runCmd(c *call, o *runOpts) int {
	usage := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "%s run: %s\nRun '%s run --help' for usage.\n", programName, fmt.Sprintf(format, args...), programName)
		return exitUsage
	}
	if len(c.args) != 1 {
		return usage("expected exactly one config file, got %d", len(c.args))
	}
	if o.duration < 0 {
		return usage("--duration %v: expected 0 (run until interrupted) or a positive duration", o.duration)
	}
	if o.freeRunning && !o.emulate {
		return usage("--free-running applies to --emulate only")
	}
	if len(o.faults) > 0 && !o.emulate {
		return usage("--fault applies to --emulate only (it makes the emulated BeamNG misbehave)")
	}
	var faults emulator.Faults
	for _, spec := range o.faults {
		if err := emulator.ParseFault(spec, &faults); err != nil {
			return usage("--fault: %v", err)
		}
	}
	plan, _, code := loadPlan(c, c.args[0])
	if plan == nil {
		return code
	}
	name := plan.Model
	params := plan.ModelParams
	if o.model != "" && o.model != name {
		name, params = o.model, nil // the config's parameters belong to its own model
	}
	model, err := models.New(name, params, plan, c.log)
	if err != nil {
		return c.fail("run", err)
	}
	if cl, ok := model.(models.Closer); ok {
		defer func() {
			if err := cl.Close(); err != nil {
				c.log.Warn("model", "err", err)
			}
		}()
	}

	opts := coupling.Options{Plan: plan, Model: model, Log: c.log, BusyPoll: o.busyPoll}
	if (o.busyPoll || plan.BusyPoll) && runtime.GOOS == "linux" {
		// A P per spinning link and no more: other Ps would only add
		// threads that compete with BeamNG for the remaining cores (and
		// spin looking for work); the rest of beamconnect (status line,
		// recorder, watchdog) runs when a link yields, at least every
		// millisecond or so. The in-process emulator needs one more.
		procs := len(plan.Vehicles)
		if o.emulate {
			procs++
		}
		procs = min(procs, runtime.NumCPU())
		prev := runtime.GOMAXPROCS(procs)
		c.log.Info("busy polling", "spinning_links", len(plan.Vehicles), "gomaxprocs", procs, "was", prev)
	}
	if o.record != "" {
		f, err := coupling.OpenRecording(o.record, c.args[0], o.force)
		if err != nil {
			return c.fail("run", err)
		}
		defer f.Close()
		opts.Record = coupling.NewRecorder(f, plan, c.log)
	}
	if o.emulate {
		opts.Local = netip.MustParseAddrPort("127.0.0.1:0")
	}
	mon, err := prepareMonitor(o.http, plan, &opts)
	if err != nil {
		return usage("--http: %v", err)
	}
	if mon != nil {
		defer mon.ln.Close()
	}
	if len(plan.Vehicles) > 1 {
		return runFleet(c, o, plan, name, model, opts, faults, mon)
	}
	cp, err := coupling.New(opts)
	if err != nil {
		return c.fail("run", err)
	}

	ctx, cancel := runContext(o.duration)
	defer cancel()

	var emWait sync.WaitGroup
	var emSum *emulator.Summary
	if o.emulate {
		if err := cp.Bind(); err != nil {
			return c.fail("run", err)
		}
		link, err := emulator.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), cp.LocalAddr())
		if err != nil {
			return c.fail("run", err)
		}
		defer link.Close()
		cp.SetRemote(link.LocalAddr())
		em, err := emulator.New(emulator.Config{
			SimulinkTime: plan.Period, PingTime: plan.PingTime, PhysicsDt: plan.PhysicsDt, FreeRunning: o.freeRunning,
			Faults: faults, CSV: plan.Vehicles[0].CSV,
		}, link)
		if err != nil {
			return c.fail("run", err)
		}
		c.log.Info("emulating BeamNG in process", "beamng", link.LocalAddr(), "beamconnect", cp.LocalAddr())
		emWait.Add(1)
		go func() {
			defer emWait.Done()
			s, _ := em.Run(ctx)
			emSum = &s
		}()
	}

	if mon != nil {
		mon.start(ctx, c, plan, []*coupling.Coupling{cp}, cp.Status)
	}
	stopWatch := watchConfig(ctx, c, cp, c.args[0], plan.Vehicles[0].CSV, o.noWatch, mon.observer())
	stopLine := statusLine(c, cp, plan)
	start := time.Now()
	runErr := cp.Run(ctx)
	stopLine()
	stopWatch()
	emWait.Wait()
	mon.wait()

	sum := summarize(cp, plan, name, model, opts.Record)
	sum.WallS = time.Since(start).Seconds()
	sum.Emulator = emSum
	if c.json {
		writeJSON(c.stdout, sum)
	} else {
		printRunSummary(c, sum)
	}
	if runErr != nil {
		return c.fail("run", runErr)
	}
	if !sum.Healthy {
		return exitFailed
	}
	return exitOK
}

// summarize reads the coupling's, the model's and the recording's counters
// at the end of a run, and lists the faults.
func summarize(cp *coupling.Coupling, plan *ports.Plan, model string, m models.Model, rec *coupling.Recorder) runSummary {
	st := cp.Stats()
	sum := runSummary{
		Messages: st.Messages.Load(), Replies: st.Replies.Load(), Dropped: st.Dropped(),
		Foreign: st.Foreign.Load(), WrongSize: st.WrongSize.Load(), Malformed: st.Malformed.Load(),
		Duplicates: st.Duplicates.Load(), IDJumps: st.IDJumps.Load(), Drained: st.Drained.Load(),
		StallsRecovered: st.StallsRecovered.Load(), LateReplies: st.Late.Load(), Restarts: st.Restarts.Load(),
		SourceChanges: st.SourceChanges.Load(), Silences: st.Silences.Load(), BindFailures: st.BindFailures.Load(),
		Connected:     st.Connects.Load() > 0,
		TurnaroundP50: us(st.Turnaround.Quantile(0.5)), TurnaroundP99: us(st.Turnaround.Quantile(0.99)),
		TurnaroundMax: us(st.Turnaround.Max()),
		StatusAtEnd:   int(st.StatusAtEnd()), FinalStatus: int(cp.Status()), ReplyID: string(plan.ReplyID), Model: model,
		ModelFaults: st.ModelFaults.Load(), NeutralReplies: st.NeutralReplies.Load(),
		LockstepLost: st.LockstepLost.Load(), OutOfLockstepS: st.OutOfLockstepTotal().Seconds(),
		SimS: cp.SimTime(), TimeSync: plan.TimeSync.String(), TimeDilation: plan.TimeDilation,
		PacingP50: us(cp.Sync().PacingError(0.5)), PacingP99: us(cp.Sync().PacingError(0.99)),
		Overruns: cp.Sync().Overruns,
		Reloads:  st.Reloads.Load(), ReloadErrors: st.ReloadErrors.Load(),
		Faults: cp.Faults(),
	}
	if ex, ok := m.(*models.Exec); ok {
		sum.ModelMissed, sum.ModelDiscarded, sum.ModelSkipped = ex.Missed(), ex.Bad(), ex.Skipped()
		sum.ModelRestarts, sum.ModelMaxAgeMs = ex.Restarts(), float64(ex.MaxAnswerAge().Microseconds())/1e3
		if n := ex.Bad(); n > 0 {
			sum.Faults = append(sum.Faults, fmt.Sprintf("the model's program gave %d answers that were discarded (see the log for why)", n))
		}
	}
	if rec != nil {
		err := rec.Close()
		sum.RecordRows, sum.RecordWritten, sum.RecordLost = rec.Rows(), rec.Written(), rec.Lost()
		if err != nil {
			sum.RecordError = err.Error()
			sum.Faults = append(sum.Faults, fmt.Sprintf("the recording lost %d of %d rows: %v", sum.RecordLost, sum.RecordRows, err))
		}
	}
	if sum.Faults == nil {
		sum.Faults = []string{}
	}
	sum.Healthy = len(sum.Faults) == 0
	return sum
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func printRunSummary(c *call, s runSummary) {
	w := c.stdout
	fmt.Fprintf(w, "beamconnect run: %d BeamNG messages, %d replies in %.1f s (model %s, reply ids %s)\n",
		s.Messages, s.Replies, s.WallS, s.Model, s.ReplyID)
	fmt.Fprintf(w, "  turnaround p50 %.0f µs, p99 %.0f µs, max %.0f µs\n", s.TurnaroundP50, s.TurnaroundP99, s.TurnaroundMax)
	fmt.Fprintf(w, "  time sync %s (timeDilation %g): %.3f s simulated in %.3f s", s.TimeSync, s.TimeDilation, s.SimS, s.WallS)
	if s.TimeSync == "master" {
		fmt.Fprintf(w, ", pacing error p50 %.1f µs, p99 %.1f µs, overruns %d", s.PacingP50, s.PacingP99, s.Overruns)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  dropped %d (not BeamNG's %d, wrong size %d, malformed %d, repeated id %d, id jump %d); stale drained %d\n",
		s.Dropped, s.Foreign, s.WrongSize, s.Malformed, s.Duplicates, s.IDJumps, s.Drained)
	fmt.Fprintf(w, "  BeamNG stalls recovered %d, silences %d, controller restarts %d, new source address %d, late replies withheld %d\n",
		s.StallsRecovered, s.Silences, s.Restarts, s.SourceChanges, s.LateReplies)
	fmt.Fprintf(w, "  lockstep lost %d times (%.3f s)\n", s.LockstepLost, s.OutOfLockstepS)
	fmt.Fprintf(w, "  model faults %d (neutral replies %d)", s.ModelFaults, s.NeutralReplies)
	if s.Model == "exec" {
		fmt.Fprintf(w, "; exec: answers missed %d, discarded %d, requests skipped %d, restarts %d, oldest answer used %.1f ms",
			s.ModelMissed, s.ModelDiscarded, s.ModelSkipped, s.ModelRestarts, s.ModelMaxAgeMs)
	}
	fmt.Fprintln(w)
	if s.RecordRows > 0 || s.RecordError != "" {
		fmt.Fprintf(w, "  recording: %d rows, %d written, %d lost\n", s.RecordRows, s.RecordWritten, s.RecordLost)
	}
	fmt.Fprintf(w, "  config reloads %d, refused %d\n", s.Reloads, s.ReloadErrors)
	fmt.Fprintf(w, "  status at the end %d (%s), after disconnecting %d (%s)\n",
		s.StatusAtEnd, coupling.Status(s.StatusAtEnd), s.FinalStatus, coupling.Status(s.FinalStatus))
	if s.Emulator != nil {
		fmt.Fprintf(w, "  emulated BeamNG: %v\n", *s.Emulator)
	}
	if s.Healthy {
		fmt.Fprintln(w, "healthy: BeamNG coupled in lockstep, no faults")
		return
	}
	fmt.Fprintf(w, "FAULTS (exit status %d):\n", exitFailed)
	for _, f := range s.Faults {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}

// statusLine redraws one line on stderr four times a second while the run
// goes on, when stderr is a terminal. It reads only the coupling's atomic
// counters. The returned func stops it and clears the line.
func statusLine(c *call, cp *coupling.Coupling, plan *ports.Plan) func() {
	if !c.stderrIsTTY {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		st := cp.Stats()
		last, lastT := st.Messages.Load(), time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(c.stderr, "\r\033[K")
				return
			case now := <-t.C:
				n := st.Messages.Load()
				rate := float64(n-last) / now.Sub(lastT).Seconds()
				last, lastT = n, now
				var b strings.Builder
				sync := plan.TimeSync.String()
				if plan.TimeSync == timesync.Slave && now.Sub(time.Unix(0, st.LastArrival.Load())) > 2*time.Duration(plan.Period*float64(time.Second)) {
					sync += ", blocked: waiting for BeamNG's time"
				}
				fmt.Fprintf(&b, "\r\033[K%s | t %.3f s (%s) | %.0f msg/s | turnaround p50 %.0f µs p99 %.0f µs | overdue %d | reply ids %s | stalls recovered %d | reloads %d",
					cp.Status(), math.Float64frombits(st.LocalTime.Load()), sync, rate,
					us(st.Turnaround.Quantile(0.5)), us(st.Turnaround.Quantile(0.99)),
					st.Overdue.Load(), cp.Plan().ReplyID, st.StallsRecovered.Load(), st.Reloads.Load())
				if lost, since := st.LockstepLostNow(); lost {
					fmt.Fprintf(&b, " | LOCKSTEP LOST %.1f s", now.Sub(since).Seconds())
				}
				if n := st.ModelFaults.Load(); n > 0 {
					fmt.Fprintf(&b, " | model faults %d", n)
				}
				if n := st.Dropped(); n > 0 {
					fmt.Fprintf(&b, " | dropped %d", n)
				}
				fmt.Fprint(c.stderr, b.String())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// watchConfig reloads the config when its file changes (unless noWatch)
// and on SIGHUP. Every outcome is logged: the diff of an applied reload,
// or each reason a reload was refused, with file:line:col.
// reloader is what watchConfig reloads: a coupling, or a fleet of them.
type reloader interface {
	ReloadConfig(path string, data []byte) (ports.Changes, error)
}

func watchConfig(ctx context.Context, c *call, cp reloader, path string, csv *cosim.File, noWatch bool, obs reloadObserver) func() {
	ctx, cancel := context.WithCancel(ctx)
	w := config.NewWatcher(path, 0, c.log)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var wg sync.WaitGroup
	reload := func(data []byte) {
		ch, err := cp.ReloadConfig(path, data)
		var ds config.Diagnostics
		switch {
		case errors.As(err, &ds):
			c.log.Warn("config reload refused; the running config stays", "file", path, "errors", ds.Errors())
			var why []string
			for _, d := range ds {
				c.log.Warn(d.String())
				why = append(why, d.String())
			}
			if obs != nil {
				obs.Refused(why)
			}
		case err != nil:
			c.log.Warn("config reload refused; the running config stays", "file", path, "why", err.Error())
			if obs != nil {
				obs.Refused([]string{err.Error()})
			}
		case ch.None():
			c.log.Info("config rewritten with nothing a run can see changed", "file", path)
		default:
			c.log.Info("config reloaded", "file", path, "changes", len(ch.Live))
			for _, l := range ch.Live {
				c.log.Info("  " + l)
			}
			if obs != nil {
				obs.Reloaded(ch.Live, data)
			}
		}
	}
	if csv != nil && !noWatch {
		// A Gen 2 config depends on its CSV too: an edit of the CSV re-checks
		// the config, and is refused unless the layout stays the same.
		cw := config.NewWatcher(csv.Path, 0, c.log)
		wg.Go(func() {
			cw.Run(ctx, func([]byte) {
				c.log.Info("the interface CSV changed: re-checking the config", "csv", csv.Path)
				w.Force()
			})
		})
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				c.log.Info("SIGHUP: reloading the config", "file", path)
				w.Force()
				if noWatch {
					if data, err := os.ReadFile(path); err == nil {
						reload(data)
					} else {
						c.log.Warn("config unreadable", "err", err)
					}
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		if noWatch {
			<-ctx.Done()
			return
		}
		w.Run(ctx, reload)
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		wg.Wait()
	}
}

// runContext ends a run on Ctrl-C or SIGTERM, or after d when d > 0. After
// the first signal the run winds down (neutral controls, summary); a second
// one kills it, should a hung model hold it up.
func runContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	if d <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

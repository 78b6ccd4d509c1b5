package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

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

` + coupling.PingResultsLayout + `

` + models.ExecProtocol,
		flags: func(fs *pflag.FlagSet) func(*call) int {
			o := &runOpts{}
			fs.StringVar(&o.model, "model", "", "the model to run instead of the config's beamng.model")
			fs.BoolVar(&o.emulate, "emulate", false, "run BeamNG's side in process on free loopback ports")
			fs.BoolVar(&o.freeRunning, "free-running", false, "with --emulate: step as fast as the coupling allows instead of in real time")
			fs.DurationVar(&o.duration, "duration", 0, "stop after this long (wall clock); 0 runs until interrupted")
			fs.StringVar(&o.record, "record", "", "write time, status and every port value per message to this CSV file")
			fs.BoolVar(&o.noWatch, "no-watch", false, "do not reload the config when its file changes (SIGHUP still reloads)")
			fs.Bool("json", false, "print the final summary as one JSON object")
			return func(c *call) int { return runCmd(c, o) }
		},
	})
}

type runOpts struct {
	model, record        string
	emulate, freeRunning bool
	noWatch              bool
	duration             time.Duration
}

// runSummary is what a run reports at the end.
type runSummary struct {
	Messages        int64             `json:"messages"`
	Replies         int64             `json:"replies"`
	Dropped         int64             `json:"dropped"`
	Foreign         int64             `json:"foreign"`
	WrongSize       int64             `json:"wrong_size"`
	Malformed       int64             `json:"malformed"`
	Duplicates      int64             `json:"duplicates"`
	Drained         int64             `json:"drained"`
	StallsRecovered int64             `json:"stalls_recovered"`
	LateReplies     int64             `json:"late_replies"`
	Restarts        int64             `json:"restarts"`
	TurnaroundP50   float64           `json:"turnaround_p50_us"`
	TurnaroundP99   float64           `json:"turnaround_p99_us"`
	TurnaroundMax   float64           `json:"turnaround_max_us"`
	FinalStatus     int               `json:"final_status"`
	ReplyID         string            `json:"reply_id"`
	Model           string            `json:"model"`
	ModelMissed     int64             `json:"model_missed,omitempty"`
	WallS           float64           `json:"wall_s"`
	SimS            float64           `json:"sim_s"`
	TimeSync        string            `json:"time_sync"`
	TimeDilation    float64           `json:"time_dilation"`
	PacingP50       float64           `json:"pacing_error_p50_us"`
	PacingP99       float64           `json:"pacing_error_p99_us"`
	Overruns        int64             `json:"pacing_overruns"`
	Reloads         int64             `json:"reloads"`
	ReloadErrors    int64             `json:"reload_errors"`
	Emulator        *emulator.Summary `json:"emulator,omitempty"`
}

func runCmd(c *call, o *runOpts) int {
	if len(c.args) != 1 {
		fmt.Fprintf(c.stderr, "%s run: expected exactly one config file, got %d\nRun '%s run --help' for usage.\n", programName, len(c.args), programName)
		return exitUsage
	}
	if o.duration < 0 {
		fmt.Fprintf(c.stderr, "%s run: --duration %v: expected 0 (run until interrupted) or a positive duration\n", programName, o.duration)
		return exitUsage
	}
	if o.freeRunning && !o.emulate {
		fmt.Fprintf(c.stderr, "%s run: --free-running applies to --emulate only\n", programName)
		return exitUsage
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
	model, err := models.New(name, params, plan)
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

	opts := coupling.Options{Plan: plan, Model: model, Log: c.log}
	var recFile *os.File
	if o.record != "" {
		if recFile, err = os.Create(o.record); err != nil {
			return c.fail("run", err)
		}
		defer recFile.Close()
		opts.Record = coupling.NewRecorder(recFile, plan)
	}
	if o.emulate {
		opts.Local = netip.MustParseAddrPort("127.0.0.1:0")
	}
	cp, err := coupling.New(opts)
	if err != nil {
		return c.fail("run", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

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

	stopWatch := watchConfig(ctx, c, cp, c.args[0], o.noWatch)
	stopLine := statusLine(c, cp, plan)
	start := time.Now()
	runErr := cp.Run(ctx)
	stopLine()
	stopWatch()
	emWait.Wait()

	st := cp.Stats()
	sum := runSummary{
		Messages: st.Messages.Load(), Replies: st.Replies.Load(),
		Foreign: st.Foreign.Load(), WrongSize: st.WrongSize.Load(), Malformed: st.Malformed.Load(),
		Duplicates: st.Duplicates.Load(), Drained: st.Drained.Load(),
		StallsRecovered: st.StallsRecovered.Load(), LateReplies: st.Late.Load(), Restarts: st.Restarts.Load(),
		TurnaroundP50: us(st.Turnaround.Quantile(0.5)), TurnaroundP99: us(st.Turnaround.Quantile(0.99)),
		TurnaroundMax: us(st.Turnaround.Max()),
		FinalStatus:   int(cp.Status()), ReplyID: string(plan.ReplyID), Model: name,
		WallS: time.Since(start).Seconds(), Emulator: emSum,
		SimS: cp.SimTime(), TimeSync: plan.TimeSync.String(), TimeDilation: plan.TimeDilation,
		PacingP50: us(cp.Sync().PacingError(0.5)), PacingP99: us(cp.Sync().PacingError(0.99)),
		Overruns: cp.Sync().Overruns,
		Reloads:  st.Reloads.Load(), ReloadErrors: st.ReloadErrors.Load(),
	}
	sum.Dropped = sum.Foreign + sum.WrongSize + sum.Malformed + sum.Duplicates
	if ex, ok := model.(*models.Exec); ok {
		sum.ModelMissed = ex.Missed()
	}
	if opts.Record != nil {
		if err := opts.Record.Flush(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("record: %w", err))
		}
	}
	if c.json {
		writeJSON(c.stdout, sum)
	} else {
		printRunSummary(c, sum)
	}
	if runErr != nil {
		return c.fail("run", runErr)
	}
	return exitOK
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func printRunSummary(c *call, s runSummary) {
	fmt.Fprintf(c.stdout, "beamconnect run: %d BeamNG messages, %d replies in %.1f s (model %s, reply ids %s)\n",
		s.Messages, s.Replies, s.WallS, s.Model, s.ReplyID)
	fmt.Fprintf(c.stdout, "  turnaround p50 %.0f µs, p99 %.0f µs, max %.0f µs\n", s.TurnaroundP50, s.TurnaroundP99, s.TurnaroundMax)
	fmt.Fprintf(c.stdout, "  time sync %s (timeDilation %g): %.3f s simulated in %.3f s", s.TimeSync, s.TimeDilation, s.SimS, s.WallS)
	if s.TimeSync == "master" {
		fmt.Fprintf(c.stdout, ", pacing error p50 %.1f µs, p99 %.1f µs, overruns %d", s.PacingP50, s.PacingP99, s.Overruns)
	}
	fmt.Fprintln(c.stdout)
	fmt.Fprintf(c.stdout, "  dropped %d (foreign host %d, wrong size %d, malformed %d, duplicate %d); stale drained %d\n",
		s.Dropped, s.Foreign, s.WrongSize, s.Malformed, s.Duplicates, s.Drained)
	fmt.Fprintf(c.stdout, "  BeamNG stalls recovered %d, late replies withheld %d, controller restarts %d\n",
		s.StallsRecovered, s.LateReplies, s.Restarts)
	if s.ModelMissed > 0 {
		fmt.Fprintf(c.stdout, "  model answers missed: %d (inputs kept their last values)\n", s.ModelMissed)
	}
	fmt.Fprintf(c.stdout, "  config reloads %d, refused %d\n", s.Reloads, s.ReloadErrors)
	fmt.Fprintf(c.stdout, "  final status %d (%s)\n", s.FinalStatus, coupling.Status(s.FinalStatus))
	if s.Emulator != nil {
		fmt.Fprintf(c.stdout, "  emulated BeamNG: %v\n", *s.Emulator)
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
				fmt.Fprint(c.stderr, b.String())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// watchConfig reloads the config when its file changes (unless noWatch)
// and on SIGHUP. Every outcome is logged: the diff of an applied reload,
// or each reason a reload was refused, with file:line:col.
func watchConfig(ctx context.Context, c *call, cp *coupling.Coupling, path string, noWatch bool) func() {
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
			for _, d := range ds {
				c.log.Warn(d.String())
			}
		case err != nil:
			c.log.Warn("config reload refused; the running config stays", "file", path, "why", err.Error())
		case ch.None():
			c.log.Info("config rewritten with nothing a run can see changed", "file", path)
		default:
			c.log.Info("config reloaded", "file", path, "changes", len(ch.Live))
			for _, l := range ch.Live {
				c.log.Info("  " + l)
			}
		}
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

package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"beamconnect/beamng/emulator"
	"beamconnect/coupling"
	"beamconnect/coupling/scene"
	"beamconnect/models"
	"beamconnect/models/kinds"
	"beamconnect/ports"
	"beamconnect/runsetup"
	"beamconnect/system"
)

var cmdRun = &command{
	name:    "run",
	args:    "FILE",
	summary: "couple a model to BeamNG as the config says (the main job)",
	help:    runHelp(),
	flags: func(fs *pflag.FlagSet) func(*call) int {
		o := &runOpts{}
		fs.StringVar(&o.model, "model", "", "the model to run instead of the config's beamng.model")
		fs.BoolVar(&o.emulate, "emulate", false, "run BeamNG's side in process on free loopback ports")
		fs.BoolVar(&o.freeRunning, "free-running", false, "with --emulate: step as fast as the coupling allows instead of in real time")
		fs.StringVar(&o.emulateClient, "emulate-client", "", `with --emulate: the address beamconnect binds, where the emulated BeamNG sends (default a free loopback port; "config": the config's localIP:localPort)`)
		fs.StringVar(&o.emulateListen, "emulate-listen", "", `with --emulate: the address the emulated BeamNG binds, where beamconnect replies (default a free loopback port; "config": the config's remoteIP:remotePort)`)
		fs.DurationVar(&o.duration, "duration", 0, "stop after this long (wall clock); 0 runs until interrupted")
		fs.DurationVar(&o.simDuration, "sim-duration", 0, "with --emulate: the emulated BeamNG stops after this much simulated time, and the run ends with it (the same simulation on a fast or a slow machine)")
		fs.StringVar(&o.record, "record", "", "write time, status and every port value per message to this file: CSV, or ASAM MDF 4 for a name ending .mf4")
		fs.StringVar(&o.recordFormat, "record-format", "", "the --record file's format where its name does not say: csv or mdf (ASAM MDF 4)")
		fs.BoolVar(&o.force, "force", false, "let --record overwrite an existing file that is not a recording (never the config itself)")
		fs.BoolVar(&o.noWatch, "no-watch", false, "do not reload the config when its file changes (SIGHUP still reloads)")
		fs.BoolVar(&o.realTime, "real-time", false, "real time instead of lockstep: a model step is awaited only up to its deadline, and a message whose step is late gets neutral controls (for a rig that drives hardware); as beamng.realTime")
		fs.BoolVar(&o.busyPoll, "busy-poll", false, "read BeamNG's messages by busy polling on a locked thread (Linux): the lowest latency, one CPU core kept busy (per vehicle); as beamng.busyPoll")
		fs.StringArrayVar(&o.faults, "fault", nil, "with --emulate: make the emulated BeamNG misbehave, e.g. reorder-replies=0.05 (repeatable; see emulate --help)")
		fs.StringVar(&o.http, "http", "", "serve a live page (status, scope of every port, reloads, config) and Prometheus /metrics at this address, e.g. 127.0.0.1:8080 (a bare :PORT binds loopback only)")
		fs.StringArrayVar(&o.httpHosts, "http-host", nil, "with --http: a further name the live page answers to (rig-pc.lab), besides this machine's addresses and localhost (repeatable)")
		fs.DurationVar(&o.bindTimeout, "bind-timeout", coupling.DefaultBindTimeout, "give up when the local address cannot be bound (a busy port) for this long; 0 retries for as long as the run goes on")
		fs.StringSliceVar(&o.failOn, "fail-on", nil, `what else makes the exit status non-zero: "control" exits 4 when a control verdict is not good (as beamng.failOn)`)
		fs.Bool("json", false, "print the final summary as one JSON object")
		return func(c *call) int { return runCmd(c, o) }
	},
}

type runOpts struct {
	model, record, http  string
	recordFormat         string
	emulateClient        string // --emulate-client: "", "config" or an address
	emulateListen        string // --emulate-listen: "", "config" or an address
	emulate, freeRunning bool
	noWatch, force       bool
	busyPoll, realTime   bool
	duration             time.Duration
	simDuration          time.Duration // --sim-duration
	faults               []string
	failOn               []string // --fail-on: "control"
	httpHosts            []string // --http-host
	bindTimeout          time.Duration
}

func runCmd(c *call, o *runOpts) int {
	r := &runner{c: c, o: o}
	defer r.close()
	if code, ok := r.prepare(); !ok {
		return code
	}
	// SIGHUP is caught from the program's start to its end (hangups), so a
	// SIGHUP right after start or during the summary never kills the run
	// before the summary is out; while it runs, it reloads the config.
	for len(hangups) > 0 {
		<-hangups // one from before the run began: the config is read now anyway
	}
	return r.run(hangups)
}

// runner is one run command: what it set up, and what to release.
type runner struct {
	c       *call
	o       *runOpts
	faults  emulator.Faults
	plan    *ports.Plan
	name    string // the model run
	model   models.Model
	opts    coupling.Options
	mon     *httpMonitor
	sess    *coupling.Session
	system  *system.System // the system run, when the argument is one (system.go)
	closers []func()
}

// close releases what the run set up, once.
func (r *runner) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	r.closers = nil
}

// usage reports a wrong command line (as JSON with --json).
func (r *runner) usage(format string, args ...any) (int, bool) {
	msg := fmt.Sprintf(format, args...)
	if r.c.json {
		writeJSON(r.c.stdout, runError{Error: "usage: " + msg})
	} else {
		fmt.Fprintf(r.c.stderr, "%s run: %s\nRun '%s run --help' for usage.\n", programName, msg, programName)
	}
	return exitUsage, false
}

// fail reports an error that stops the run before it starts.
func (r *runner) fail(err error) (int, bool) {
	if r.c.json {
		writeJSON(r.c.stdout, runError{Error: err.Error()})
		return exitFailed, false
	}
	return r.c.fail("run", err), false
}

// prepare checks the command line and the config and builds the session,
// the model, the recording and the live page; ok is false (with the exit
// code) when the run cannot start.
func (r *runner) prepare() (code int, ok bool) {
	c, o := r.c, r.o
	switch {
	case len(c.args) != 1:
		return r.usage("expected exactly one config file, got %d", len(c.args))
	case o.duration < 0:
		return r.usage("--duration %v: expected 0 (run until interrupted) or a positive duration", o.duration)
	case o.bindTimeout < 0:
		return r.usage("--bind-timeout %v: expected 0 (retry for as long as the run goes on) or a positive duration", o.bindTimeout)
	case o.freeRunning && !o.emulate:
		return r.usage("--free-running applies to --emulate only")
	case o.simDuration != 0 && !o.emulate:
		return r.usage("--sim-duration applies to --emulate only (it stops the emulated BeamNG)")
	case o.simDuration < 0:
		return r.usage("--sim-duration %v: expected a positive duration", o.simDuration)
	case o.recordFormat != "" && o.record == "":
		return r.usage("--record-format applies to --record only")
	case len(o.faults) > 0 && !o.emulate:
		return r.usage("--fault applies to --emulate only (it makes the emulated BeamNG misbehave)")
	case len(o.httpHosts) > 0 && o.http == "":
		return r.usage("--http-host applies to --http only")
	case (o.emulateClient != "" || o.emulateListen != "") && !o.emulate:
		return r.usage("--emulate-client and --emulate-listen apply to --emulate only")
	}
	for _, a := range []struct{ flag, v string }{{"--emulate-client", o.emulateClient}, {"--emulate-listen", o.emulateListen}} {
		if a.v == "" || a.v == "config" {
			continue
		}
		if _, err := netip.ParseAddrPort(a.v); err != nil {
			return r.usage("%s %q: expected an address such as 127.0.0.1:7000, or \"config\" for the config's", a.flag, a.v)
		}
	}
	for _, spec := range o.faults {
		if err := emulator.ParseFault(spec, &r.faults); err != nil {
			return r.usage("--fault: %v", err)
		}
	}
	for _, f := range o.failOn {
		if f != "control" {
			return r.usage("--fail-on %q: expected control (a control verdict other than good exits 4)", f)
		}
	}
	plan, res := check(c.args[0])
	if !res.Valid {
		if c.json {
			writeJSON(c.stdout, runError{Error: "the config is not valid", Config: &res})
		} else {
			printResult(c.stderr, res)
		}
		return exitFailed, false
	}
	for _, d := range res.Diagnostics {
		printDiag(c.stderr, d)
	}
	if o.busyPoll && !plan.BusyPoll {
		// The model spins too (an FMU's child process): the plan says so.
		p := *plan
		p.BusyPoll = true
		plan = &p
	}
	if o.realTime {
		plan = plan.InRealTime() // the model is made for it too
	}
	r.plan = plan
	if err := r.newModel(); err != nil {
		return r.fail(err)
	}
	r.opts = coupling.Options{Plan: plan, Model: r.model, ModelName: r.name, Params: kinds.Parameters(plan.Model), Log: c.log, BusyPoll: o.busyPoll,
		RealTime: o.realTime, BindTimeout: o.bindTimeout}
	if o.bindTimeout == 0 {
		r.opts.BindTimeout = -1 // for as long as the run goes on
	}
	if c.logs != nil {
		r.opts.LogLoss = func() (uint64, uint64) { return c.logs.Dropped(), c.logs.Failed() }
	}
	r.busyPoll()
	if o.record != "" {
		rec, done, err := runsetup.Record(o.record, o.recordFormat, o.force, plan, c.log)
		if err != nil {
			return r.fail(err)
		}
		r.closers = append(r.closers, done)
		r.opts.Record = rec
	}
	if o.emulate {
		switch o.emulateClient {
		case "":
			r.opts.Local = netip.MustParseAddrPort("127.0.0.1:0")
		case "config": // each vehicle binds its config's address
		default:
			if len(plan.Vehicles) > 1 {
				return r.usage("--emulate-client %s: the config couples %d vehicles, each on its own port: expected \"config\"", o.emulateClient, len(plan.Vehicles))
			}
			r.opts.Local = netip.MustParseAddrPort(o.emulateClient)
		}
		if o.emulateListen != "" && o.emulateListen != "config" && len(plan.Vehicles) > 1 {
			return r.usage("--emulate-listen %s: the config couples %d vehicles, each on its own port: expected \"config\"", o.emulateListen, len(plan.Vehicles))
		}
	}
	mon, err := prepareMonitor(o.http, plan, &r.opts)
	if err != nil {
		return r.usage("--http: %v", err)
	}
	if mon != nil {
		r.mon = mon
		r.closers = append(r.closers, func() { mon.ln.Close() })
	}
	if r.sess, err = coupling.New(r.opts); err != nil {
		return r.fail(err)
	}
	return exitOK, true
}

// newModel builds the config's model, or the one --model names.
func (r *runner) newModel() error {
	if ok, err := r.newSystem(); ok {
		return err
	}
	r.name = r.plan.Model
	params := models.Params(r.plan.ModelParams)
	if r.o.model != "" && r.o.model != r.name {
		r.name, params = r.o.model, nil // the config's parameters belong to its own model
	}
	m, err := kinds.New(r.name, params, r.plan, r.c.log)
	if err != nil {
		return err
	}
	r.model = m
	if cl, ok := m.(models.Closer); ok {
		r.closers = append(r.closers, func() {
			if err := cl.Close(); err != nil {
				r.c.log.Warn("model", "err", err)
			}
		})
	}
	return nil
}

// busyPoll gives the Go runtime a P per spinning link and no more: other
// Ps would only add threads that compete with BeamNG for the remaining
// cores (and spin looking for work); the rest of beamconnect (status line,
// recorder, watchers) runs when a link yields, at least every millisecond
// or so. The in-process emulator needs one more.
func (r *runner) busyPoll() {
	if !(r.o.busyPoll || r.plan.BusyPoll) || runtime.GOOS != "linux" {
		return
	}
	procs := len(r.plan.Vehicles)
	if r.o.emulate {
		procs++
	}
	procs = min(procs, runtime.NumCPU())
	prev := runtime.GOMAXPROCS(procs)
	r.c.log.Info("busy polling", "spinning_links", len(r.plan.Vehicles), "gomaxprocs", procs, "was", prev)
}

// run couples until the duration ends or a signal comes, then reports.
func (r *runner) run(hup <-chan os.Signal) int {
	c, o := r.c, r.o
	runsetup.Announce(c.log, "beamconnect couples BeamNG.tech", r.plan, "model", r.name)
	ctx, cancel := runContext(o.duration, c.interrupt)
	defer cancel()
	var em *scene.Scene
	var emWait sync.WaitGroup
	if o.emulate {
		var err error
		em, err = scene.Start(r.sess, r.plan, scene.Options{FreeRunning: o.freeRunning, Log: c.log, Listen: r.emulatedListen,
			Tune: func(v int, cfg *emulator.Config) {
				if v == 0 {
					cfg.Faults = r.faults
				}
				if o.simDuration > 0 {
					cfg.Steps = int64(o.simDuration.Seconds()/r.plan.PhysicsDt + 0.5)
				}
			}})
		if err != nil {
			code, _ := r.fail(err)
			return code
		}
		defer em.Close()
		emWait.Go(func() {
			r.started(ctx)
			em.Run(ctx)
			if o.simDuration > 0 {
				// BeamNG's side has stopped, and so does the run, once its
				// last messages are answered: a clean stop.
				r.answered(em, 2*time.Second)
				cancel()
			}
		})
	}
	if r.mon != nil {
		r.mon.start(ctx, c, r.plan, r.sess, o.httpHosts)
	}
	stopWatch := watchConfig(ctx, c, r.sess, c.args[0], r.plan, o.noWatch, hup, r.mon.observer())
	stopLine := statusLine(c, r.sess)
	start := time.Now()
	runErr := r.sess.Run(ctx)
	stopLine()
	stopWatch()
	emWait.Wait()
	r.mon.wait()

	sum := summarize(r.sess, r.plan, r.name, r.model, r.opts.Record, em)
	sum.WallS = time.Since(start).Seconds()
	sum.judgeControl(len(o.failOn) > 0 || r.sess.Plan().FailOnControl)
	// The summary comes after the last log line: what stopping the model
	// and the emulator logs, then everything queued, is written first.
	r.close()
	if em != nil {
		em.Close()
	}
	if c.logs != nil {
		c.logs.Flush(logFlushWait)
	}
	if c.json {
		writeJSON(c.stdout, sum)
	} else {
		printRunSummary(c, sum)
	}
	if runErr != nil {
		return c.fail("run", runErr)
	}
	switch {
	case !sum.Healthy:
		return exitFailed
	case sum.ControlFailed != "":
		return exitControl
	}
	return exitOK
}

// started waits, at most models.StartGrace, for a model that takes a
// while to start (an exec program) to answer, before the emulated BeamNG
// sends: as a user starts BeamNG after beamconnect.
func (r *runner) started(ctx context.Context) {
	s, ok := r.model.(models.Starter)
	if !ok {
		return
	}
	t := time.NewTimer(models.StartGrace)
	defer t.Stop()
	select {
	case <-s.Started():
	case <-t.C:
	case <-ctx.Done():
	}
}

// answered waits, at most for limit, until the coupling has handled every
// message the emulated BeamNG sent (its last one's reply BeamNG would only
// have awaited at its next send).
func (r *runner) answered(em *scene.Scene, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for v, l := range r.sess.Links() {
		for sent := em.Summary(v).Sent; l.Stats().Get(coupling.Messages) < sent && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
}

// emulatedListen is where vehicle v's emulated BeamNG binds: a free
// loopback port, the config's remote address, or --emulate-listen's.
func (r *runner) emulatedListen(v int) netip.AddrPort {
	switch r.o.emulateListen {
	case "":
		return netip.MustParseAddrPort("127.0.0.1:0")
	case "config":
		return r.plan.Vehicles[v].Remote
	}
	return netip.MustParseAddrPort(r.o.emulateListen)
}

// runError is run --json's answer when the run could not start: JSON still,
// as validate --json answers.
type runError struct {
	Error  string      `json:"error"`
	Config *fileResult `json:"config,omitempty"`
}

// modelList names every model for the help.
func modelList() string {
	var builtin []string
	for _, n := range kinds.Names() {
		if n != "exec" && n != "fmu" {
			builtin = append(builtin, n)
		}
	}
	return strings.Join(builtin, ", ") + " (built in),\nexec (a program of yours) or fmu (an FMU of yours)"
}

// runContext ends a run on Ctrl-C or SIGTERM, or when interrupt is closed,
// or after d when d > 0. After the first signal the run winds down
// (neutral controls, summary); a second one kills it, should a hung model
// hold it up.
func runContext(d time.Duration, interrupt <-chan struct{}) (context.Context, context.CancelFunc) {
	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-signalled.Done():
		case <-interrupt: // nil for the program: never
		}
		stop()
	}()
	if d <= 0 {
		return signalled, stop
	}
	ctx, cancel := context.WithTimeout(signalled, d)
	return ctx, func() { cancel(); stop() }
}

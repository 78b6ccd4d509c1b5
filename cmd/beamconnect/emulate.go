package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/beamng/emulator"
	"beamconnect/ports"
)

var cmdEmulate = &command{
	name:    "emulate",
	summary: "stand in for BeamNG.tech: its coupling controller, step for step, with a vehicle",
	help: `Runs BeamNG's side of a Gen 1 tight coupling (vehicleSystemsCoupling): it binds
--listen (BeamNG's udpReceiveIP:udpReceivePort) and sends its 111-double state
message to --client (udpSendIP:udpSendPort), following BeamNG's per-physics-step
algorithm exactly, 2 s blocking receives and window resets included. Replies
drive an emulated car. Use it to test a controller, a Simulink model or
beamconnect itself without a BeamNG licence.

--config FILE takes simulinkTime, pingTime and both addresses from a rig config,
as the start command 'beamconnect compile' prints would; flags given on the
command line override it.

Gen 2 (cosimulationCoupling): --config with a "csv" config, or --csv FILE,
lays the messages out as that CSV says (1 + signalTo rows out, 1 + signalFrom
rows in), takes its period and ping time as BeamNG's controller decodes them
(0.0005 gives a send every 1 ms), and its connection rows as the addresses.

--config with several vehicles (beamng.vehicles) emulates every vehicle in one
physics loop, as BeamNG runs them: each with its own socket pair and car, each
controller loaded a few steps after the one before; with "csv" each laid out,
timed and addressed by its own CSV. Each vehicle's controller writes its own
debug logs: --debug-logs DIR puts them in a folder per vehicle, named for it
(DIR/ego, DIR/lead).
Replies get BeamNG's Gen 2 semantics (docs/protocol.md, "Gen 2's traps"):
value × multiply + add through freeze, the shared freeze slot that lets one
NaN poison every control, and the Lua error a short reply raises; the summary
counts both.

--duration counts simulated time, as BeamNG's clock does. While nobody
answers, BeamNG's controller waits 2 s for a reply at every message, so its
time crawls (one message per 2 s): once a client has answered and then been
silent for --client-gone (10 s; 0 waits for ever), the emulation stops, as
an operator stops BeamNG once the other side is gone.

It prints a summary when the run ends, on Ctrl-C or SIGTERM too.

Faults (--fault, repeatable):
` + indent(emulator.FaultHelp),
	flags: func(fs *pflag.FlagSet) func(*call) int {
		o := &emulateOpts{}
		fs.StringVar(&o.config, "config", "", "take simulinkTime, pingTime and addresses from this rig config")
		fs.StringVar(&o.csv, "csv", "", "emulate a Gen 2 coupling laid out by this CSV (as BeamNG's Co-Simulation Signal Editor saves it)")
		fs.Float64Var(&o.simulinkTime, "simulink-time", 0.005, "BeamNG's simulinkTime: seconds between messages, rounded up to whole physics steps")
		fs.Float64Var(&o.pingTime, "ping-time", 1e-5, "BeamNG's pingTime: ceil(pingTime/simulinkTime) messages may be in flight")
		fs.Int64Var(&o.steps, "steps", 0, "stop after this many physics steps (0: run until interrupted)")
		fs.DurationVar(&o.duration, "duration", 0, "stop after this much simulated time, e.g. 20s (0: run until interrupted); a client that stops answering makes it crawl, see --client-gone")
		fs.DurationVar(&o.clientGone, "client-gone", 10*time.Second, "stop once a client that answered has been silent this long (wall clock; 0: never)")
		fs.BoolVar(&o.freeRunning, "free-running", false, "step as fast as the coupling allows instead of pacing with the wall clock")
		fs.Float64Var(&o.fps, "fps", 60, "graphics frames per second when paced: steps run in one batch per frame")
		fs.Float64Var(&o.rtf, "realtime-factor", 1, "simulated seconds per wall-clock second when paced")
		fs.StringVar(&o.debugLogs, "debug-logs", "", "write BeamNG's debug CSVs (simulinkSendLog.csv, …) into this directory (with several vehicles, into a folder per vehicle in it, named for the vehicle)")
		fs.StringVar(&o.listen, "listen", "127.0.0.1:64891", "address BeamNG's side binds and receives replies on")
		fs.StringVar(&o.client, "client", "127.0.0.1:64890", "address BeamNG's side sends its messages to")
		fs.StringArrayVar(&o.faults, "fault", nil, "inject a fault, e.g. drop-replies=0.01 or pause=2.5s@10s (repeatable; see above)")
		fs.Bool("json", false, "print the summary as one JSON object")
		return func(c *call) int {
			for _, name := range []string{"simulink-time", "ping-time", "listen", "client"} {
				if fs.Changed(name) {
					o.changed = append(o.changed, name)
				}
			}
			return emulateCmd(c, o)
		}
	},
}

type emulateOpts struct {
	config, csv               string
	simulinkTime, pingTime    float64
	steps                     int64
	duration, clientGone      time.Duration
	freeRunning               bool
	fps, rtf                  float64
	debugLogs, listen, client string
	faults                    []string
	changed                   []string
}

func (o *emulateOpts) set(name string) bool {
	for _, n := range o.changed {
		if n == name {
			return true
		}
	}
	return false
}

func indent(s string) string {
	out := "  "
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += "  "
		}
	}
	return out
}

func emulateCmd(c *call, o *emulateOpts) int {
	usage := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "%s emulate: %s\nRun '%s emulate --help' for usage.\n", programName, fmt.Sprintf(format, args...), programName)
		return exitUsage
	}
	if len(c.args) > 0 {
		return usage("unexpected argument %q", c.args[0])
	}
	e, code, msg := emulationFor(c, o)
	switch {
	case msg != "":
		return usage("%s", msg)
	case e == nil:
		return code
	}
	udp, err := emulator.ListenUDP(e.listen, e.client)
	if err != nil {
		return c.fail("emulate", err)
	}
	defer udp.Close()
	link := &watchedLink{UDP: udp}
	em, err := emulator.New(e.cfg, link)
	if err != nil {
		return usage("%v", err)
	}
	others, otherLinks, err := e.further(c)
	defer func() {
		for _, l := range otherLinks {
			l.Close()
		}
	}()
	if err != nil {
		return c.fail("emulate", err)
	}
	em.Attach(others...)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.clientGone > 0 {
		ctx = link.stopWhenGone(ctx, o.clientGone, c.log)
	}
	e.logStart(c, link.LocalAddr())
	sum, err := em.Run(ctx)
	if err != nil {
		c.log.Error("run failed", "err", err)
	}
	type vehicleJSON struct {
		emulator.Summary
		Dropped int64 `json:"receive_queue_dropped"`
	}
	if c.json && len(others) > 0 {
		out := []vehicleJSON{{sum, link.Dropped()}}
		for i, ve := range others {
			out = append(out, vehicleJSON{ve.Summary(), otherLinks[i].Dropped()})
		}
		writeJSON(c.stdout, out)
	} else if c.json {
		writeJSON(c.stdout, vehicleJSON{sum, link.Dropped()})
	} else {
		fmt.Fprintf(c.stdout, "emulated BeamNG: %v\n", sum)
		for i, ve := range others {
			fmt.Fprintf(c.stdout, "emulated BeamNG, vehicle %q: %v\n", e.more[i].Name, ve.Summary())
		}
	}
	if err != nil {
		return exitFailed
	}
	return exitOK
}

// emulation is what emulate runs: the first vehicle's controller, its
// addresses, and the config's further vehicles.
type emulation struct {
	cfg            emulator.Config
	listen, client netip.AddrPort
	more           []ports.Vehicle // the other vehicles of a several-vehicle config
	logs           string          // --debug-logs of a several-vehicle config: a folder per vehicle in it
}

// emulationFor reads the flags, the config or the CSV into an emulation;
// a usage message, or a nil emulation with an exit code, when it cannot.
func emulationFor(c *call, o *emulateOpts) (e *emulation, code int, usage string) {
	e = &emulation{cfg: emulator.Config{
		SimulinkTime: o.simulinkTime, PingTime: o.pingTime, PhysicsDt: beamng.PhysicsDt,
		Steps: o.steps, FreeRunning: o.freeRunning, FPS: o.fps, RealTimeFactor: o.rtf, DebugLogs: o.debugLogs,
	}}
	cfg := &e.cfg
	listen, client := o.listen, o.client
	if o.config != "" && o.csv != "" {
		return nil, 0, "--csv and --config both name the layout: give one"
	}
	if o.config != "" {
		plan, _, code := loadPlan(c, o.config)
		if plan == nil {
			return nil, code, ""
		}
		if len(plan.Vehicles) > 1 {
			if o.set("listen") || o.set("client") {
				return nil, 0, "--listen and --client name one vehicle's addresses; a config with several vehicles gives each its own"
			}
			e.more = plan.Vehicles[1:]
			if cfg.DebugLogs != "" {
				e.logs = cfg.DebugLogs
				cfg.DebugLogs = filepath.Join(e.logs, folderName(plan.Vehicles[0].Name))
			}
		}
		if !o.set("simulink-time") {
			cfg.SimulinkTime = plan.Period
		}
		if !o.set("ping-time") {
			cfg.PingTime = plan.PingTime
		}
		cfg.PhysicsDt = plan.PhysicsDt
		if !o.set("listen") {
			listen = plan.Vehicles[0].Remote.String()
		}
		if !o.set("client") {
			client = plan.Vehicles[0].Local.String()
		}
		cfg.CSV = plan.Vehicles[0].CSV
	}
	if o.csv != "" {
		f, err := cosim.Load(o.csv)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return nil, exitFailed, ""
		}
		for _, w := range f.Warnings {
			fmt.Fprintln(c.stderr, w)
		}
		cfg.CSV = f
		if !o.set("listen") {
			listen = f.BeamNG.String()
		}
		if !o.set("client") {
			client = f.Other.String()
		}
	}
	if o.duration < 0 || o.steps < 0 {
		return nil, 0, "--steps and --duration cannot be negative"
	}
	if o.duration > 0 {
		n := int64(o.duration.Seconds()/cfg.PhysicsDt + 0.5)
		if cfg.Steps == 0 || n < cfg.Steps {
			cfg.Steps = n
		}
	}
	if !(cfg.SimulinkTime > 0) || !(cfg.PingTime > 0) || !(o.fps > 0) || !(o.rtf > 0) {
		return nil, 0, "--simulink-time, --ping-time, --fps and --realtime-factor must be positive"
	}
	for _, spec := range o.faults {
		if err := emulator.ParseFault(spec, &cfg.Faults); err != nil {
			return nil, 0, fmt.Sprintf("--fault: %v", err)
		}
	}
	var err error
	if e.listen, err = netip.ParseAddrPort(listen); err != nil {
		return nil, 0, fmt.Sprintf("--listen %q: expected IP:port, e.g. 127.0.0.1:64891", listen)
	}
	if e.client, err = netip.ParseAddrPort(client); err != nil {
		return nil, 0, fmt.Sprintf("--client %q: expected IP:port, e.g. 127.0.0.1:64890", client)
	}
	return e, exitOK, ""
}

// further starts the config's further vehicles: one controller, socket
// pair and car each, all in one physics loop (a blocking receive in one
// holds all, as in BeamNG: docs/protocol.md, several vehicles), each
// loaded a few steps after the one before, as vehicles loaded in different
// frames are.
func (e *emulation) further(c *call) ([]*emulator.Emulator, []*emulator.UDP, error) {
	var others []*emulator.Emulator
	var links []*emulator.UDP
	for i, v := range e.more {
		l, err := emulator.ListenUDP(v.Remote, v.Local)
		if err != nil {
			return others, links, err
		}
		links = append(links, l)
		vc := e.cfg
		vc.Faults, vc.DebugLogs = emulator.Faults{}, ""
		if e.logs != "" {
			vc.DebugLogs = filepath.Join(e.logs, folderName(v.Name))
		}
		vc.StartStep = int64(3 * (i + 1))
		vc.Vehicle = emulator.DefaultVehicle()
		vc.Vehicle.Start = [3]float64{40 * float64(i+1), 0, 0}
		vc.CSV = v.CSV // Gen 2: each vehicle laid out, timed and addressed by its own CSV
		ve, err := emulator.New(vc, l)
		if err != nil {
			return others, links, err
		}
		attrs := []any{"vehicle", v.Name, "listen", l.LocalAddr(), "client", v.Local, "start_step", vc.StartStep}
		if v.CSV != nil {
			lv := v.CSV.Layout()
			attrs = append(attrs, "csv", v.CSV.Path, "sends_doubles", lv.Len(beamng.FromBeamNG), "expects_doubles", lv.Len(beamng.ToBeamNG),
				"sendSkips", v.CSV.SendSkips(e.cfg.PhysicsDt), "unanswered", v.CSV.Unanswered())
		}
		c.log.Info("emulating a further vehicle in the same physics loop", attrs...)
		others = append(others, ve)
	}
	return others, links, nil
}

// logStart says what is emulated, where.
func (e *emulation) logStart(c *call, listen netip.AddrPort) {
	cfg := &e.cfg
	pacing := "paced"
	if cfg.FreeRunning {
		pacing = "free-running"
	}
	if cfg.CSV != nil {
		l := cfg.CSV.Layout()
		c.log.Info("emulating BeamNG's cosimulationCoupling (Gen 2)", "csv", cfg.CSV.Path,
			"listen", listen, "client", e.client, "sends_doubles", l.Len(beamng.FromBeamNG), "expects_doubles", l.Len(beamng.ToBeamNG),
			"computation_time", cosim.LuaText(cfg.CSV.Time.Value), "sendSkips", cfg.CSV.SendSkips(cfg.PhysicsDt),
			"unanswered", cfg.CSV.Unanswered(), "pacing", pacing)
		return
	}
	c.log.Info("emulating BeamNG's vehicleSystemsCoupling",
		"listen", listen, "client", e.client,
		"simulinkTime", cfg.SimulinkTime, "sendSkips", beamng.SendSkips(cfg.SimulinkTime, cfg.PhysicsDt),
		"unanswered", beamng.Unanswered(cfg.PingTime, cfg.SimulinkTime), "pacing", pacing)
}

// watchedLink is the emulator's socket, noting when the client last
// answered (Reopen and the rest are the socket's own).
type watchedLink struct {
	*emulator.UDP
	last atomic.Int64 // unix ns of the last datagram from the client; 0 before any
}

func (w *watchedLink) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	n, ok := w.UDP.Recv(buf, wait, stop)
	if ok {
		w.last.Store(time.Now().UnixNano())
	}
	return n, ok
}

// stopWhenGone ends the emulation once a client that answered has sent
// nothing for gone: BeamNG's time would otherwise crawl on at one message
// per 2 s timeout, for ever.
func (w *watchedLink) stopWhenGone(ctx context.Context, gone time.Duration, log *slog.Logger) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(min(gone/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if last := w.last.Load(); last != 0 && now.Sub(time.Unix(0, last)) >= gone {
					log.Info("the client has answered nothing for a while: stopping, as BeamNG would be stopped", "silent_for", now.Sub(time.Unix(0, last)).Round(time.Second), "client_gone", gone)
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}

// folderName is a vehicle's name as a folder's: the characters a file name
// cannot hold on Windows or Unix replaced by "_".
func folderName(vehicle string) string {
	name := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`/\:*?"<>|`, r) || r < ' ' {
			return '_'
		}
		return r
	}, vehicle)
	if strings.Trim(name, ". ") == "" {
		return "vehicle"
	}
	return name
}

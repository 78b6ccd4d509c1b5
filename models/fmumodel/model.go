package fmumodel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/host"
	"beamconnect/models"
	"beamconnect/ports"
)

// Protocol documents the fmu model for run --help.
const Protocol = `The fmu model runs an FMU (FMI 2.0 or 3.0, a binary for x86-64 Linux or
Windows): a co-simulation FMU steps itself; a model exchange FMU is
integrated by beamconnect (modelParams.solver: dopri5, the default, rk4 or
euler; .tolerance; .maxStep in seconds). modelParams.path names the .fmu
(relative to the config); .interface ("CoSimulation" or "ModelExchange")
picks one of an FMU that has both (default: co-simulation). Its inputs take
the config's outputs fields of the same name (groundspeed; a Gen 2 CSV
name, with or without its group; ego.groundspeed with several vehicles;
an array's elements as u[1], u[2]…; a value an input cannot hold is
rounded and clamped to what it holds, counted as inputs_clamped), its
outputs drive the inputs fields of their name (throttle, brake,
steering…). modelParams.inputs and .outputs ({"fmuVariable": "field"})
bind other names; .parameters
({"name": value}) sets parameters and inputs' values (numbers, true/false,
an enumeration's item, text for a String, hexadecimal for a Binary, arrays
as JSON arrays). Unbound FMU inputs keep their values, unbound config
fields their initial values.

The FMU's time is the simulation's: BeamNG's message id times its send
period, whatever the time sync. It is initialized at the first message's
time and advanced by one period per simulation step of BeamNG (once, with
several vehicles), or by a whole number of periods every few messages
when it has a fixed step of its own (its outputs held in between); it
catches up over lost messages, and starts over from its initial state when
BeamNG starts its coupling again. An FMU that asks to end the simulation
ends cleanly: neutral controls from then on, no restart. Its controls reach
BeamNG only when its step for that simulation step answered in time.

By default the FMU runs in a child process (beamconnect fmu-host), so that
its crash or hang cannot take beamconnect with it. A crash, a step that runs
longer than beamng.modelTimeoutMs, a status other than OK or Warning, a
NaN output, or a model exchange FMU's state gone NaN is a model fault (an
unstable fixed step of its solver is one for good, naming maxStep or
dopri5): BeamNG gets neutral controls at once, the fault is logged, the
FMU is started again after 1 s, 2, 4 … up to 30 s (a step
that returns late ends its fault; one still running after 1 s, and 4 model
timeouts, has its host stopped and started again)
(modelParams.restart: false turns that off; a NaN output ends when the
outputs are numbers again) and run exits non-zero. By default (lockstep)
a message's reply waits for the FMU's step on its data up to the model
timeout (beamng.modelTimeoutMs, default 1500 ms): a slow step slows
BeamNG and never changes what it gets. With beamng.realTime (run
--real-time) each step's answer is awaited up to modelParams.deadlineMs
(default 80 % of the period); a message whose step has not answered by
then gets neutral controls. Either way an answer carries the sequence of
its request and is used for that request's messages only (a later answer
is dropped and counted, never used for a later step), and while a step is
unanswered newer data is not queued. modelParams.inProcess: true loads
the FMU into beamconnect instead, stepped on a thread of its own and
awaited the same way: the lowest latency, but a crash of the FMU ends
beamconnect, and a hung step's thread can only be abandoned (after 1 s and
4 model timeouts; the FMU is instantiated again on a new one, at most 3
times: the fourth hang is a fault for good). A reload may change tunable parameters,
which a scratch instance of the FMU tries first (a value the FMU refuses
refuses the reload); anything else of modelParams needs a restart.`

// FMUHost is the command that runs an FMU in a process of its own: this
// program with the argument fmu-host. Test binaries answer to it too.
var FMUHost = func() ([]string, error) {
	exe, err := os.Executable()
	return []string{exe, "fmu-host"}, err
}

// FMU is an FMU as the model: co-simulation, or model exchange integrated
// by beamconnect.
type FMU struct {
	log               *slog.Logger
	file, dir         string
	desc              *fmu.Description
	check             *fmuCheck
	inProcess         bool
	restart           bool
	realTime          bool          // beamng.realTime: a message waits up to the deadline
	deadline, timeout time.Duration // the deadline (real time) and the model timeout
	handoff           host.Handoff  // how steps pass to a child process

	setupMu sync.Mutex
	setup   fmi.Setup // what a (re)started instance is made from

	// Owned by the coupling's loop (Step, Rebind, Reset).
	inputs, outputs []fmuPort
	vehicles        models.Vehicles // whose data the inputs are bound to
	// inVals are the inputs' values; outVals the outputs', then the
	// observed variables' (modelParams.record) as a step reads them.
	inVals, outVals []float64
	vars            []models.Variable // what a recording keeps (Variables)
	tune            []fmi.Var         // parameter changes for the next step request
	tuneVal         []float64
	untuned         []untuned // values the changes sent replace, until taken
	// The FMU's communication points are t0 + n × hc, t0 the model's time
	// of its first step (NaN: the next step's), hc its step: the period, or
	// a whole number of them. Every request has a sequence number, which
	// its answer carries: an answer is used for its own request only.
	t0, hc   float64
	asked    float64 // the communication point last requested (NaN: none)
	seq      uint64  // the sequence number of that request
	doneSeq  uint64  // the request of the latest answer taken that is seq's
	doneOK   bool    // that answer stepped well: outVals are its outputs
	missedAt float64 // the point whose late answer was counted
	reset    bool    // the next request resets the FMU first

	local *localFMU // in process
	child *childFMU // in a child process

	fault                               atomic.Pointer[error] // the step's fault: a hang, a failed call, a NaN
	faultSeen                           atomic.Bool           // Fault has reported fault since it was set
	procFault                           atomic.Pointer[error] // the instance or process is gone
	ended                               atomic.Pointer[error] // the FMU asked to end the simulation
	missed, skipped, restarts, failures atomic.Int64
	clamped                             atomic.Int64 // BeamNG's values beyond what an input holds
	old, abandoned                      atomic.Int64 // answers for an older request; threads left in hung steps
	catchUps, resets                    atomic.Int64
	steps, rejected, events             atomic.Int64 // a model exchange FMU's solver

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New unpacks the FMU of params["path"], checks its binding to plan
// and starts it, in a child process unless params["inProcess"] is true.
func New(params models.Params, plan *ports.Plan, log *slog.Logger) (*FMU, error) {
	c, findings := checkFMU(params, plan)
	for _, f := range findings {
		if !f.Warning {
			return nil, fmt.Errorf("model fmu: %s", f.Error())
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	deadline, err := params.Float("deadlineMs", 0.8*plan.Period*1000)
	if err != nil {
		return nil, err
	}
	m := &FMU{
		log: log, file: c.file, desc: c.desc, check: c, restart: true, vehicles: c.bind.reads(plan),
		deadline: time.Duration(deadline * float64(time.Millisecond)),
		timeout:  time.Duration(plan.ModelTimeout * float64(time.Second)),
		inputs:   c.bind.inputs, outputs: c.bind.outputs,
		inVals: make([]float64, len(c.bind.inputs)), outVals: make([]float64, len(c.bind.outputs)+observedCount(c.observed)),
		t0: math.NaN(), hc: c.step, asked: math.NaN(), missedAt: math.NaN(),
		closing: make(chan struct{}), realTime: plan.RealTime,
	}
	m.inProcess, _ = params["inProcess"].(bool)
	if plan.BusyPoll {
		// Busy polling: both sides of a step spin, never asleep.
		m.handoff = host.Handoff{BusyPoll: true}
	}
	if r, ok := params["restart"].(bool); ok {
		m.restart = r
	}
	if m.timeout <= 0 {
		m.timeout = time.Duration(max(5*plan.Period, ports.DefaultModelTimeout) * float64(time.Second))
	}
	if m.dir, err = fmu.UnpackDir(); err != nil {
		return nil, fmt.Errorf("model fmu: %w", err)
	}
	f, err := fmu.Open(m.file)
	var u *fmu.Unpacked
	if err == nil {
		u, err = f.Unpack(m.dir, c.iface)
		f.Close()
	}
	if err != nil {
		os.RemoveAll(m.dir)
		return nil, fmt.Errorf("model fmu: %w", err)
	}
	m.setup = fmi.Setup{
		Library: u.Library, Major: c.desc.Major, Token: c.desc.Token, Resources: u.Resources,
		Name: c.desc.ModelName, Period: c.step, Grid: plan.Period, Inputs: c.bind.inVars, Outputs: c.bind.outVars, Texts: c.texts,
		Observed: c.observedVars(),
	}
	for i := range m.outVals {
		m.outVals[i] = math.NaN() // no step yet
	}
	m.vars = m.variables()
	m.setup.Params, m.setup.ParamValues = c.fmiParams()
	if c.iface == fmu.ME {
		m.setup.ModelExchange, m.setup.Solver, m.setup.Tolerance, m.setup.MaxStep = true, c.method.String(), c.tolerance, c.maxStep
		m.setup.States, m.setup.EventIndicators = c.desc.States, c.desc.EventIndicators
		m.setup.CompletedIntegratorStep = c.desc.ME.CompletedIntegratorStep
		m.setup.Derivatives = c.desc.Derivatives
	} else {
		m.setup.VariableStep = c.desc.CoSim.VariableStep
		m.setup.Redo = c.desc.CoSim.VariableStep && c.desc.CoSim.CanGetAndSetState
	}
	for i, p := range m.inputs {
		m.inVals[i] = p.start
	}
	if m.inProcess {
		err = m.startLocal()
	} else {
		err = m.startChild()
	}
	if err != nil {
		os.RemoveAll(m.dir)
		return nil, fmt.Errorf("model fmu: %s: %w", filepath.Base(m.file), err)
	}
	return m, nil
}

// fmiVar is how a variable travels: a discrete one (any but a continuous
// Real) takes a new value in event mode only, in model exchange; a
// structural parameter is set in configuration mode.
func fmiVar(v *fmu.Variable) fmi.Var {
	return fmi.Var{VR: v.VR, Kind: v.Kind, Name: v.Name,
		Discrete:   v.Variability != "continuous" || v.Kind != fmu.Float64 && v.Kind != fmu.Float32,
		Structural: v.Causality == "structuralParameter"}
}

// currentSetup is a copy of the setup with the parameters as tuned so far.
func (m *FMU) currentSetup() fmi.Setup {
	m.setupMu.Lock()
	defer m.setupMu.Unlock()
	s := m.setup
	s.Params = append([]fmi.Var(nil), s.Params...)
	s.ParamValues = append([]float64(nil), s.ParamValues...)
	return s
}

// fmuLog is how the FMU's own messages reach the log.
func (m *FMU) fmuLog(status fmi.Status, category, msg string) {
	level := slog.LevelInfo
	if status.Failed() {
		level = slog.LevelError
	} else if status == fmi.Warning {
		level = slog.LevelWarn
	}
	m.log.Log(context.Background(), level, "the FMU says", "status", status.Name(m.desc.Major), "category", category, "message", msg)
}

// Step gives the FMU this message's data and advances it to the model's
// time t (once per communication point: a message of another vehicle in
// the same simulation step, or between two points of an FMU stepped every
// few messages, gets the outputs of the point's step), waiting for it (in
// lockstep up to the model timeout from its request, in real time up to
// the deadline), and drives the inputs from its outputs; it reports
// whether they were computed for this simulation step: only an answer to
// this point's request counts.
func (m *FMU) Step(t float64, out, in [][]float64) bool {
	if m.ended.Load() != nil {
		return false
	}
	m.collect()
	if m.t0 != m.t0 {
		m.t0 = t
	}
	point := m.t0 + math.Floor((t-m.t0)/m.hc+1e-6)*m.hc
	if point != m.asked {
		m.gather(out)
		if !m.send(point, m.seq+1) {
			return false
		}
		m.asked, m.seq = point, m.seq+1
	}
	if m.doneSeq != m.seq && !m.await() {
		if m.missedAt != point {
			m.missed.Add(1) // this step's controls came too late for its messages
			m.missedAt = point
		}
		return false
	}
	if m.doneSeq == m.seq && m.doneOK {
		m.apply(in)
		return true
	}
	return false
}

// send asks for the step at point as request seq: in process or in the
// child.
func (m *FMU) send(point float64, seq uint64) bool {
	if m.inProcess {
		return m.local.send(m, point, seq)
	}
	return m.child.send(m, point, seq)
}

// await waits for the answer to the request sent: in real time up to the
// deadline from now, in lockstep up to the model timeout from the
// request (its step has had that long when the wait gives up: a hang).
func (m *FMU) await() bool {
	if m.inProcess {
		return m.local.await(m)
	}
	return m.child.await(m)
}

// until is when a wait for the answer to the request sent at asked (unix
// ns) gives up.
func (m *FMU) until(asked int64) time.Time {
	if m.realTime {
		return time.Now().Add(m.deadline)
	}
	return time.Unix(0, asked).Add(m.timeout)
}

// collect takes an answer that came since, without waiting.
func (m *FMU) collect() {
	if m.inProcess {
		m.local.collect(m)
	} else {
		m.child.collect(m)
	}
}

// Reset starts the FMU over (BeamNG started its coupling again): the next
// request resets it to its initial state, with the parameters as tuned,
// and its time starts at that request's.
func (m *FMU) Reset() error {
	m.reset = true
	m.t0, m.asked, m.missedAt = math.NaN(), math.NaN(), math.NaN()
	if m.ended.Load() != nil {
		m.ended.Store(nil) // a new run of the simulation: the FMU runs again
		m.log.Info("the FMU that had ended the simulation runs again: BeamNG started its coupling again", "fmu", filepath.Base(m.file))
	}
	return nil
}

// Reads reports whether the FMU's inputs are bound to vehicle v's data.
func (m *FMU) Reads(v int) bool { return m.vehicles.Reads(v) }

// gather collects the FMU's inputs from the output ports, each made to
// fit what its input holds (fit.go): a value beyond it is clamped,
// counted, and said once per input.
func (m *FMU) gather(out [][]float64) {
	for i := range m.inputs {
		p := &m.inputs[i]
		if !p.bound {
			m.inVals[i] = p.start
			continue
		}
		x := p.r.Get(out)
		if p.fit.check {
			var clamped bool
			if x, clamped = p.fit.take(x, m.inVals[i]); clamped {
				m.clamped.Add(1)
				if !p.fit.warned {
					p.fit.warned = true
					m.log.Warn("BeamNG's value is beyond what the FMU's input holds: clamped (counted as inputs_clamped; said once per input)",
						"input", p.name, "type", p.v.Type, "holds", p.fit.holds(p.v), "field", p.field, "value", p.r.Get(out), "sent", x)
				}
			}
		}
		m.inVals[i] = x
	}
}

// apply drives the input ports from the FMU's outputs.
func (m *FMU) apply(in [][]float64) {
	for i := range m.outputs {
		if p := &m.outputs[i]; p.bound {
			p.r.Set(in, m.outVals[i])
		}
	}
}

// answered notes an answer to request seq, good or not, and reports
// whether it is the answer awaited: one to any other request (an older
// one's, which came after its step gave up) is dropped and counted; its
// outputs are never used.
func (m *FMU) answered(seq uint64, ok bool) bool {
	if seq != m.seq {
		m.old.Add(1)
		return false
	}
	m.doneSeq, m.doneOK = seq, ok
	return true
}

// healthy ends a fault: the FMU gave a good answer.
func (m *FMU) healthy() {
	if m.procFault.Load() != nil {
		m.log.Info("the FMU is answering again after its restart", "fmu", m.file)
		m.procFault.Store(nil)
	}
	// A fault the coupling has not seen yet stays for it to see: an
	// older message's answer with a NaN, taken in the step that also
	// takes a good answer, would otherwise begin and end unseen.
	if m.faultSeen.Load() {
		m.fault.Store(nil)
	}
	m.tuneTaken()
}

// setFault starts (or changes) a fault, logging it at once; the coupling
// logs it too and sends neutral controls.
func (m *FMU) setFault(err error) {
	m.faultSeen.Store(false)
	if old := m.fault.Load(); old != nil && (*old).Error() == err.Error() {
		return
	}
	m.fault.Store(&err)
	m.log.Error("FMU fault", "fmu", filepath.Base(m.file), "err", err.Error())
}

// end notes that the FMU asked to end the simulation: said once, neutral
// controls from now on, no restart.
func (m *FMU) end(why string) {
	err := errors.New(why)
	if m.ended.Swap(&err) == nil {
		m.log.Warn(why+": BeamNG gets neutral controls from now on; the FMU is not started again", "fmu", filepath.Base(m.file))
	}
	m.fault.Store(nil)
}

// unfit faults the FMU for good: it cannot run faithfully as configured,
// and starting it again would not help.
func (m *FMU) unfit(why string) {
	err := errors.New(why + "; the FMU is not started again")
	m.procFault.Store(&err)
	m.log.Error("FMU fault", "fmu", filepath.Base(m.file), "err", err.Error())
}

// Fault reports why the FMU's controls cannot be used right now; nil
// while it is healthy (and once it has ended: see Ended).
func (m *FMU) Fault() error {
	if e := m.procFault.Load(); e != nil {
		return *e
	}
	if e := m.fault.Load(); e != nil {
		m.faultSeen.Store(true)
		return *e
	}
	return nil
}

// Ended reports why the FMU stopped, when it asked to end the simulation;
// nil while it runs.
func (m *FMU) Ended() error {
	if e := m.ended.Load(); e != nil {
		return *e
	}
	return nil
}

// Notes say how the FMU runs (its interface and step) and, once it has
// ended, when and why.
func (m *FMU) Notes() []string {
	notes := m.check.notes()
	if err := m.Ended(); err != nil {
		notes = append(notes, err.Error())
	}
	return notes
}

// Counters: steps whose answer came after the deadline (Missed), messages
// whose data was not sent because the FMU was still busy (Skipped),
// restarts of the FMU, faults of its steps (Failures: failed calls and NaN
// outputs), catch-up steps over lost messages and resets after BeamNG
// started its coupling again.
func (m *FMU) Missed() int64   { return m.missed.Load() }
func (m *FMU) Skipped() int64  { return m.skipped.Load() }
func (m *FMU) Restarts() int64 { return m.restarts.Load() }
func (m *FMU) Failures() int64 { return m.failures.Load() }
func (m *FMU) CatchUps() int64 { return m.catchUps.Load() }

// Old counts answers for another request than the one awaited: dropped,
// their outputs never used.
func (m *FMU) Old() int64 {
	n := m.old.Load()
	if m.child != nil {
		n += m.child.dropped()
	}
	return n
}

// Abandoned counts threads left running in a hung step (in process).
func (m *FMU) Abandoned() int64 { return m.abandoned.Load() }
func (m *FMU) Resets() int64    { return m.resets.Load() }

// MaxAnswerAge is the longest a step request waited for its answer (child
// process only).
func (m *FMU) MaxAnswerAge() time.Duration {
	if m.child == nil {
		return 0
	}
	return m.child.maxAge()
}

// Close stops the FMU: restarts end, the FMU is terminated and freed (its
// host process asked to exit, and killed after 2 s), and its unpacked
// files are removed.
func (m *FMU) Close() error {
	m.closeOnce.Do(func() {
		close(m.closing)
		m.wg.Wait()
		if m.local != nil {
			m.local.close()
		}
		if m.child != nil {
			m.child.close()
		}
		os.RemoveAll(m.dir)
	})
	return nil
}

// Tally counts what the FMU did: steps answered too late, requests not
// sent while it was busy, its failures (an error status, a crash) and
// restarts.
func (m *FMU) Tally() models.Tally {
	return models.Tally{Missed: m.Missed(), Failed: m.Failures(), Skipped: m.Skipped(), Restarts: m.Restarts(), Old: m.Old(), Abandoned: m.Abandoned(),
		SolverSteps: m.steps.Load(), SolverRejected: m.rejected.Load(), Events: m.events.Load(), InputsClamped: m.clamped.Load()}
}

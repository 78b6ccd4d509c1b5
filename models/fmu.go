package models

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/host"
	"beamconnect/ports"
)

// FMUProtocol documents the fmu model for run --help.
const FMUProtocol = `The fmu model steps a co-simulation FMU (FMI 2.0 or 3.0, a binary for
x86-64 Linux or Windows) once per BeamNG message: modelParams.path names the
.fmu (relative to the config). Its inputs take the config's outputs fields of
the same name (groundspeed; a Gen 2 CSV name, with or without its group;
ego.groundspeed with several vehicles), its outputs drive the inputs fields
of their name (throttle, brake, steering…). modelParams.inputs and .outputs
({"fmuVariable": "field"}) bind other names; .parameters ({"name": value})
sets parameters and inputs' values. Unbound FMU inputs keep their values,
unbound config fields their initial values.

The FMU is initialized at the first message's time t and stepped with
doStep(t, h), h the coupling's period. A message lost makes it catch up (one
step over the gap when it can handle variable steps, else whole periods); a
time that goes back (BeamNG restarted its coupling) resets it. Its controls
reach BeamNG only when its step for that message returned in time.

By default the FMU runs in a child process (beamconnect fmu-host), so that
its crash or hang cannot take beamconnect with it. A crash, a step that runs
longer than beamng.modelTimeoutMs, a status other than OK or Warning, or a
NaN output is a model fault: BeamNG gets neutral controls at once, the fault
is logged, the FMU is started again after 1 s, 2, 4 … up to 30 s (a step
that returns late ends its fault; one still running after 1 s, and 4 model
timeouts, has its host stopped and started again)
(modelParams.restart: false turns that off; a NaN output ends when the
outputs are numbers again) and run exits non-zero. Each step's answer is
awaited up to modelParams.deadlineMs (default 80 % of the period); a
message whose step has not answered by then gets neutral controls (a later
answer is never used for a later message), and while a step is unanswered
newer data is not queued. modelParams.inProcess: true loads the FMU into
beamconnect instead, stepped on a thread of its own and awaited with the
same deadline: the lowest latency, but a crash of the FMU ends beamconnect,
and a hung step's thread can only be abandoned (after 1 s; the FMU is
instantiated again on a new one). A reload may change tunable parameters,
which a scratch instance of the FMU tries first (a value the FMU refuses
refuses the reload); anything else of modelParams needs a restart.`

// FMUHost is the command that runs an FMU in a process of its own: this
// program with the argument fmu-host. Test binaries answer to it too.
var FMUHost = func() ([]string, error) {
	exe, err := os.Executable()
	return []string{exe, "fmu-host"}, err
}

// FMU is a co-simulation FMU as the model.
type FMU struct {
	log               *slog.Logger
	file, dir         string
	desc              *fmu.Description
	inProcess         bool
	restart           bool
	deadline, timeout time.Duration
	handoff           host.Handoff // how steps pass to a child process

	setupMu sync.Mutex
	setup   fmi.Setup // what a (re)started instance is made from

	// Owned by the coupling's loop (Step, Rebind, Tune).
	inputs, outputs []fmuPort
	vehicles        vehicles // whose data the inputs are bound to
	inVals, outVals []float64
	tune            []fmi.Var // parameter changes for the next step request
	tuneVal         []float64
	untuned         []untuned // values the changes sent replace, until taken

	local *localFMU // in process
	child *childFMU // in a child process

	fault                               atomic.Pointer[error] // the step's fault: a hang, a failed call, a NaN
	faultSeen                           atomic.Bool           // Fault has reported fault since it was set
	procFault                           atomic.Pointer[error] // the instance or process is gone
	missed, skipped, restarts, failures atomic.Int64
	catchUps, resets                    atomic.Int64

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// NewFMU unpacks the FMU of params["path"], checks its binding to plan
// and starts it, in a child process unless params["inProcess"] is true.
func NewFMU(params Params, plan *ports.Plan, log *slog.Logger) (*FMU, error) {
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
		log: log, file: c.file, desc: c.desc, restart: true, vehicles: c.bind.reads(plan),
		deadline: time.Duration(deadline * float64(time.Millisecond)),
		timeout:  time.Duration(plan.ModelTimeout * float64(time.Second)),
		inputs:   c.bind.inputs, outputs: c.bind.outputs,
		inVals: make([]float64, len(c.bind.inputs)), outVals: make([]float64, len(c.bind.outputs)),
		closing: make(chan struct{}),
	}
	m.inProcess, _ = params["inProcess"].(bool)
	if plan.BusyPoll {
		// Busy polling: both sides of a step spin, never asleep.
		m.handoff = host.Handoff{ClientSpin: m.deadline, HostSpin: -1}
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
		u, err = f.Unpack(m.dir)
		f.Close()
	}
	if err != nil {
		os.RemoveAll(m.dir)
		return nil, fmt.Errorf("model fmu: %w", err)
	}
	m.setup = fmi.Setup{
		Library: u.Library, Major: c.desc.Major, Token: c.desc.Token, Resources: u.Resources,
		Name: c.desc.ModelName, Period: plan.Period, VariableStep: c.desc.CoSim.VariableStep,
	}
	for _, p := range m.inputs {
		m.setup.Inputs = append(m.setup.Inputs, fmiVar(p.v))
	}
	for _, p := range m.outputs {
		m.setup.Outputs = append(m.setup.Outputs, fmiVar(p.v))
	}
	for _, p := range c.params {
		m.setup.Params = append(m.setup.Params, fmiVar(p.v))
		m.setup.ParamValues = append(m.setup.ParamValues, p.value)
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

func fmiVar(v *fmu.Variable) fmi.Var { return fmi.Var{VR: v.VR, Kind: v.Kind, Name: v.Name} }

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

// Step gives the FMU this message's data and steps it, waiting for it up
// to the deadline, and drives the inputs from its outputs; it reports
// whether they were computed from this message's data.
func (m *FMU) Step(t float64, out, in [][]float64) bool {
	if m.inProcess {
		return m.local.step(m, t, out, in)
	}
	return m.child.step(m, t, out, in)
}

// Reads reports whether the FMU's inputs are bound to vehicle v's data.
func (m *FMU) Reads(v int) bool { return m.vehicles.Reads(v) }

// gather collects the FMU's inputs from the output ports.
func (m *FMU) gather(out [][]float64) {
	for i := range m.inputs {
		p := &m.inputs[i]
		if p.bound {
			m.inVals[i] = p.r.get(out)
		} else {
			m.inVals[i] = p.start
		}
	}
}

// apply drives the input ports from the FMU's outputs.
func (m *FMU) apply(in [][]float64) {
	for i := range m.outputs {
		if p := &m.outputs[i]; p.bound {
			p.r.set(in, m.outVals[i])
		}
	}
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

// Fault reports why the FMU's controls cannot be used right now; nil
// while it is healthy.
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

// Counters: steps whose answer came after the deadline (Missed), messages
// whose data was not sent because the FMU was still busy (Skipped),
// restarts of the FMU, faults of its steps (Failures: failed calls and NaN
// outputs), catch-up steps over lost messages and resets after time went
// back.
func (m *FMU) Missed() int64   { return m.missed.Load() }
func (m *FMU) Skipped() int64  { return m.skipped.Load() }
func (m *FMU) Restarts() int64 { return m.restarts.Load() }
func (m *FMU) Failures() int64 { return m.failures.Load() }
func (m *FMU) CatchUps() int64 { return m.catchUps.Load() }
func (m *FMU) Resets() int64   { return m.resets.Load() }

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

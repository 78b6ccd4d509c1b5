package coupling

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/wine"
	"beamconnect/models"
	"beamconnect/models/exectest"
	"beamconnect/models/kinds"
	"beamconnect/models/program"
	"beamconnect/ports"
	"beamconnect/recording/recordingtest"
)

var matrixTable = flag.Bool("matrix", false, "print the fault matrix as a Markdown table (for the README)")

// matrixRun is one row of the fault matrix: a coupling as run builds it
// (cruise-pedals' ports, a recording), against the emulator over loopback,
// with BeamNG's side watched step by step.
type matrixRun struct {
	path string // the config run
	h    *harness
	log  *logBuffer
	rec  *Recorder
	f    *os.File

	mu sync.Mutex
	// Episodes during which BeamNG was not in lockstep, from its own
	// counters: stalled in a 2 s timeout, or running free (its highest
	// accepted reply id above its send counter).
	episodes int
	longest  time.Duration
	badSince time.Time
	endBad   bool
	floored  time.Time // when BeamNG last applied the model's throttle 1
	toSafe   time.Duration
	neutral  bool   // BeamNG applied neutral controls after the model's throttle
	extra    string // what the row measured besides
	ranAhead bool   // BeamNG's highest accepted reply id was ever above its send counter
}

func (m *matrixRun) trace(r *emulator.StepRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bad := r.TimedOut || r.MaxRecvID > r.SendCtr
	m.ranAhead = m.ranAhead || r.MaxRecvID > r.SendCtr
	switch {
	case bad && m.badSince.IsZero():
		m.badSince = r.Start
		m.episodes++
	case !bad && !m.badSince.IsZero():
		m.longest = max(m.longest, r.Start.Sub(m.badSince))
		m.badSince = time.Time{}
	}
	// A reply is applied at the end of the step's wait for it.
	applied := r.Start.Add(r.Waited)
	switch th := m.h.em.Vehicle().Throttle; {
	case th == 1:
		m.floored = applied
	case th == 0 && !m.floored.IsZero():
		// The model's controls were good until it failed, right after the
		// last reply that carried them: from there to the neutral reply.
		m.neutral = true
		m.toSafe = max(m.toSafe, applied.Sub(m.floored))
		m.floored = time.Time{}
	}
}

func (m *matrixRun) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.badSince.IsZero() {
		m.endBad = true
		m.longest = max(m.longest, time.Since(m.badSince))
	}
}

type matrixRow struct {
	name, what string
	config     string                    // the example run (default cruise-pedals, Gen 1)
	configFile func(t *testing.T) string // the config run, when not an example
	faults     []string                  // emulator faults
	lead       []string                  // the second vehicle's emulator faults (a fleet config)
	steps      int64                     // physics steps (default 10000: 1000 messages)
	model      func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model
	disk       int // > 0: the recording's disk is full after this many bytes
	during     func(t *testing.T, m *matrixRun)
	check      func(t *testing.T, m *matrixRun)
	reported   []string      // fault lines the run must report; none: healthy
	notes      []string      // notes the run must make (of what is not a fault)
	stopAfter  time.Duration // the run is stopped this long after BeamNG's side stops (0: at once)
	safe       bool          // the row measures the time to neutral controls
	loss       bool          // BeamNG may end out of lockstep, if it is reported
	fps, rtf   float64       // fps > 0: paced like BeamNG, in frame batches, rtf× real time
	timeout    float64       // the model timeout, s (0: the default)
	realTime   bool          // beamng.realTime: neutral controls for a late step
	program    bool          // the model is an exec program
	// lateReply: BeamNG's controller is reloaded, and on a loaded machine a
	// reply to its old self may land on the new one, which then runs ahead
	// (TestRestartAfterALateReply): if it did, that must be reported.
	lateReply bool
}

// The fault matrix: every fault the emulator can inflict and
// every failure of the client side, each against the coupling run uses,
// asserting for each: no panic, BeamNG back in lockstep (or the loss
// reported), nothing lost from the recording (or the loss counted and
// reported), the fault reported as the summary would, and the time to
// recover measured from BeamNG's own counters. `-args -matrix` prints it
// as the README's table.
func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets on the real clock: timing a race detector would distort")
	}
	rows := []matrixRow{
		{name: "none", what: "a clean run"},
		{name: "drop-replies=0.001", what: "a lost reply: BeamNG waits 2 s, ids re-based", faults: []string{"drop-replies=0.001", "seed=1"},
			reported: []string{"BeamNG stalled"}},
		{name: "drop-messages=0.001", what: "a lost message: BeamNG waits 2 s for its reply, ids re-based", faults: []string{"drop-messages=0.001", "seed=1"},
			reported: []string{"BeamNG stalled"}},
		{name: "dup-replies=0.05", what: "BeamNG drops the copies itself", faults: []string{"dup-replies=0.05", "seed=1"}},
		{name: "dup-messages=0.05", what: "repeated ids dropped and counted", faults: []string{"dup-messages=0.05", "seed=1"},
			reported: []string{"repeated an id"}},
		{name: "reorder-replies=0.002", what: "a held reply lands after BeamNG's reset: lockstep lost, window repaired", faults: []string{"reorder-replies=0.002", "seed=1"},
			steps: 16000, fps: 60, rtf: 4, reported: []string{"BeamNG stalled", "BeamNG ran out of lockstep"}, loss: true},
		{name: "reorder-messages=0.001", what: "BeamNG waits 2 s for the held message's reply; the late copy is dropped", faults: []string{"reorder-messages=0.001", "seed=1"},
			reported: []string{"BeamNG stalled"}},
		{name: "truncate-replies=0.003", what: "a cut reply: BeamNG applies what it carries, or waits 2 s", faults: []string{"truncate-replies=0.003", "seed=2"}},
		{name: "truncate-messages=0.001", what: "a cut message dropped: BeamNG waits 2 s for its reply", faults: []string{"truncate-messages=0.001", "seed=1"},
			reported: []string{"a length BeamNG does not send"}},
		{name: "delay-replies=1ms:0.05", what: "BeamNG waits a little longer", faults: []string{"delay-replies=1ms:0.05", "seed=1"}},
		{name: "delay-messages=1ms:0.05", what: "a message comes a little later", faults: []string{"delay-messages=1ms:0.05", "seed=1"}},
		{name: "garbage=0.02", what: "junk from BeamNG's port dropped and counted", faults: []string{"garbage=0.02", "seed=1"},
			reported: []string{"a length BeamNG does not send"}},
		{name: "pause=1200ms@1s", what: "BeamNG's physics paused 1.2 s: it goes on where it left off, nothing lost, so the ids go on; lockstep at once, a note, not a fault", faults: []string{"pause=1200ms@1s"},
			notes: []string{"BeamNG paused 1 times"}, check: noStall},
		{name: "pause=2s@1s", what: "a pause as long as BeamNG's own 2 s wait: re-based on the likelier cause, its wait; BeamNG does not go on, so its reply goes again 0.25 s later with the id it waits for; a note, not a fault", faults: []string{"pause=2s@1s"},
			notes: []string{"BeamNG paused 1 times"}, check: noStall},
		{name: "pause=3s@1s", what: "BeamNG's physics paused 3 s: longer than BeamNG ever waits and nothing lost, so not re-based; lockstep at once, a note, not a fault", faults: []string{"pause=3s@1s"},
			notes: []string{"BeamNG paused 1 times"}, check: noStall},
		{name: "stop=1500ms@1s", what: "BeamNG's coupling unloaded for 1.5 s, then loaded again: a silence that ends on a new port, ids from 0, stays a fault", faults: []string{"stop=1500ms@1s"},
			fps: 60, reported: []string{"BeamNG went silent 1 times"}},
		{name: "restart@1s", what: "controller reloaded: new port, ids from 0, taken once the old port is silent", faults: []string{"restart@1s"}, lateReply: true},
		{name: "stopped inside BeamNG's 2 s wait", what: "BeamNG's coupling stops; beamconnect is stopped 1.5 s later: every message answered, so BeamNG was not waiting for a reply; its stop, a note, not a fault",
			stopAfter: 1500 * time.Millisecond, notes: []string{"BeamNG stopped sending 1."}},
		{name: "short Gen 2 message", what: "Gen 2 messages cut to fewer doubles than the model reads: neutral reply for each, the model not stepped on them",
			config: "gen2-cruise", faults: []string{"cut-messages=0.01", "seed=1"}, reported: []string{"lacked fields the model reads"},
			check: func(t *testing.T, m *matrixRun) {
				st := m.h.c.Stats()
				if n := st.Get(ShortMessages); n == 0 || st.Get(NeutralReplies) != n || m.h.emSum.NaNApplied != 0 || m.h.emSum.LuaErrors != 0 {
					t.Errorf("short messages %d, neutral replies %d, BeamNG %+v", n, st.Get(NeutralReplies), m.h.emSum)
				}
				m.extra = fmt.Sprintf("%d short, %d neutral replies", st.Get(ShortMessages), st.Get(NeutralReplies))
			}},
		{name: "spoofed datagram", what: "id 1e6 from another port of BeamNG's host: held, dropped as BeamNG goes on sending",
			during:   func(t *testing.T, m *matrixRun) { sendAfter(t, m, 200, "127.0.0.1", 1e6) },
			reported: []string{"claimed BeamNG's place"}},
		{name: "stranger with id 0 while BeamNG sends", what: "id 0 from another port of BeamNG's host: held, dropped, BeamNG keeps control",
			during:   func(t *testing.T, m *matrixRun) { sendAfter(t, m, 200, "127.0.0.1", 0) },
			reported: []string{"claimed BeamNG's place"}},
		{name: "another host", what: "BeamNG-sized datagrams from 127.0.0.2: foreign, warned once",
			during:   func(t *testing.T, m *matrixRun) { sendAfter(t, m, 200, "127.0.0.2", 300) },
			reported: []string{"not BeamNG's"}},
		{name: "dead model", what: "exec floors the throttle, then exits: neutral controls at once", safe: true,
			program:  true,
			model:    execModel("header", "answer:300=1 1 0 0", "exit=1"),
			reported: []string{"the model faulted 1 times"}},
		{name: "slow model", what: "exec answers in 10 ms at a 5 ms period (lockstep, the default): BeamNG waits for each answer, every reply carries the model's controls, no fault",
			program: true,
			model:   execModel("header", "delay=10ms", "answer:*=1 0.3 0 0"),
			check: func(t *testing.T, m *matrixRun) {
				st := m.h.c.Stats()
				if st.Get(NeutralReplies) != 0 || m.h.em.Vehicle().Throttle != 0.3 {
					t.Errorf("%d neutral replies, throttle %v at the end", st.Get(NeutralReplies), m.h.em.Vehicle().Throttle)
				}
				mt := m.h.s.ModelTiming()
				if mt.OverPeriod < mt.Steps/2 {
					t.Errorf("model timing %+v: want the steps longer than the period", mt)
				}
				m.extra = fmt.Sprintf("0 neutral replies; the model allowed %.2f× real time", mt.RealTimeFactor)
			}},
		{name: "slow model in real time", what: "the same with beamng.realTime: neutral controls for every message it has no answer for in time, the newest request only, no backlog",
			program: true, realTime: true,
			model: execModel("header", "delay=10ms", "answer:*=1 0.3 0 0"), timeout: 0.2,
			reported: []string{"the model could not keep up"},
			check: func(t *testing.T, m *matrixRun) {
				// The replies neutral for want of an answer in time (or, on a
				// machine loaded enough to hold the program up past the model
				// timeout, for the fault that is); a loaded machine may hold
				// the loop up past a deadline long enough for an answer to
				// come after all, which is then this message's.
				if st := m.h.c.Stats(); st.Get(NotComputed) == 0 || st.Get(NeutralReplies) < st.Get(Replies)*95/100 {
					t.Errorf("no controls %d, neutral replies %d of %d: want the replies neutral", st.Get(NotComputed), st.Get(NeutralReplies), st.Get(Replies))
				}
				ex := m.h.model.(*program.Exec)
				// A backlog grows past a second in this row; scheduling on a
				// loaded machine adds tens of ms at most.
				if age := ex.MaxAnswerAge(); age > 250*time.Millisecond || ex.Skipped() == 0 {
					t.Errorf("oldest answer used %v, skipped %d", age, ex.Skipped())
				}
				m.extra = fmt.Sprintf("oldest answer used %.0f ms", float64(ex.MaxAnswerAge().Microseconds())/1000)
			}},
		// Paced, as BeamNG sends: how many junk answers a free-running run
		// took before its end was the machine's (160 of 200 beside CI's
		// busy loops, and the good lines never came); 20 come in the
		// first tenth of a second of its 5.
		{name: "garbage model", what: "exec answers junk, then good lines: discarded, counted, neutral while it lasts, its controls again after",
			program: true, fps: 60,
			model:    execModel("header", "answer:20=1 x", "answer:*=1 0.3 0 0"),
			reported: []string{"the model faulted", "the model's program gave 20 answers that were discarded"},
			check: func(t *testing.T, m *matrixRun) {
				if n := m.h.model.(*program.Exec).Bad(); n != 20 || !m.log.Has("model answer discarded") || m.h.em.Vehicle().Throttle != 0.3 {
					t.Errorf("%d answers discarded, throttle %v at the end", n, m.h.em.Vehicle().Throttle)
				}
			}},
		{name: "NaN model", what: "exec floors the throttle, then answers nan (its state gone NaN): a fault, neutral controls, never \"keep the previous value\"", safe: true,
			program:  true,
			model:    execModel("header", "answer:300=1 1 0 0", "answer:*=1 nan 0 0"),
			reported: []string{"the model computed NaN or Inf controls", "the model faulted 1 times"},
			check: func(t *testing.T, m *matrixRun) {
				st := m.h.c.Stats()
				if st.Get(NonFinite) < 500 || m.h.em.Vehicle().Throttle != 0 || !m.log.Has("the model computed NaN for throttle") {
					t.Errorf("non_finite %d, throttle %v at the end\n%s", st.Get(NonFinite), m.h.em.Vehicle().Throttle, m.log)
				}
				m.extra = fmt.Sprintf("%d non_finite, throttle 0 at the end", st.Get(NonFinite))
			}},
		{name: "hung model", what: "a model's step hangs 400 ms and bounds its own wait: neutral controls at once, a fault after the model timeout", safe: true, fps: 60,
			model: func(t *testing.T, p *ports.Plan, _ *logBuffer) models.Model {
				port, elem, _ := p.Find(1, "throttle")
				return &boundedHang{throttle: ref2{port, elem}, at: 200, hang: 400 * time.Millisecond}
			},
			reported: []string{"the model faulted 1 times"}},
		{name: "panicking model", what: "a Go model panics: recovered, neutral controls from then on", safe: true,
			model:    func(t *testing.T, p *ports.Plan, _ *logBuffer) models.Model { return floorModel(200)(p) },
			reported: []string{"the model faulted 1 times"}},
		{name: "reload moves every port", what: "Gen 2 follow: a reload swaps the two vehicles' inputs groups, so every input port moves; the model rebinds by field identity, the lead keeps the lead's controls",
			config: "gen2-follow", steps: 16000, fps: 60, during: swapGroups,
			check: func(t *testing.T, m *matrixRun) {
				ego, lead := m.h.ems[0].Vehicle(), m.h.ems[1].Vehicle()
				if lead.V < 19 || lead.V > 21 || ego.V < 10 || ego.V > 25 || m.h.s.Values()[Reloads] != 1 {
					t.Errorf("after the reload: the lead at %.1f m/s (its profile: 20), the ego at %.1f; reloads %d", lead.V, ego.V, m.h.s.Values()[Reloads])
				}
				m.extra = fmt.Sprintf("lead %.1f m/s, ego %.1f m/s at the end", lead.V, ego.V)
			}},
		{name: "a vehicle's BeamNG silent", what: "follow: the lead's BeamNG stops for 1.5 s; the model reads it, so the ego's replies go neutral, never the model's last controls",
			config: "follow", steps: 8000, fps: 60, lead: []string{"stop=1500ms@1s"},
			reported: []string{"the model reads another vehicle whose data had stopped coming", `vehicle "lead": BeamNG went silent`},
			check: func(t *testing.T, m *matrixRun) {
				ego := m.h.s.Link(0).Stats()
				if ego.Get(StaleData) < 150 || m.h.ems[0].Vehicle().Throttle == 0 && m.h.ems[0].Vehicle().Brake == 0 {
					t.Errorf("the ego: %d stale replies; controlled again at the end: throttle %v brake %v", ego.Get(StaleData), m.h.ems[0].Vehicle().Throttle, m.h.ems[0].Vehicle().Brake)
				}
				m.extra = fmt.Sprintf("%d of the ego's replies neutral, controlled again after", ego.Get(StaleData))
			}},
		{name: "a fault that ends", what: "an FMU in its child process outputs NaN once (status 4 meanwhile): neutral controls, then the FMU's again",
			configFile: fmuRig(testfmu.Options{Fault: "nan-once", After: 300}, ""), safe: true,
			reported: []string{"the model faulted 1 times", "the FMU failed or gave NaN or infinite outputs at 1 steps"},
			check: func(t *testing.T, m *matrixRun) {
				if !m.log.Has("model recovered") || m.h.em.Vehicle().Throttle == 0 {
					t.Errorf("not recovered: throttle %v\n%s", m.h.em.Vehicle().Throttle, m.log)
				}
				m.extra = "recovered at the next step"
			}},
		{name: "an FMU that ends the simulation", what: "an FMU in its child process asks to stop at its 300th step (FMI 2.0: fmi2Discard and fmi2Terminated): neutral controls from then on, one log line with its time and reason, no restart, not a fault",
			configFile: fmuRig(testfmu.Options{Fault: "terminate", After: 300}, ""),
			check: func(t *testing.T, m *matrixRun) {
				v := m.h.s.Values()
				st := m.h.c.Stats()
				if st.Get(ModelEnded) < 100 || v[ModelFaults] != 0 || m.h.em.Vehicle().Throttle != 0 || m.h.em.Vehicle().Brake != 0 {
					t.Errorf("after_model_ended %d, model faults %d, throttle %v brake %v", st.Get(ModelEnded), v[ModelFaults], m.h.em.Vehicle().Throttle, m.h.em.Vehicle().Brake)
				}
				if n := strings.Count(m.log.String(), "the FMU ended the simulation at t = 1.4975 s"); n != 1 || m.log.Has("starting it again") {
					t.Errorf("%d log lines of its end\n%s", n, m.log)
				}
				m.extra = fmt.Sprintf("%d messages answered neutral after it ended", st.Get(ModelEnded))
			}},
		{name: "BeamNG restarts under an FMU of time alone", what: "a Model Exchange FMU that reads no BeamNG signal (x' = -k x, x(0) = 1, driving the throttle); BeamNG's controller reloaded at 1 s: the FMU starts over, its replies from there those from the run's start, step for step",
			configFile: decayRig, faults: []string{"restart@1s"}, check: startedOver, lateReply: true},
		{name: "BeamNG restarts under an FMU", what: "an FMU in its child process; BeamNG's controller reloaded at 1 s (ids from 0, a new port): the FMU starts over from its initial state, its time from the new first message's",
			configFile: fmuRig(testfmu.Options{}, ""), faults: []string{"restart@1s"}, lateReply: true,
			check: func(t *testing.T, m *matrixRun) {
				v := m.h.s.Values()
				f, _ := m.h.model.(interface{ Resets() int64 })
				if v[ModelResets] != 1 || v[ModelFaults] != 0 || f == nil || f.Resets() != 1 {
					t.Errorf("model resets %d, model faults %d, the FMU's resets %v\n%s", v[ModelResets], v[ModelFaults], f, m.log)
				}
				m.extra = "1 model reset, the FMU reset once"
			}},
		{name: "a state event stepped over", what: "a Model Exchange bouncing ball that never rests, under rk4 at the period's step: once a bounce fits inside a step, a fault for good that names the way out, never a ball below the floor",
			configFile: ballRig,
			reported:   []string{"the model faulted"},
			check: func(t *testing.T, m *matrixRun) {
				if m.h.em.Vehicle().Throttle != 0 {
					t.Errorf("throttle %v at the end: not neutral", m.h.em.Vehicle().Throttle)
				}
				if !m.log.Has("a state event was stepped over") || m.log.Has("starting it again") {
					t.Errorf("the fault is not said, or the FMU was started again\n%s", m.log)
				}
				m.extra = "said at once, not started again"
			}},
		{name: "a state gone NaN", what: "a Model Exchange FMU whose derivative turns NaN at 0.5 s, its output fmin(x, 0.8) a number all the same, under rk4: a fault at the step that meets it, naming der(x); neutral controls from then on, never the 0.8 computed from a NaN state",
			configFile: meMatrixRig(testfmu.MEOptions{Model: "nan"}, 5, `"solver": "rk4", "outputs": { "y": "throttle" }`),
			reported:   []string{"the model faulted", "the FMU failed or gave NaN or infinite outputs"},
			check: func(t *testing.T, m *matrixRun) {
				before, after := 0, 0
				for _, r := range recordingtest.Rows(t, m.f.Name()) {
					switch end := (r["id"] + 1) * 0.005; {
					case end <= 0.4951 && r["in1.y"] == 0.8:
						before++
					case end > 0.5051 && r["in1.y"] != 0:
						after++
					}
				}
				if before < 99 || after != 0 || !m.log.Has("the FMU's derivative der(x) is NaN at t = 0.5") {
					t.Errorf("%d replies at 0.8 before 0.5 s, %d carrying the FMU's throttle after\n%s", before, after, m.log)
				}
				m.extra = fmt.Sprintf("%d replies at 0.8 until 0.5 s, %d after it", before, after)
			}},
		{name: "an unstable fixed step", what: "a Model Exchange FMU with a fast state (λ = 500/s) under euler at the period's step, h·λ = 2.5: refused at the first step, before any of its output reaches BeamNG, a fault for good naming maxStep 0.004 or dopri5",
			configFile: meMatrixRig(testfmu.MEOptions{FMI: 3, Model: "stiff"}, 5, `"solver": "euler", "outputs": { "x": "throttle" }, "parameters": { "lambda": 500 }`),
			reported:   []string{"the model faulted 1 times"},
			check: func(t *testing.T, m *matrixRun) {
				model := 0
				for _, r := range recordingtest.Rows(t, m.f.Name()) {
					if r["in1.x"] != 0 {
						model++
					}
				}
				if model != 0 || !m.log.Has("set modelParams.maxStep to 0.004 or less") || m.log.Has("starting it again") {
					t.Errorf("%d replies carried the unstable step's throttle\n%s", model, m.log)
				}
				m.extra = fmt.Sprintf("%d replies carried its throttle, not started again", model)
			}},
		{name: "a time event on a communication point", what: "a Model Exchange stair at a 10 ms period, its counter one higher at every whole second by time events: the reply to the message whose step ends on the second carries the new count, as fmusim has it",
			configFile: meMatrixRig(testfmu.MEOptions{Model: "stair"}, 10, `"outputs": { "counter": "custom1" }`),
			check: func(t *testing.T, m *matrixRun) {
				seconds, onTime := 0, 0
				for _, r := range recordingtest.Rows(t, m.f.Name()) {
					end := int64(r["id"]) + 1
					if end%100 == 0 {
						seconds++
						if r["in2.counter"] == float64(1+end/100) {
							onTime++
						}
					}
				}
				if seconds < 4 || onTime != seconds {
					t.Errorf("%d of %d whole seconds' messages carried the new count", onTime, seconds)
				}
				m.extra = fmt.Sprintf("%d of %d on their message", onTime, seconds)
			}},
		{name: "an FMU in process that hangs again and again", what: "each new instance hangs at its 20th step (asleep 2 s; model timeout 100 ms): a fault at once, its thread abandoned after 1 s and the FMU instantiated again, at most 3 times, then a fault for good that says so",
			configFile: fmuRig(testfmu.Options{Fault: "hang-2s", After: 20}, `"inProcess": true,`, 0.1), safe: true, steps: 20000, fps: 60,
			reported: []string{"the model faulted", "3 threads of the FMU in process were abandoned"},
			check: func(t *testing.T, m *matrixRun) {
				v := m.h.s.Values()
				if v[ModelAbandoned] != 3 || v[ModelRestarts] != 2 || !m.log.Has("it is not instantiated again") {
					t.Errorf("abandoned %d, restarts %d\n%s", v[ModelAbandoned], v[ModelRestarts], m.log)
				}
				m.extra = "3 threads abandoned, 2 new instances, then a fault for good"
			}},
		{name: "a reload the model refuses", what: "an FMU in its child process: kp 50, which it refuses, tried on a scratch instance first: refused whole, nothing applied",
			configFile: fmuRig(testfmu.Options{}, ""), steps: 6000, fps: 60, during: refusedReload,
			check: func(t *testing.T, m *matrixRun) {
				v := m.h.s.Values()
				if v[ReloadErrors] != 1 || v[Reloads] != 0 || v[ModelFaults] != 0 {
					t.Errorf("reload errors %d, reloads %d, model faults %d", v[ReloadErrors], v[Reloads], v[ModelFaults])
				}
				m.extra = "1 reload error, the running parameters kept"
			}},
		{name: "vanished config", what: "the config's folder deleted and re-created while it runs: warned, re-armed, reloaded",
			during: vanishConfig, fps: 60, steps: 3000},
		{name: "full disk", what: "the recording's disk fills: whole rows kept, the loss counted and logged at once", disk: 20000,
			reported: []string{"the recording lost"},
			check: func(t *testing.T, m *matrixRun) {
				if m.rec.Lost() == 0 || m.rec.Err() == nil || m.rec.Written()+m.rec.Lost() != m.rec.Rows() {
					t.Errorf("recording: rows %d, written %d, lost %d, err %v", m.rec.Rows(), m.rec.Written(), m.rec.Lost(), m.rec.Err())
				}
				m.extra = fmt.Sprintf("%d of %d rows lost, reported", m.rec.Lost(), m.rec.Rows())
			}},
	}
	// Each row's line of the table, in the rows' order, the busy port's
	// last; each subtest writes its own.
	lines := make([]string, len(rows)+1)
	t.Run("rows", func(t *testing.T) {
		for i, row := range rows {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				lines[i] = runMatrixRow(t, row)
			})
		}
		t.Run("busy port", func(t *testing.T) {
			t.Parallel()
			lines[len(rows)] = busyPortRow(t)
		})
	})
	if *matrixTable {
		fmt.Println("| fault | what happens | BeamNG out of lockstep (longest) | back in lockstep | record | time to neutral controls | reported as |\n|---|---|---|---|---|---|---|\n" +
			strings.Join(lines, ""))
	}
}

func runMatrixRow(t *testing.T, row matrixRow) string {
	if row.program || row.model != nil || row.configFile != nil {
		skipModelInBusyPoll(t)
	}
	if row.program {
		// Its counts of faults need every answer within the model
		// timeout, which Wine's pipes miss now and then.
		wine.Skip(t, wine.Pipes)
	}
	if row.config == "" {
		row.config = "cruise-pedals"
	}
	m := &matrixRun{log: &logBuffer{}, path: "../examples/" + row.config + ".json"}
	if row.configFile != nil {
		m.path = row.configFile(t)
	}
	cfg, err := config.Load(m.path)
	if err != nil {
		t.Fatal(err)
	}
	var f, lead emulator.Faults
	for _, spec := range row.faults {
		if err := emulator.ParseFault(spec, &f); err != nil {
			t.Fatal(err)
		}
	}
	for _, spec := range row.lead {
		if err := emulator.ParseFault(spec, &lead); err != nil {
			t.Fatal(err)
		}
	}
	steps := row.steps
	if steps == 0 {
		steps = 10000
	}
	var model func(*ports.Plan) models.Model
	if row.model != nil {
		model = func(p *ports.Plan) models.Model { return row.model(t, p, m.log) }
	} else {
		// The config's model, logging where the row looks.
		model = func(p *ports.Plan) models.Model {
			md, err := kinds.New(p.Model, p.ModelParams, p, m.log.Logger())
			if err != nil {
				t.Fatal(err)
			}
			return md
		}
	}
	if row.timeout != 0 {
		cfg.ModelTimeout = row.timeout
	}
	cfg.RealTime = row.realTime
	m.f, _ = os.Create(filepath.Join(t.TempDir(), "run.csv"))
	defer m.f.Close()
	var w interface {
		Write([]byte) (int, error)
	} = m.f
	if row.disk > 0 {
		w = &fullDisk{File: m.f, room: row.disk}
	}
	m.h = rig{cfg: cfg, model: model, faults: map[int]emulator.Faults{1: lead},
		em: emulator.Config{Steps: steps, Faults: f, FPS: row.fps, RealTimeFactor: row.rtf,
			Trace: func(r *emulator.StepRecord) { m.trace(r) }},
		opts: func(h *harness, o *Options) {
			h.log, o.Log = m.log, m.log.Logger()
			m.rec = NewRecorder(w, o.Plan, m.log.Logger())
			o.Record = m.rec
		}}.udp(t)
	m.h.linger = row.stopAfter
	var during sync.WaitGroup
	if row.during != nil {
		during.Go(func() { row.during(t, m) })
	}
	start := time.Now()
	m.h.run(t) // a panic anywhere fails the whole test: none may happen
	m.end()
	during.Wait()
	wall := time.Since(start)
	st := m.h.c.Stats()

	// BeamNG back in lockstep, or the loss reported.
	faults := m.h.s.Faults()
	if m.endBad && !(row.loss && containsAll(faults, "still out of lockstep at the end")) {
		t.Errorf("BeamNG ended out of lockstep, unreported: %v\nfaults %q", m.h.emSum, faults)
	}
	// Nothing lost from the record: a row per reply (of every vehicle),
	// whole rows only.
	m.rec.Close()
	b, _ := os.ReadFile(m.f.Name())
	var rows int64 // data rows: lines that are not a header (one at the start, one per reload)
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(line) > 0 && !bytes.HasPrefix(line, []byte("time,")) {
			rows++
		}
	}
	replies := m.h.s.Values()[Replies]
	if row.disk == 0 && (m.rec.Written() != replies || m.rec.Lost() != 0 || rows != replies) {
		t.Errorf("recording: %d rows in the file, %d written, %d lost, for %d replies", rows, m.rec.Written(), m.rec.Lost(), replies)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Error("the recording ends in a partial row")
	}
	// Reported as the summary would.
	want := row.reported
	if runtime.GOOS != "linux" {
		// The lockstep watchdog needs the datagrams' arrival times, which
		// only Linux gives (rxtime_linux.go): elsewhere it cannot tell.
		want = slices.DeleteFunc(slices.Clone(want), func(f string) bool { return f == "BeamNG ran out of lockstep" })
	}
	if row.lateReply && m.ranAhead {
		// A reply to the old controller landed on the reloaded one: it
		// ran ahead from its start, which is seen on every system.
		want = append(slices.Clone(want), "BeamNG ran out of lockstep")
		t.Logf("a late reply reached BeamNG's reloaded controller; faults %q", faults)
	}
	if len(want) == 0 && len(faults) != 0 {
		t.Errorf("faults %q for a run that should be healthy", faults)
	}
	if !containsAll(faults, want...) {
		t.Errorf("faults %q, want %q", faults, want)
	}
	// (A machine loaded enough to hold BeamNG's side up for a second is
	// a pause of BeamNG's, rightly noted: other notes are not required
	// absent.)
	notes := m.h.s.Notes()
	if !containsAll(notes, row.notes...) {
		t.Errorf("notes %q, want %q", notes, row.notes)
	}
	if row.safe {
		if !m.neutral || m.h.s.Values()[ModelFaults]+st.Get(NotComputed) == 0 {
			t.Errorf("BeamNG never got neutral controls (model faults %d, no controls %d)", m.h.s.Values()[ModelFaults], st.Get(NotComputed))
		}
	}
	if row.check != nil {
		row.check(t, m)
	}
	if st.Get(Messages) < 100 {
		t.Errorf("only %d messages in %v", st.Get(Messages), wall)
	}

	back := "yes"
	if m.endBad {
		back = "no (reported)"
	}
	record := fmt.Sprintf("%d rows = replies", m.rec.Written())
	if row.disk > 0 {
		record = m.extra
	}
	toSafe := "-"
	if row.safe {
		toSafe = fmt.Sprintf("%.1f ms", float64(m.toSafe.Microseconds())/1000)
	}
	rep := "healthy"
	if len(faults) > 0 {
		rep = strings.Join(faults, "; ")
	}
	if len(notes) > 0 {
		rep += " (noted: " + strings.Join(notes, "; ") + ")"
	}
	if row.disk > 0 {
		rep = "the recording lost rows (error logged when it happened)"
	}
	what := row.what
	if m.extra != "" && row.disk == 0 {
		what += " (" + m.extra + ")"
	}
	return fmt.Sprintf("| %s | %s | %s (%d episodes) | %s | %s | %s | %s |\n", row.name, what, ms(m.longest), m.episodes, back, record, toSafe, rep)
}

func ms(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000)
}

// fmuRig writes the FMU example's rig with the test's cruise FMU, in its
// child process unless params (more modelParams, each followed by a
// comma) say, and returns the config's path. timeout is the model
// timeout, s (none: the default).
func fmuRig(o testfmu.Options, params string, timeout ...float64) func(t *testing.T) string {
	return func(t *testing.T) string {
		path := testfmu.ForTest(t, "cruise.fmu", o)
		text := strings.Replace(string(must(os.ReadFile("../examples/fmu-cruise/cruise.json"))), `"path": "cruise.fmu"`,
			params+`"path": "`+filepath.ToSlash(path)+`"`, 1)
		if len(timeout) > 0 {
			text = strings.Replace(text, `"model": "fmu",`, fmt.Sprintf(`"model": "fmu", "modelTimeoutMs": %g,`, timeout[0]*1000), 1)
		}
		rig := filepath.Join(filepath.Dir(path), "fmu-cruise.json")
		os.WriteFile(rig, []byte(text), 0o644)
		return rig
	}
}

// ballRig is a Model Exchange bouncing ball that never comes to rest, its
// height driving the throttle (1 m: floored at first), integrated by rk4
// at the period's step.
func ballRig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "ball.fmu")
	if err := testfmu.Available(2); err != nil {
		t.Skip(err)
	}
	if err := testfmu.BuildME(path, testfmu.MEOptions{Model: "ball"}); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(must(os.ReadFile("../examples/fmu-cruise/cruise.json"))), `"path": "cruise.fmu",
      "parameters": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 }`,
		`"path": "`+filepath.ToSlash(path)+`", "interface": "ModelExchange", "solver": "rk4", "restart": true,
      "outputs": { "h": "throttle" }, "parameters": { "vmin": 0, "h0": 1 }`, 1)
	text = strings.Replace(text, `,
    "quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`, "", 1)
	rig := filepath.Join(filepath.Dir(path), "ball.json")
	os.WriteFile(rig, []byte(text), 0o644)
	return rig
}

// noStall checks that BeamNG never waited 2 s for a reply, and applied
// every reply but its last.
func noStall(t *testing.T, m *matrixRun) {
	if s := m.h.emSum; s.Stalls != 0 || s.Accepted < s.Sent-1 || m.h.c.Stats().Get(StallsRecovered) != 0 {
		t.Errorf("BeamNG %v; stalls recovered %d", s, m.h.c.Stats().Get(StallsRecovered))
	}
}

// decayRig is the cruise rig driven by a Model Exchange FMU of time alone:
// x' = -k x from 1 (k 0.5) as the throttle; it reads no BeamNG signal.
func decayRig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "decay.fmu")
	if err := testfmu.Available(2); err != nil {
		t.Skip(err)
	}
	if err := testfmu.BuildME(path, testfmu.MEOptions{Model: "decay"}); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(must(os.ReadFile("../examples/fmu-cruise/cruise.json"))), `"path": "cruise.fmu",
      "parameters": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 }`,
		`"path": "`+filepath.ToSlash(path)+`", "deadlineMs": 100, "outputs": { "x": "throttle" }`, 1)
	text = strings.Replace(text, `"model": "fmu",`, `"model": "fmu", "modelTimeoutMs": 500,`, 1)
	text = strings.Replace(text, `,
    "quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`, "", 1)
	rig := filepath.Join(filepath.Dir(path), "decay.json")
	os.WriteFile(rig, []byte(text), 0o644)
	return rig
}

// startedOver checks, in the row's recording, that the model started over
// at BeamNG's restart: one model reset, and each reply after it the one
// sent as many steps from the run's start. (Each session counts from its
// first answered message; a neutral reply, 0, is not compared.)
func startedOver(t *testing.T, m *matrixRun) {
	if v := m.h.s.Values(); v[ModelResets] != 1 || v[ModelFaults] != 0 {
		t.Errorf("model resets %d, model faults %d\n%s", v[ModelResets], v[ModelFaults], m.log)
	}
	lines := strings.Split(strings.TrimSpace(string(must(os.ReadFile(m.f.Name())))), "\n")
	head := strings.Split(lines[0], ",")
	// The decay FMU's x drives the throttle: its column is named after it.
	idCol, thCol := slices.Index(head, "id"), slices.IndexFunc(head, func(c string) bool { return c == "in1.x" || strings.HasPrefix(c, "in1.x [") })
	// A session begins where BeamNG's ids go back, or where x, which only
	// decays, rises: a reloaded controller that took a late reply of ours
	// as its own runs ahead while its old port's silence is awaited, and
	// its first answered id can be the one after the old session's last.
	var byStep [2]map[float64]string
	session, first, last, lastX := -1, 0.0, 0.0, math.Inf(1)
	for i, l := range lines[1:] {
		cells := strings.Split(l, ",")
		id, _ := strconv.ParseFloat(cells[idCol], 64)
		x, _ := strconv.ParseFloat(cells[thCol], 64)
		if i == 0 || id < last || x > lastX {
			if session++; session > 1 {
				t.Fatalf("more than one restart in the recording")
			}
			byStep[session], first = map[float64]string{}, id
		}
		last = id
		if x != 0 { // a neutral reply
			lastX = x
		}
		byStep[session][id-first] = cells[thCol]
	}
	if session != 1 {
		t.Fatalf("no restart in the recording")
	}
	same, differ := 0, 0
	for k, x := range byStep[1] {
		if x0, ok := byStep[0][k]; ok && x != "0" && x0 != "0" {
			// The same to rounding: the model's time is BeamNG's, and a
			// session that starts at id 200 steps from t = 1 s, its step
			// sizes rounded differently from those that start at 0.
			a, _ := strconv.ParseFloat(x, 64)
			b, _ := strconv.ParseFloat(x0, 64)
			if math.Abs(a-b) > 1e-12*math.Abs(b) {
				if differ++; differ <= 3 {
					t.Errorf("step %v after the restart: throttle %s, from the run's start %s", k, x, x0)
				}
			}
			same++
		}
	}
	if same < 100 {
		t.Errorf("%d replies after the restart to compare", same)
	}
	m.extra = fmt.Sprintf("1 model reset; %d replies after the restart, each the same (to 1e-12) as as many steps from the run's start", same-differ)
}

// meMatrixRig writes the FMU example's rig with a Model Exchange test FMU
// at a period of periodMs, its inputs holding custom1 too (a slot BeamNG
// leaves alone, unclamped), modelParams (without the path) as given.
func meMatrixRig(o testfmu.MEOptions, periodMs int, params string) func(t *testing.T) string {
	return func(t *testing.T) string {
		path := testfmu.MEForTest(t, o.Model+".fmu", o)
		text := strings.Replace(string(must(os.ReadFile("../examples/fmu-cruise/cruise.json"))), `"path": "cruise.fmu",
      "parameters": { "setSpeed": 20, "kp": 0.3, "ki": 0.05 }`,
			`"path": "`+filepath.ToSlash(path)+`", "interface": "ModelExchange", "deadlineMs": 100, `+params, 1)
		text = strings.Replace(text, `"model": "fmu",`, `"model": "fmu", "modelTimeoutMs": 500,`, 1)
		text = strings.Replace(text, `,
    "quality": { "measured": "groundspeed", "setpoint": "setSpeed" }`, "", 1)
		text = strings.ReplaceAll(text, `"updatePeriodMs": 5`, fmt.Sprintf(`"updatePeriodMs": %d`, periodMs))
		text = strings.Replace(text, `[ { "propertyName": "driveMode", "initialValue": 0 } ]`,
			`[ { "propertyName": "driveMode", "initialValue": 0 }, { "propertyName": "custom1", "initialValue": 0 } ]`, 1)
		rig := filepath.Join(filepath.Dir(path), o.Model+".json")
		os.WriteFile(rig, []byte(text), 0o644)
		return rig
	}
}

// swapGroups reloads the Gen 2 follow rig with its inputs groups swapped,
// 800 messages in.
func swapGroups(t *testing.T, m *matrixRun) {
	src := string(must(os.ReadFile("../examples/gen2-follow.json")))
	if !m.h.waitMessages(800) {
		t.Error("the run ended before 800 messages: no reload")
		return
	}
	if _, err := reloadConfig(m.h.s, "../examples/gen2-follow.json", []byte(swapInputs(t, src))); err != nil {
		t.Errorf("reload: %v", err)
	}
}

// refusedReload reloads the FMU rig with a gain the FMU refuses.
func refusedReload(t *testing.T, m *matrixRun) {
	if !m.h.waitMessages(200) {
		t.Error("the run ended before 200 messages: no reload")
		return
	}
	text := strings.Replace(string(must(os.ReadFile(m.path))), `"kp": 0.3`, `"kp": 50`, 1)
	if _, err := reloadConfig(m.h.s, m.path, []byte(text)); err == nil || !strings.Contains(err.Error(), "a gain must be within 0..10") {
		t.Errorf("a gain of 50: %v", err)
	}
}

// execModel is an exectest script as the exec model, with restarts off.
func execModel(script ...string) func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model {
	return func(t *testing.T, p *ports.Plan, log *logBuffer) models.Model {
		m, err := kinds.New("exec", models.Params{"command": exectest.Command(script...), "restart": false}, p, log.Logger())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.(models.Closer).Close() })
		return m
	}
}

// sendAfter sends BeamNG-sized datagrams with id `id` from host's loopback
// address to the coupling, once n messages went by.
func sendAfter(t *testing.T, m *matrixRun, n int64, host string, id float64) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(host), 0)))
	if err != nil {
		t.Errorf("no %s: %v", host, err)
		return
	}
	defer c.Close()
	if !m.h.waitMessages(n) {
		t.Errorf("the run ended before %d messages: nothing sent from %s", n, host)
		return
	}
	msg := make([]float64, beamng.StateLen)
	msg[0], msg[17] = id, 99
	b, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
	for range 5 {
		c.WriteToUDPAddrPort(b, m.h.c.LocalAddr())
		msg[0]++
		b, _ = beamng.Encode(b, msg)
	}
}

// vanishConfig runs the reload watcher as run does, deletes the config's
// folder, creates it again with an edit, and checks the edit went live.
func vanishConfig(t *testing.T, m *matrixRun) {
	dir := filepath.Join(t.TempDir(), "rig")
	os.Mkdir(dir, 0o755)
	path := filepath.Join(dir, "rig.json")
	src, _ := os.ReadFile("../examples/cruise-pedals.json")
	src = bytes.Replace(src, []byte(`"$schema": "../schemas/config.schema.json",`), nil, 1)
	os.WriteFile(path, src, 0o644)
	w := config.NewWatcher(path, 0, m.log.Logger())
	w.SetHealthInterval(50 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	reloaded := make(chan error, 1)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		w.Run(ctx, func(b []byte) {
			_, err := reloadConfig(m.h.s, path, b)
			select {
			case reloaded <- err:
			default:
			}
		})
	}()
	// The watcher holds the folder open (on Windows, a handle that a
	// removal of the folder meets): it is closed before the test's
	// temporary folder is removed, which under Wine failed now and then.
	defer func() { cancel(); <-watching }()
	if !m.h.waitMessages(100) {
		t.Error("the run ended before 100 messages: the config never vanished")
		return
	}
	os.RemoveAll(dir)
	// The watcher sees the folder and the file gone (its health check runs
	// every 50 ms) before the folder comes back; the check below says if it
	// did not. (Wine may never report the folder's removal.)
	m.log.Await(`msg="the config file is `, 1, 2*time.Second)
	if !wine.Running() {
		m.log.Await("the config's folder was removed", 1, 2*time.Second)
	}
	os.Mkdir(dir, 0o755)
	os.WriteFile(path, bytes.Replace(src, []byte(`{ "propertyName": "gear" }`), []byte(`{ "propertyName": "gear" }, { "propertyName": "fuel" }`), 1), 0o644)
	// The edit goes live, within 2 s (a read that meets the file half
	// written fails, and the watcher reads it again once writing settles).
	timeout := time.After(2 * time.Second)
wait:
	for m.h.s.Values()[Reloads] == 0 {
		select {
		case <-reloaded:
		case <-timeout:
			break wait
		}
	}
	// On Windows a read that meets the deletion under way fails with a
	// sharing violation: the file is then "unreadable", not "missing".
	gone := m.log.Has("the config file is missing") || runtime.GOOS == "windows" && m.log.Has("the config file is unreadable")
	// Under Wine on a loaded machine the removal and the new folder have
	// come as one change: the edit still goes live, which is what counts.
	said := m.log.Has("the config's folder was removed") && gone || wine.Running()
	if m.h.s.Values()[Reloads] != 1 || !said {
		t.Errorf("reloads %d after the folder came back\n%s", m.h.s.Values()[Reloads], m.log)
	}
}

// busyPortRow: the client port is held by another program when the run
// starts, and freed once the bind and its first retry have failed. The
// bind is retried with backoff; the time to recover runs from the port's
// release to the first message.
func busyPortRow(t *testing.T) string {
	busy, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(loopback))
	if err != nil {
		t.Fatal(err)
	}
	cfg := load(t, "../examples/cruise-pedals.json")
	port := busy.LocalAddr().(*net.UDPAddr).AddrPort()
	cfg.Vehicles[0].Local = port
	var freed time.Time
	h := rig{cfg: cfg, em: emulator.Config{Steps: 10000}, noBind: true,
		opts: func(_ *harness, o *Options) { o.Local = netip.AddrPort{} }}.udp(t)
	h.run(t, func(ctx context.Context) {
		h.log.Await("cannot bind the local address; retrying", 2, 10*time.Second)
		freed = time.Now()
		busy.Close()
	})
	st := h.c.Stats()
	if st.Get(Connects) == 0 || st.Get(BindFailures) < 2 || !h.log.Has("another program has") {
		t.Errorf("connects %d, bind failures %d\n%s", st.Get(Connects), st.Get(BindFailures), h.log)
	}
	if f := h.s.Faults(); !containsAll(f, "could not be bound") {
		t.Errorf("faults %q", f)
	}
	recovered := time.Duration(0)
	if first := h.c.in.firstAt; !first.IsZero() {
		recovered = first.Sub(freed)
	}
	return fmt.Sprintf("| busy port | another program holds the client port at start, freed after two failed binds: bind retried with backoff | BeamNG unanswered until then | yes | - | - | %s (BeamNG answered %s after the port was freed) |\n",
		strings.Join(h.s.Faults(), "; "), ms(recovered))
}

// Package coupling runs the tight coupling of one config with BeamNG: a
// Session holds a Link per vehicle (its socket, where BeamNG sends from,
// its reply ids and lockstep, its counters) and one model with its port
// vectors, stepped by every vehicle's messages. One vehicle is a session
// of one link; there is no other path.
//
// It fails safe, by three rules kept by construction:
//   - A reply carries the model's controls only if a model step computed
//     them from this message's data (Model.Step says so); a message that
//     lacks data the model reads, another vehicle's data the model reads
//     gone stale, a model that computed nothing in time, dies, hangs or
//     panics, are answered with neutral controls, counted.
//   - A reload is whole or nothing: prepared off the message path, then
//     swapped in between two messages by a step that cannot fail.
//   - Only BeamNG's whole message reaches the model: datagrams that are not
//     BeamNG's (another host, another port while BeamNG's own still sends,
//     an implausible id) are dropped and reported.
//
// A bind that fails is retried with backoff; a watchdog sees, and where the
// protocol allows repairs, a BeamNG that is no longer in lockstep. Every
// fault is logged when it happens and listed by Faults at the end.
package coupling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"sync"
	"time"

	"beamconnect/internal/scope"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/quality"
	"beamconnect/recording"
	"beamconnect/timesync"
)

// stallGap bounds a silence that is BeamNG's own 2 s blocking timeout
// (reported as a stall) rather than BeamNG lost.
const stallGap = 2300 * time.Millisecond

// rebaseGap is how long BeamNG may be silent before beamconnect assumes its
// controller timed out (2.0 s) and reset its window: reply ids then restart
// so BeamNG goes back to lockstep instead of keeping a standing backlog. A
// reply later than this is not sent: BeamNG gave up on it.
const rebaseGap = 1900 * time.Millisecond

// DefaultBindTimeout is how long run retries a local address it cannot
// bind before it gives up.
const DefaultBindTimeout = 10 * time.Second

// idleStep is how long a read waits before the loop looks around (the
// directive, silence, overdue contracts) and steps the model without new
// data, so it sees the status and can change the directive.
const idleStep = 50 * time.Millisecond

// Options set up a session.
type Options struct {
	Plan  *ports.Plan
	Model models.Model
	// Params reads the parameters of the config's model, which a setpoint
	// of beamng.quality may name (kinds.Parameters(plan.Model)); nil reads
	// only numbers in modelParams.
	Params models.ParamReader
	// ModelName is the model's name (kinds.New's); default the plan's.
	// A reload tunes the model's parameters only when it is the config's.
	ModelName string
	Log       *slog.Logger
	// Local, when valid, replaces every vehicle's local address (port 0: a
	// free port each): the in-process emulator uses free ports.
	Local netip.AddrPort
	// Silence is how long BeamNG may send nothing before a vehicle's status
	// drops from connected to connecting. Default 1 s, or 3 periods if longer.
	Silence time.Duration
	// Record, when set, receives a row per message of any vehicle.
	Record *Recorder
	// OnStatus, when set, is called on every change of a vehicle's reported
	// status, on that vehicle's loop.
	OnStatus func(vehicle int, s ports.Status)
	// Scope, when set, receives a sample per message (decimated as the ring
	// says): time, status, every output, the directive and every input. It
	// never blocks the loop.
	Scope *scope.Ring
	// OnMessage, when set, is called after each reply with the vehicle,
	// BeamNG's message id and the reply id (for tests).
	OnMessage func(vehicle int, id, replyID float64)
	// Clock is the time the session reads and master time sync paces
	// against; nil is the real clock.
	Clock timesync.Clock
	// RealTime runs the plan, and every plan a reload brings, in real time
	// (run --real-time), whatever its beamng.realTime says: the model
	// must have been made from such a plan (ports.Plan.InRealTime).
	RealTime bool
	// BusyPoll reads the sockets by busy polling on locked OS threads
	// (Linux): the lowest latency, a CPU core kept busy per vehicle. The
	// plan's beamng.busyPoll sets it too.
	BusyPoll bool
	// Listen binds a vehicle's local address; nil binds UDP sockets
	// (listenUDP). Tests bind in memory (internal/memnet).
	Listen Listen
	// BindTimeout is how long a vehicle's local address may fail to bind
	// (a busy port, an address not of this machine) before the run gives
	// up with the error: 0 is DefaultBindTimeout, negative retries for as
	// long as the directive asks (VS Connect's perpetual reconnect). A
	// socket that fails after it was bound is bound again without limit.
	BindTimeout time.Duration
	// LogLoss, when set, says how many log records were dropped and how
	// many log writes failed (a slow or broken stderr): counted with the
	// run's counters, not a fault of the coupling.
	LogLoss func() (dropped, failed uint64)
	// HandOver makes the run's end hand each link's hold on BeamNG over
	// (Handovers) rather than release it: the socket stays bound, BeamNG
	// still gets neutral controls.
	HandOver bool
	// Resume are the session before's handovers, by vehicle, for a session
	// of the same BeamNG, which ran on in between (nil: a fresh start). A
	// link takes its vehicle's when it binds the same local address for the
	// same BeamNG, and goes on where that session let go; one that does not
	// fit is closed. New takes them when it succeeds.
	Resume []*Handover
}

// Session is one run of a config: a Link per vehicle and the model they
// share. Create it with New, then Run it.
type Session struct {
	opt   Options
	log   *slog.Logger
	links []*Link
	stage *stage
	stats Stats // the run's own counters (model, reloads, recording)

	reloads reloads
}

// New prepares a session of every vehicle of opt.Plan; it binds nothing yet.
func New(opt Options) (*Session, error) {
	p := opt.Plan
	if p == nil || opt.Model == nil || len(p.Vehicles) == 0 {
		return nil, errors.New("coupling: a plan with a vehicle and a model are needed")
	}
	if opt.RealTime && !p.RealTime {
		p = p.InRealTime()
		opt.Plan = p
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Clock == nil {
		opt.Clock = timesync.RealClock{}
	}
	if opt.ModelName == "" {
		opt.ModelName = p.Model
	}
	if opt.Silence <= 0 {
		opt.Silence = max(time.Second, 3*seconds(p.Period))
	}
	if opt.BindTimeout == 0 {
		opt.BindTimeout = DefaultBindTimeout
	}
	opt.BusyPoll = opt.BusyPoll || p.BusyPoll
	if opt.Listen == nil {
		opt.Listen = udpListen(opt.BusyPoll, opt.Log)
	}
	s := &Session{opt: opt, log: opt.Log}
	s.stage = newStage(p, opt.Model, &s.stats, opt.Log, opt.Clock)
	s.stage.fault.record = opt.Record
	s.reloads = reloads{latest: p, opt: &s.opt, stage: s.stage, stats: &s.stats, vehicles: len(p.Vehicles)}
	loops, err := newControlLoops(p, setpoints(opt.Params, p))
	if err != nil {
		return nil, fmt.Errorf("beamng.quality: %w", err)
	}
	s.stage.loops = loops
	s.stage.shown.Store(loops)
	for v := range p.Vehicles {
		log := opt.Log
		if len(p.Vehicles) > 1 {
			log = log.With("vehicle", p.Vehicles[v].Name)
		}
		s.links = append(s.links, newLink(s, v, log))
	}
	for _, h := range opt.Resume[min(len(opt.Resume), len(s.links)):] {
		h.Close() // a vehicle no more
	}
	for _, l := range s.links {
		s.stage.statuses = append(s.stage.statuses, &l.status.reported)
	}
	if p.RealTime {
		// The problem lines that depend on the mode read it from the
		// counters.
		s.stats.Set(realTimeMode, 1)
		for _, l := range s.links {
			l.stats.Set(realTimeMode, 1)
		}
	}
	s.stage.onLayout = func(p *ports.Plan, vars []models.Variable) {
		if opt.Record != nil {
			opt.Record.Layout(p, vars)
		}
		if opt.Scope != nil {
			opt.Scope.SetColumns(ScopeColumns(p, vars))
		}
	}
	s.stage.onLayout(p, s.stage.vars.list)
	return s, nil
}

// udpListen binds UDP sockets, warning once when busy polling was asked for
// but is not available.
func udpListen(busy bool, log *slog.Logger) Listen {
	var once sync.Once
	return func(local netip.AddrPort) (Transport, error) {
		t, fallback, err := listenUDP(local, busy)
		if fallback != nil {
			once.Do(func() {
				log.Warn("busy polling is not available here; reading the socket the usual way", "err", fallback)
			})
		}
		return t, err
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Links are the vehicles' links, in the plan's order.
func (s *Session) Links() []*Link { return s.links }

// Link is vehicle v's link.
func (s *Session) Link(v int) *Link { return s.links[v] }

// Bind binds every vehicle's local address now rather than when Run
// starts, so a caller can learn the ports (Options.Local may name port 0)
// before BeamNG's side is started. The errors of those that failed are
// joined; Run retries them with backoff, and a caller that gives up
// instead calls Close.
func (s *Session) Bind() error {
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.connect())
	}
	return errors.Join(errs...)
}

// Close releases the sockets of a session that will not run: one whose
// Bind failed for some vehicle holds the others' ports bound until then.
// (Run releases them itself at its end.)
func (s *Session) Close() {
	for _, l := range s.links {
		l.sock.close()
	}
}

// Run drives every vehicle's link until ctx ends, each on its own
// goroutine, and then leaves BeamNG with neutral controls. A link that
// gives up (its address never bound within Options.BindTimeout) ends the
// run of every link, with its error.
func (s *Session) Run(ctx context.Context) error {
	s.stage.begin()
	defer s.stage.end()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make([]error, len(s.links))
	for i, l := range s.links {
		wg.Go(func() {
			if errs[i] = l.run(ctx); errs[i] != nil {
				stop()
			}
		})
	}
	wg.Wait()
	if r := s.opt.Record; r != nil {
		if faults := s.Faults(); len(faults) > 0 {
			// The file says how the run went: plotted or converted, a run
			// with faults is not taken for a good one.
			r.Event(recording.Event{Time: math.NaN(), Vehicle: -1, Kind: recording.Faults, Name: "run ended with faults", Text: strings.Join(faults, "; ")})
		}
		r.Close()
	}
	return errors.Join(errs...)
}

// Handovers are the links' holds on BeamNG at the run's end with
// Options.HandOver, by vehicle: nil for a vehicle without a socket then.
// Read them after Run returns; pass them to the next session of the same
// BeamNG (Options.Resume), or Close them.
func (s *Session) Handovers() []*Handover {
	out := make([]*Handover, len(s.links))
	for i, l := range s.links {
		out[i], l.handing = l.handing, nil
	}
	return out
}

// Status is port 0's status: the vehicle's, or with several vehicles the
// run's as a whole (an error if any vehicle has one, connected only when
// every one is).
func (s *Session) Status() ports.Status { return s.stage.portStatus() }

// Plan is the plan replies are built from right now.
func (s *Session) Plan() *ports.Plan { return s.stage.active.Load() }

// Stats are the run's own counters (the model's, reloads, the recording);
// each vehicle's are its link's.
func (s *Session) Stats() *Stats { return &s.stats }

// Values are the run's counters: its own and every vehicle's summed.
func (s *Session) Values() Values {
	s.collect()
	v := s.stats.Snapshot()
	for _, l := range s.links {
		lv := l.stats.Snapshot()
		v.Add(&lv)
	}
	return v
}

// collect copies counters kept elsewhere (the model's program, the
// recorder) into the run's.
func (s *Session) collect() {
	if t, ok := s.stage.model.(models.Tallier); ok {
		n := t.Tally()
		s.stats.Set(ModelMissed, n.Missed)
		s.stats.Set(ModelDiscarded, n.Discarded)
		s.stats.Set(ModelFailed, n.Failed)
		s.stats.Set(ModelSkipped, n.Skipped)
		s.stats.Set(ModelOld, n.Old)
		s.stats.Set(ModelAbandoned, n.Abandoned)
		s.stats.Set(ModelRestarts, n.Restarts)
		s.stats.Set(SolverSteps, n.SolverSteps)
		s.stats.Set(SolverRejected, n.SolverRejected)
		s.stats.Set(SolverEvents, n.Events)
		s.stats.Set(InputsClamped, n.InputsClamped)
	}
	if l := s.opt.LogLoss; l != nil {
		dropped, failed := l()
		s.stats.Set(LogDropped, int64(dropped))
		s.stats.Set(LogFailed, int64(failed))
	}
	if r := s.opt.Record; r != nil {
		s.stats.Set(RecordRows, r.Rows())
		s.stats.Set(RecordWritten, r.Written())
		s.stats.Set(RecordLost, r.Lost())
	}
}

// Control is how well the model controls now, a report per loop: those
// of beamng.quality when the config names any, else the model's own
// (models.Reporter); nil when there is neither.
func (s *Session) Control() []quality.Report { return s.control(false) }

// FinalControl is Control at the end of the run: a loop that never
// settled did not settle.
func (s *Session) FinalControl() []quality.Report { return s.control(true) }

func (s *Session) control(final bool) []quality.Report {
	if c := s.stage.shown.Load(); len(c.loops) > 0 {
		return c.reports(final)
	}
	if r, ok := s.stage.model.(models.Reporter); ok {
		return r.Quality(final)
	}
	return nil
}

// ModelNotes are what the model says about how it runs (an FMU's
// interface and step, and when it ended the simulation and why), a line
// each; nil when it says nothing.
func (s *Session) ModelNotes() []string {
	if n, ok := s.stage.model.(models.Noter); ok {
		return n.Notes()
	}
	return nil
}

// Name is vehicle v's name (its remoteObject; "" for a single vehicle
// without beamng.vehicles).
func (s *Session) Name(v int) string { return s.links[v].name }

// Faults lists what went wrong, one line each, read after Run returns: a
// run that lists nothing was healthy. It is never healthy when BeamNG was
// not coupled in lockstep all along: when a vehicle never connected,
// stalled, ran out of lockstep or went silent, when the model failed, or
// when datagrams that are not BeamNG's came in. With several vehicles each
// vehicle's lines are named by vehicle.
func (s *Session) Faults() []string { return s.problems(true) }

// Diagnosis is one of a vehicle's live diagnoses.
type VehicleDiagnosis struct {
	Vehicle string `json:"vehicle,omitempty"`
	Diagnosis
}

// Diagnoses are the classic mistakes diagnosed live so far, every
// vehicle's, each saying whether it holds at now.
func (s *Session) Diagnoses(now time.Time) []VehicleDiagnosis {
	var out []VehicleDiagnosis
	for _, l := range s.links {
		for _, d := range l.diagnosed(now) {
			out = append(out, VehicleDiagnosis{Vehicle: l.name, Diagnosis: d})
		}
	}
	return out
}

// Notes lists what the run's end says that is not a fault (BeamNG stopped
// before beamconnect was), one line each, named by vehicle with several.
func (s *Session) Notes() []string {
	var out []string
	for _, l := range s.links {
		for _, n := range l.notes() {
			if len(s.links) > 1 {
				n = fmt.Sprintf("vehicle %q: %s", l.name, n)
			}
			out = append(out, n)
		}
	}
	return out
}

// Problems lists what the counters say went wrong so far, while the run
// goes on (the live page): Faults without what only the run's end can say.
func (s *Session) Problems() []string { return s.problems(false) }

func (s *Session) problems(final bool) []string {
	s.collect()
	policy := string(s.Plan().ReplyID)
	run := s.stats.Snapshot()
	for _, l := range s.links {
		run[NeutralReplies] += l.stats.Get(NeutralReplies) // the model-fault line tells how many replies it cost
	}
	out := run.Problems(policy)
	for _, l := range s.links {
		prefix := ""
		if len(s.links) > 1 {
			prefix = fmt.Sprintf("vehicle %q: ", l.name)
		}
		var lines []string
		if final {
			lines = l.Faults()
		} else {
			v := l.stats.Snapshot()
			lines = append(l.diag.faults(l.clock.Now()), v.Problems(policy)...)
		}
		for _, f := range lines {
			out = append(out, prefix+f)
		}
	}
	return out
}

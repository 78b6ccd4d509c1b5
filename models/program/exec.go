package program

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/beamng"
	"beamconnect/internal/proctree"
	"beamconnect/models"
	"beamconnect/ports"
)

// Errors Exec.Fault reports while its program runs.
var (
	ErrModelHung        = models.Late("the model program gave no valid answer for longer than the model timeout")
	ErrModelSilentStart = errors.New("the model program did not answer its first request within 10 s of starting")
	// ErrExtraLine is the protocol fault of a program that does not echo
	// its requests' times and wrote a line beyond one answer per request.
	ErrExtraLine = errors.New(`the model program wrote a line beyond one answer per request (a protocol fault): an answer without "@t" is taken for the request outstanding when it comes, so a message answered just before may have carried another request's controls; echo each request's time ("@t directive inputs…") to pair every answer with its own request`)
)

// maxAnswerLine is the longest answer line read, newline included: far
// more than any config's ports need, and a bound on what a runaway
// program can make beamconnect hold.
const maxAnswerLine = 1 << 20

// startGrace is how long a (re)started program may take to answer its
// first request: interpreters take their time to start.
const startGrace = models.StartGrace

// Exec is a model in an external process (see ExecProtocol).
type Exec struct {
	argv     []string
	dir      string
	log      *slog.Logger
	deadline time.Duration // how long a message waits for its answer in real time
	timeout  time.Duration // the model timeout: how long in lockstep
	realTime bool          // beamng.realTime
	restart  bool
	reset    resetMode // modelParams.reset: how the program starts over

	width  atomic.Int64           // numbers expected in an answer
	header atomic.Pointer[string] // the "# columns:" line for the current plan

	// What the program named (NamesProtocol): its latest "# columns:"
	// line, and, on the loop, the variables made of it for the input port
	// elements refs (of plan generation gen).
	declared  atomic.Pointer[declaration]
	everSpoke atomic.Bool // the program (any run of it) has written a line
	refs      []models.Ref
	gen       int
	varsOf    *declaration
	varsGen   int
	vars      []models.Variable
	varIdx    []int // each variable's index in an answer

	// Requests: only the newest waits; the writer sends it once the program
	// has answered the previous one. Buffers rotate between Step, pending
	// and the writer, so steady state allocates nothing. Each request has a
	// sequence number and the count of numbers its answer must have (the
	// plan's when it was made), so an answer is matched to its request.
	reqMu    sync.Mutex
	pending  request
	hasReq   bool
	reqReady chan struct{}
	stepBuf  []byte
	seq      uint64   // the last request's; owned by Step
	times    timeRing // the latest requests' times, owned by Step (echo.go)

	// Answers: only the newest waits for Step.
	ansMu    sync.Mutex
	answer   []float64
	ansSeq   uint64 // the request answer answers
	hasAns   bool
	ansReady chan struct{}
	stepAns  []float64
	timer    *time.Timer

	// Health.
	dead     atomic.Pointer[error] // why the program is not running; nil while it runs
	hung     atomic.Pointer[error] // set by Step: ErrModelHung or ErrModelSilentStart
	answered atomic.Bool           // the current program has answered validly
	spoke    atomic.Bool           // the current program has answered at all: it has started
	// unanswered is when the first request since the last valid answer
	// was written (unix ns, by clock); 0 when every request written has
	// had one. clock is the time the hang is judged by: the machine's
	// (tests set another before the first request).
	unanswered atomic.Int64
	clock      func() int64
	maxAge     atomic.Int64 // ns: the oldest request a used answer was for

	missed, bad, skipped, restarts, old atomic.Int64

	// Lines beyond one answer per request of a program that does not echo
	// (extras, counted by the reader): a fault from when one is read until
	// a message step has reported it (extrasShown, owned by Step) and the
	// next has its own answer (extrasCleared).
	extras, extrasCleared atomic.Int64
	extrasShown           int64

	// Resets (reset.go): resetGen counts the resets asked for; a run of
	// the program has had those up to its gen. resetNow asks the
	// supervisor to start the program again for one; resetStarts counts
	// those starts.
	resetGen    atomic.Uint64
	resetNow    chan struct{}
	resetStarts atomic.Int64

	started     chan struct{} // closed at the first valid answer
	startedOnce sync.Once
	pairingSaid sync.Once // how its answers are paired, said at the first
	closing     chan struct{}
	closeOnce   sync.Once
	done        chan struct{} // the supervisor ended
	procMu      sync.Mutex
	proc        *process
	lastExit    error
}

// request is one step's request to the program.
type request struct {
	buf    []byte
	seq    uint64
	width  int     // numbers its answer must have
	t      float64 // its time, written with pad (echo.go)
	pad    int8
	unique bool   // no request in the window before it had its time
	gen    uint64 // the resets asked for when it was made
}

// process is one run of the program.
type process struct {
	tree   *proctree.Tree
	stdin  io.WriteCloser
	stdout io.Reader
	done   chan struct{} // closed when it has exited
	exit   error
	// The request written and not answered yet: its sequence number,
	// width and time are stored before outstandingAt, which the reader
	// sets to 0 when it is answered.
	outstandingAt     atomic.Int64 // unix ns it was written; 0: none
	outstandingSeq    atomic.Uint64
	outstandingWidth  atomic.Int64
	outstandingT      atomic.Uint64 // float64 bits
	outstandingPad    atomic.Int32
	outstandingUnique atomic.Bool
	answeredReq       chan struct{} // the outstanding request got an answer
	// gen is the resets this run has had: a new run has had every one
	// asked for so far; one that speaks reset (speaksReset: it said
	// "# protocol: reset") has one more with each "# reset" written.
	gen         atomic.Uint64
	speaksReset atomic.Bool
}

// NewExec starts the program of params["command"].
func NewExec(params models.Params, plan *ports.Plan, log *slog.Logger) (*Exec, error) {
	argv := models.Argv(params["command"])
	if len(argv) == 0 {
		return nil, errors.New("model exec: modelParams.command must name the program to run")
	}
	deadline, err := params.Float("deadlineMs", 0.8*plan.Period*1000)
	if err != nil {
		return nil, err
	}
	if deadline <= 0 {
		return nil, errors.New("model exec: modelParams.deadlineMs must be positive")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	restart := true
	if r, ok := params["restart"].(bool); ok {
		restart = r
	}
	reset, err := resetParam(params)
	if err != nil {
		return nil, err
	}
	m := &Exec{
		argv: argv, log: log, restart: restart, reset: reset, realTime: plan.RealTime, resetNow: make(chan struct{}, 1),
		deadline: time.Duration(deadline * float64(time.Millisecond)),
		timeout:  time.Duration(plan.ModelTimeout * float64(time.Second)),
		reqReady: make(chan struct{}, 1), ansReady: make(chan struct{}, 1),
		pending: request{buf: make([]byte, 0, 4096)}, stepBuf: make([]byte, 0, 4096),
		timer: time.NewTimer(time.Hour), started: make(chan struct{}),
		closing: make(chan struct{}), done: make(chan struct{}),
		clock: func() int64 { return time.Now().UnixNano() },
	}
	if m.timeout <= 0 {
		m.timeout = time.Duration(max(5*plan.Period, ports.DefaultModelTimeout) * float64(time.Second))
	}
	if plan.Source != "" {
		m.dir = filepath.Dir(plan.Source)
	}
	m.timer.Stop()
	m.setPlan(plan)
	p, err := m.start()
	if err != nil {
		return nil, err
	}
	go m.supervise(p)
	return m, nil
}

func (m *Exec) setPlan(plan *ports.Plan) {
	m.use(columns(plan), inputWidth(plan), inputRefs(plan))
}

// use makes header and width the plan's: the next request starts with the
// header, and its answer must have width numbers; refs are its input port
// elements.
func (m *Exec) use(header string, width int, refs []models.Ref) {
	m.refs, m.gen = refs, m.gen+1
	m.header.Store(&header)
	m.width.Store(int64(width))
	m.ansMu.Lock()
	if cap(m.answer) < width {
		m.answer = make([]float64, 0, width)
		m.stepAns = make([]float64, 0, width)
	}
	m.ansMu.Unlock()
}

// inputWidth is how many numbers an answer has: every input port element.
func inputWidth(plan *ports.Plan) int {
	width := 0
	for _, p := range plan.Inputs {
		width += p.Width
	}
	return width
}

// columns is the header line naming every number of the protocol.
func columns(plan *ports.Plan) string {
	var b strings.Builder
	b.WriteString("# columns: t status")
	name := func(dir beamng.Direction, list []ports.Port) {
		for _, p := range list[1:] {
			for i := range p.Fields {
				f := &p.Fields[i]
				for k := range f.Width {
					b.WriteByte(' ')
					if f.Source == ports.Slot {
						b.WriteString(f.Signal(dir, k).Name)
					} else {
						b.WriteString(f.Label(plan))
						if f.Width > 1 {
							b.WriteString("[" + strconv.Itoa(k) + "]")
						}
					}
				}
			}
		}
	}
	name(beamng.FromBeamNG, plan.Outputs)
	b.WriteString(" | directive")
	name(beamng.ToBeamNG, plan.Inputs)
	b.WriteByte('\n')
	return b.String()
}

// Step sends the outputs as the newest request and waits for the
// program's answer to it, which then sets the inputs: in lockstep up to
// the model timeout (a slow answer slows BeamNG; none by then is a hang),
// in real time up to the deadline. It reports whether that answer came: an
// answer to an older request (one whose step gave up on it) is not this
// message's, and is dropped. While the program is hung a step does not
// wait. It allocates nothing.
func (m *Exec) Step(t float64, out, in [][]float64) bool {
	wait := m.timeout
	if m.realTime {
		wait = m.deadline
	}
	got := m.exchange(t, out, in, wait, !m.realTime)
	m.settleExtras(got)
	if !got && m.dead.Load() == nil {
		m.missed.Add(1) // BeamNG gets neutral controls for this message
	}
	return got
}

// settleExtras ends the fault of lines beyond one answer per request once
// a message step has reported it (Fault, read after the step: its reply
// neutral) and a later one had its own answer.
func (m *Exec) settleExtras(got bool) {
	n := m.extras.Load()
	switch {
	case n == m.extrasCleared.Load():
	case got && m.extrasShown == n:
		m.extrasCleared.Store(n)
	default:
		m.extrasShown = n
	}
}

// Idle sends a request while BeamNG sends nothing, so the program sees the
// status and can set the directive; its answer, if it comes within the
// deadline, sets the inputs (nothing of them reaches BeamNG until a
// message step).
func (m *Exec) Idle(t float64, out, in [][]float64) { m.exchange(t, out, in, m.deadline, false) }

// exchange sends a request and waits up to wait for its answer, which then
// sets the inputs; it reports whether the answer came. hang says that
// waiting all of wait in vain is a hang (a lockstep step waits the model
// timeout).
func (m *Exec) exchange(t float64, out, in [][]float64, wait time.Duration, hang bool) bool {
	seq := m.request(t, out)
	m.checkHung()
	if m.dead.Load() != nil {
		return false
	}
	got := m.take(seq)
	if !got && m.hung.Load() == nil { // a hung program is not waited for
		// A program (re)started, to start over at BeamNG's restart or
		// after a fault, that has not said a line yet is starting: in
		// lockstep its start-up is waited for as a slow step is (an
		// interpreter on a loaded machine can take more than the model
		// timeout to start), a model timeout at a time, up to the grace a
		// start has (then it is a fault, checkHung's); once it speaks, the
		// model timeout is all it has.
		starting, began := hang && !m.spoke.Load(), time.Now()
		m.timer.Reset(wait)
	wait:
		for !got && m.dead.Load() == nil {
			select {
			case <-m.ansReady:
				got = m.take(seq)
			case <-m.timer.C:
				if left := startGrace - time.Since(began); starting && !m.spoke.Load() && left > 0 {
					m.timer.Reset(min(wait, left))
					continue
				}
				break wait
			}
		}
		m.timer.Stop()
		if !got && hang && m.spoke.Load() && m.dead.Load() == nil {
			// Its request had the whole model timeout (checkHung, which
			// counts from the request's writing, may be a hair short).
			m.hung.Store(&ErrModelHung)
			return false
		}
	}
	m.checkHung()
	if !got {
		return false
	}
	i := 0
	for _, p := range in {
		for k := range p {
			if i < len(m.stepAns) {
				p[k] = m.stepAns[i]
			}
			i++
		}
	}
	return true
}

// request formats the outputs as the newest request, replacing one the
// program has not taken yet, and returns its sequence number.
func (m *Exec) request(t float64, out [][]float64) uint64 {
	t += 0 // -0 as 0: one time, one way to write it
	pad, unique := m.times.place(t)
	b := appendTime(m.stepBuf[:0], t, pad)
	for _, p := range out {
		for _, v := range p {
			b = strconv.AppendFloat(append(b, ' '), v, 'g', -1, 64)
		}
	}
	b = append(b, '\n')
	m.seq++
	m.reqMu.Lock()
	if m.hasReq {
		m.skipped.Add(1) // the program was still busy: it only ever gets the newest
	}
	m.stepBuf = m.pending.buf[:0]
	m.pending = request{buf: b, seq: m.seq, width: int(m.width.Load()), t: t, pad: pad, unique: unique, gen: m.resetGen.Load()}
	m.hasReq = true
	m.reqMu.Unlock()
	select {
	case m.reqReady <- struct{}{}:
	default:
	}
	return m.seq
}

// take moves the answer to request seq to stepAns, if it has come. An
// answer to an older request is dropped: its step is over.
func (m *Exec) take(seq uint64) bool {
	m.ansMu.Lock()
	defer m.ansMu.Unlock()
	if !m.hasAns {
		return false
	}
	m.hasAns = false
	if m.ansSeq != seq {
		m.old.Add(1)
		return false
	}
	m.stepAns, m.answer = m.answer, m.stepAns[:0]
	return true
}

// checkHung sets the hung fault from how long the program has been asked
// without a valid answer: since the first request written after its last
// valid one, longer than the model timeout (or, for a program that has not
// answered since it started, than startGrace). A program with nothing to
// answer is not hung, however long ago its last answer was (while BeamNG
// is not connected, requests come every 50 ms).
func (m *Exec) checkHung() {
	var err *error
	if since := m.unanswered.Load(); since != 0 && m.dead.Load() == nil {
		waited := m.clock() - since
		switch {
		case !m.spoke.Load():
			if waited > int64(startGrace) {
				err = &ErrModelSilentStart
			}
		case waited > int64(m.timeout):
			err = &ErrModelHung
		}
	}
	m.hung.Store(err)
}

// Fault reports why the model cannot be trusted right now: its program
// ended, or gives no valid answers. nil while it is healthy.
func (m *Exec) Fault() error {
	if e := m.dead.Load(); e != nil {
		return *e
	}
	if e := m.hung.Load(); e != nil {
		return *e
	}
	if m.extras.Load() != m.extrasCleared.Load() {
		return ErrExtraLine
	}
	return nil
}

// Rebind prepares telling the program about a reloaded plan: once
// committed, the next request starts with a new "# columns:" line, and its
// answer must have the new width (an answer to a request from before still
// has the old one). The program keeps running; its modelParams cannot
// change while it runs.
func (m *Exec) Rebind(plan *ports.Plan, running, params models.Params) (func(), error) {
	if err := models.RefuseChanges("exec", running, params); err != nil {
		return nil, err
	}
	header, width, refs := columns(plan), inputWidth(plan), inputRefs(plan)
	return func() { m.use(header, width, refs) }, nil
}

// Started is closed once the program has given its first valid answer
// (to a request while BeamNG is not connected, or to a message's).
func (m *Exec) Started() <-chan struct{} { return m.started }

// Counters: steps that got no answer in time (Missed), answers discarded
// (Bad), requests replaced by a newer one before the program took them
// (Skipped), restarts of the program, and the oldest request a used answer
// was for.
func (m *Exec) Missed() int64               { return m.missed.Load() }
func (m *Exec) Bad() int64                  { return m.bad.Load() }
func (m *Exec) Skipped() int64              { return m.skipped.Load() }
func (m *Exec) Restarts() int64             { return m.restarts.Load() }
func (m *Exec) Old() int64                  { return m.old.Load() }
func (m *Exec) MaxAnswerAge() time.Duration { return time.Duration(m.maxAge.Load()) }

// Close ends the program: no more restarts, its stdin closes, it gets 2 s
// to exit, then it is killed with everything it started; what it leaves
// running when it exits on its own is killed too (see package proctree).
func (m *Exec) Close() error {
	m.closeOnce.Do(func() {
		close(m.closing)
		<-m.done // the supervisor ends the program (process.end)
	})
	if err := m.lastExit; err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == -1 {
			return nil // killed by us
		}
		return fmt.Errorf("model exec: %w", err)
	}
	return nil
}

// Tally counts what the program did.
func (m *Exec) Tally() models.Tally {
	return models.Tally{Missed: m.Missed(), Discarded: m.Bad(), Skipped: m.Skipped(), Restarts: m.Restarts(), Old: m.Old()}
}

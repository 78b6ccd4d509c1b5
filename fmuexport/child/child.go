// Package child is beamconnect's side of an exported FMU: the process
// ("beamconnect fmu-export-child") its shim starts for each instance. It
// takes the shim's requests from the shared-memory mailbox the shim made
// (package mailbox, the answering side, as the FMU host's is), loads the
// config the FMU carries, and runs the coupling with the master as its
// model (bridge): every doStep couples BeamNG's messages of its interval
// with all of beamconnect's guarantees (lockstep, reply ids, the status
// machine, neutral controls on every fault), and the coupling's log goes
// back with each answer to the master's FMI logger.
//
// The master's process must not die with the coupling, so nothing of Go
// runs in it: a crash or a hang here is a failed call there. And the
// coupling must not outlive the master: when the shim's process ends (its
// end of the child's stdin closes; on Unix its parent changes too), the
// child leaves BeamNG with neutral controls, closes the recording and
// ends.
package child

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"beamconnect/coupling"
	"beamconnect/fmuexport"
	"beamconnect/internal/mailbox"
	"beamconnect/ports"
	"beamconnect/runsetup"
)

// endWait bounds how long the child outlives the master's process: what
// ending the run takes (neutral controls, the recording closed) is
// milliseconds; the shim waits as long for a child it asked to end.
const endWait = 10 * time.Second

// progressEvery is how often a call that waits (for BeamNG's first
// message, a step's messages) hands the master its log lines.
const progressEvery = 250 * time.Millisecond

// beatEvery is how often a call that takes long beats (mailbox.Box.Beat):
// the shim fails a call that shows no sign of life for the parameter
// processTimeout (at least a second), and tells the master the coupling's
// process stopped or hung, not BeamNG.
const beatEvery = 100 * time.Millisecond

// Main is the child process: it serves the shim until the FMU is freed or
// the master's process ends, and returns the exit status.
func Main(stdin io.Reader, stderr io.Writer) int {
	ignoreTerminal()
	box, err := mailbox.FromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "beamconnect fmu-export-child: %v: this command is beamconnect's, for an FMU that 'beamconnect fmu export' made\n", err)
		return 2
	}
	s := newServer(len(box.Answer()), nil)
	s.beat, s.superseded = box.Beat, box.Superseded
	gone := make(chan struct{})
	var once sync.Once
	// The master's process gone: the loop's wait for a request, or a
	// call's wait, ends, and the run is ended below. (The FMU freed closes
	// the child's stdin too: this Close may come after the loop's Release,
	// which the box allows.)
	parentGone := func() {
		once.Do(func() {
			close(gone)
			box.Close()
			// Nobody is left to wait for this process: should ending the
			// run hang (a recording's disk stuck), it ends anyway.
			time.AfterFunc(endWait, func() {
				fmt.Fprintf(stderr, "beamconnect fmu-export-child: the master's process ended %v ago and the coupling has not: ending it\n", endWait)
				os.Exit(1)
			})
		})
	}
	go func() {
		io.Copy(io.Discard, stdin) // the shim never writes: this ends when its process does
		parentGone()
	}()
	watchParent(parentGone)
	s.gone = gone
	for {
		p, err := box.Next(time.Time{})
		if err != nil {
			break // the FMU was freed, or the master's process ended
		}
		a := s.handle(p)
		if a == nil {
			continue // the shim gave up on the call: its next request waits
		}
		out := box.Answer()
		if len(a) > len(out) {
			a = a[:len(out)] // not expected: answers are sized to fit
		}
		if box.Reply(copy(out, a)) != nil {
			break
		}
	}
	select {
	case <-gone:
		s.masterGone()
	default:
		s.endRun(errors.New("the FMU was freed"), false)
	}
	box.Close()
	box.Release()
	return 0
}

// server is one instance's state.
type server struct {
	room   int             // an answer's most bytes
	listen coupling.Listen // how the coupling binds (nil: UDP)
	logs   *logQueue
	log    *slog.Logger
	gone   <-chan struct{}
	beat   func() // shows the shim the call goes on (the box's Beat)
	// superseded says the shim gave up on the call in hand (an interrupt,
	// a wait it bounded) and asked something else: the call is dropped.
	superseded func() bool

	opened    bool
	major     int
	resources string
	plan      *ports.Plan
	iface     *fmuexport.Interface
	outs, ins []int // the outputs' and inputs' value references

	mu  sync.Mutex // run: also ended by masterGone, from another goroutine
	run *run
	op  func(wait time.Duration) (done bool, a []byte) // a call still going on

	// handover is what a run the master reset left of BeamNG, which runs
	// on: the next initialization goes on from there (coupling.Handover).
	handover []*coupling.Handover

	exp    experiment // the master's start and stop time
	n      int64      // the index of the message at the FMU's time
	failed bool       // a call failed for good: no more steps

	step   stepRequest
	values []float64 // the master's inputs of the step (handed to the bridge)

	// Buffers reused from call to call: an answer is copied into the
	// mailbox before the next request is read.
	ans, payload []byte
	timer        *time.Timer
}

func newServer(room int, listen coupling.Listen) *server {
	q := &logQueue{}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &server{room: room, listen: listen, logs: q, log: slog.New(&handler{q: q}), timer: t, beat: func() {},
		superseded: func() bool { return false }}
}

// answer builds an answer: result, the log lines that fit, then payload.
// It is valid until the next request is handled.
func (s *server) answer(result uint8, payload []byte) []byte {
	w := writer{b: s.ans[:0]}
	w.u8(result)
	s.logs.take(&w, s.room-len(payload)-16)
	s.ans = append(w.b, payload...)
	return s.ans
}

// wait arms the server's timer for d; the caller stops it.
func (s *server) wait(d time.Duration) <-chan time.Time {
	s.timer.Reset(d)
	return s.timer.C
}

// fail answers an error, said through the logger.
func (s *server) fail(format string, args ...any) []byte {
	s.logs.say(statusError, format, args...)
	return s.answer(statusError, nil)
}

func (s *server) handle(p []byte) []byte {
	if len(p) == 0 {
		return s.fail("an empty request")
	}
	typ, body := p[0], p[1:]
	if !s.opened && typ != reqOpen {
		return s.fail("the FMU was not opened first")
	}
	if s.op != nil && typ != reqContinue {
		s.op = nil // the shim gave up on the call in progress
	}
	switch typ {
	case reqOpen:
		return s.open(body)
	case reqInit:
		return s.initialize(body)
	case reqStep:
		return s.doStep(body)
	case reqList:
		return s.list(body)
	case reqContinue:
		if s.op == nil {
			return s.fail("asked to go on with no call in progress")
		}
		return s.progress()
	case reqTerminate:
		return s.terminate()
	case reqReset:
		s.beating(func() { s.endRun(errors.New("the master reset the FMU"), true) })
		s.failed, s.n, s.exp = false, 0, experiment{}
		return s.answer(statusOK, nil)
	}
	return s.fail("a request of an unknown type %q", typ)
}

// open loads the config the FMU carries and lists its variables.
func (s *server) open(body []byte) []byte {
	o, err := decodeOpen(body)
	switch {
	case err != nil:
		return s.fail("%v", err)
	case o.Protocol != fmuexport.Protocol:
		return s.fail("the FMU's library speaks protocol %d, this beamconnect (%s) speaks %d: the FMU carries a beamconnect of another version than its library; export it again",
			o.Protocol, runsetup.Version(), fmuexport.Protocol)
	case o.Major != 2 && o.Major != 3:
		return s.fail("FMI %d: expected 2 or 3", o.Major)
	}
	plan, iface, err := fmuexport.Load(o.Resources)
	if err != nil {
		return s.fail("the config the FMU carries in %s: %v", o.Resources, err)
	}
	if o.Token != iface.Token {
		return s.fail("the master instantiated the FMU with token %q, but its config makes %q: the FMU's modelDescription.xml and its resources do not belong together; export it again",
			o.Token, iface.Token)
	}
	s.opened, s.major, s.resources, s.plan, s.iface = true, int(o.Major), o.Resources, plan, iface
	s.outs, s.ins = s.outs[:0], s.ins[:0]
	for i, v := range iface.Vars {
		switch v.Causality {
		case fmuexport.Output:
			s.outs = append(s.outs, i)
		case fmuexport.Input:
			s.ins = append(s.ins, i)
		}
	}
	s.values = make([]float64, len(s.ins))
	runsetup.Announce(s.log, "beamconnect couples BeamNG.tech for the master", plan, "outputs", len(s.outs), "inputs", len(s.ins),
		"pid", os.Getpid())
	// The value reference of processTimeout, which bounds the shim's
	// waits, then the first part of the list.
	vr := uint32(len(iface.Vars))
	for i, v := range iface.Vars {
		if v.Param == fmuexport.ProcessTimeout {
			vr = uint32(i)
		}
	}
	w := writer{b: s.payload[:0]}
	w.u32(vr)
	w.b = append(w.b, s.listing(0)...)
	s.payload = w.b
	return s.answer(statusOK, w.b)
}

// listing is a part of the list of variables, from the value reference
// from: as many as fit in half an answer (the rest is room for log
// lines), so that a list of any length is read in parts.
func (s *server) listing(from uint32) []byte {
	w := writer{}
	n := uint32(len(s.iface.Vars))
	from = min(from, n)
	w.u32(n)
	w.u32(from)
	at := len(w.b)
	w.u32(0)
	count := uint32(0)
	for i := from; i < n; i++ {
		v := &s.iface.Vars[i]
		size := 4 + 1 + 1 + 4 + len(v.Name) + 8
		if v.Type == fmuexport.String {
			size += 4 + len(v.Start) - 8
		}
		if count > 0 && len(w.b)+size > s.room/2 {
			break
		}
		w.u32(i)
		w.u8(uint8(v.Type))
		w.u8(uint8(v.Causality))
		w.str(v.Name)
		if v.Type == fmuexport.String {
			w.str(v.Start)
		} else {
			w.f64(startValue(v.Start))
		}
		count++
	}
	binary.LittleEndian.PutUint32(w.b[at:], count)
	return w.b
}

// list answers a request for the variables from a value reference on.
func (s *server) list(body []byte) []byte {
	r := reader{b: body}
	from := r.u32()
	if err := r.done("list"); err != nil {
		return s.fail("%v", err)
	}
	return s.answer(statusOK, s.listing(from))
}

// startValue reads a start value as the description writes it.
func startValue(s string) float64 {
	switch s {
	case "INF":
		return math.Inf(1)
	case "-INF":
		return math.Inf(-1)
	case "NaN":
		return math.NaN()
	}
	var v float64
	fmt.Sscan(s, &v)
	return v
}

// progress waits on the call in progress: its answer once it is done,
// or, while it goes on, the log lines so far every progressEvery; it
// beats every beatEvery meanwhile. nil: the shim gave up on the call
// (it is dropped when the next request is handled); no answer goes.
func (s *server) progress() []byte {
	since := time.Now()
	for {
		done, a := s.op(beatEvery)
		if done {
			s.op = nil
			return a
		}
		if s.superseded() {
			return nil
		}
		s.beat()
		if s.logs.pending() && time.Since(since) >= progressEvery {
			return s.answer(resultPending, nil)
		}
	}
}

// beating runs f, which may take a while (ending a run: its sockets, the
// recording closed), beating every beatEvery until it returns, for
// endWait at most: an end that hangs longer (a recording's disk stuck)
// stops the beats, and the shim's call fails after processTimeout,
// naming the coupling's process.
func (s *server) beating(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	tick := time.NewTicker(beatEvery)
	defer tick.Stop()
	limit := time.NewTimer(endWait)
	defer limit.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			s.beat()
		case <-limit.C:
			<-done
			return
		}
	}
}

// outputs is the payload of an answer to initialize and to a step: the
// FMU's time and its outputs.
func (s *server) outputs(b *bridge) []byte {
	w := writer{b: s.payload[:0]}
	w.f64(s.exp.time(s.n, s.plan.Period))
	w.u32(uint32(len(s.outs)))
	for i := range s.outs {
		w.f64(b.out[i])
	}
	s.payload = w.b
	return w.b
}

// masterGone ends the run when the master's process is gone: BeamNG gets
// neutral controls and the recording is closed, as after a terminate.
func (s *server) masterGone() {
	s.endRun(errors.New("the master's process ended"), false)
}

// addr is a parameter's address and port.
func addr(ip string, port float64, ipName, portName string) (netip.AddrPort, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("parameter %s %q: expected an IPv4 address such as 127.0.0.1", ipName, ip)
	}
	if port != math.Trunc(port) || port < 0 || port > 65535 {
		return netip.AddrPort{}, fmt.Errorf("parameter %s %v: expected a port from 0 to 65535", portName, port)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// openRecording opens the recording parameter recordFile names, as
// `beamconnect run --record` does.
func openRecording(path string, plan *ports.Plan, log *slog.Logger) (*coupling.Recorder, func(), error) {
	rec, done, err := runsetup.Record(path, "", false, plan, log)
	if err != nil {
		return nil, nil, fmt.Errorf("parameter recordFile: %w", err)
	}
	return rec, done, nil
}

// ctx is a context for a run.
func runContext() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

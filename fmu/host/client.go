package host

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/fmu/fmi"
	"beamconnect/internal/lines"
	"beamconnect/internal/mailbox"
	"beamconnect/internal/proctree"
)

// Client is the coupling's end of one fmu-host process.
type Client struct {
	tree               *proctree.Tree
	stdin              io.WriteCloser
	nIn, nOut, nParams int
	req                []byte // the request frame Send builds; only Send touches it

	outstanding atomic.Int64 // unix ns the unanswered request was sent; 0: none
	maxAge      atomic.Int64 // ns: the longest a request waited for its answer
	unseen      atomic.Int64 // answers a newer one replaced before Take gave them

	mu      sync.Mutex
	answer  Answer
	outs    []float64
	has     bool
	answers chan struct{} // signalled when an answer arrives (pipes)

	// Steps through shared memory (shm; otherwise through the pipes).
	// The coupling's goroutine asks and awaits under boxMu; once the host
	// has ended, its exit's goroutine releases the memory under it too
	// (box nil). timer is the pipe mode's wait's.
	shm       bool
	boxMu     sync.Mutex
	box       *mailbox.Box
	boxOuts   []float64
	boxAnswer Answer
	timer     *time.Timer

	done     chan struct{} // closed once the process has exited
	exit     error
	tailMu   sync.Mutex
	tail     []string // the last lines of its stderr
	crash    string   // the first line of a crash report on its stderr
	closeOne sync.Once
}

// drainAfterExit bounds how long the host's stdout and stderr are read
// after it has exited: its last words and crash report come at once;
// only a helper that escaped its process group (and so was not killed
// with it) could hold the pipes open longer.
const drainAfterExit = time.Second

// Start runs argv (the fmu-host command) in dir, opens the FMU of setup in
// it and waits up to grace for it to be ready. Every line the host writes
// to stderr (the FMU's log and what it prints, a crash report) is passed
// to logLine.
//
// The host and everything it starts (an FMU may start helper processes)
// form one process tree (package proctree): the terminal's Ctrl-C passes
// it by, it ends when beamconnect ends however that happens, and what the
// host leaves running when it exits is killed then.
func Start(argv []string, dir string, setup fmi.Setup, grace time.Duration, logLine func(string)) (*Client, error) {
	return StartWith(argv, dir, setup, grace, logLine, Handoff{})
}

// Handoff says how steps pass between the coupling and the host: through
// shared memory (unless Pipes), each side spinning while that pays, then
// asleep (package mailbox); with BusyPoll both sides spin until the other
// has written, never asleep (the coupling's --busy-poll: a core each).
type Handoff struct {
	BusyPoll bool
	Pipes    bool // the steps through the pipes, as where there is no shared memory
}

// busyPollEnv tells the host to busy-poll.
const busyPollEnv = "BEAMCONNECT_FMU_HOST_BUSY_POLL"

// mailbox sizes: a step request (its time, parameter changes and inputs)
// and an answer (outputs and an error text, cut to fit).
const (
	maxRequest = 64 << 10
	maxErrText = 4 << 10
)

// StartWith is Start with the steps' handoff as h says.
func StartWith(argv []string, dir string, setup fmi.Setup, grace time.Duration, logLine func(string), h Handoff) (*Client, error) {
	open, err := json.Marshal(setup)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	// Steps go through shared memory where there is some; the pipes stay
	// for open, ready and quit (and carry the steps where there is none).
	var box *mailbox.Box
	if !h.Pipes {
		if box, err = mailbox.Create(maxRequest, 80+8*setup.Values()+maxErrText); err == nil {
			box.Attach(cmd)
			if h.BusyPoll {
				box.BusyPoll()
				cmd.Env = append(cmd.Env, busyPollEnv+"=1")
			}
		} else {
			box = nil
		}
	}
	// The pipes are ours, not exec.Cmd's: its Wait would close its own
	// when the host exits, cutting its last words short, and would wait
	// for a helper process that holds them.
	var p [3][2]*os.File // stdin, stdout, stderr: read end, write end
	for i := range p {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range p[:i] {
				f[0].Close()
				f[1].Close()
			}
			return nil, fmt.Errorf("starting the FMU host: %w", err)
		}
		p[i] = [2]*os.File{r, w}
	}
	inW, outR, errR := p[0][1], p[1][0], p[2][0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p[0][0], p[1][1], p[2][1]
	tree, err := proctree.StartOurs(cmd)
	p[0][0].Close() // the host has them now
	p[1][1].Close()
	p[2][1].Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		if box != nil {
			box.Close()
			box.Release()
		}
		return nil, fmt.Errorf("starting the FMU host %q: %w", strings.Join(argv, " "), err)
	}
	c := &Client{
		tree: tree, stdin: inW, nIn: fmi.Count(setup.Inputs), nOut: setup.Values(), nParams: fmi.Count(setup.Params),
		answers: make(chan struct{}, 1), done: make(chan struct{}),
		shm: box != nil, box: box, timer: time.NewTimer(time.Hour),
	}
	c.outs, c.boxOuts = make([]float64, c.nOut), make([]float64, c.nOut)
	c.timer.Stop()
	c.req = make([]byte, 0, 5+25+21*len(setup.Params)+8*c.nParams+8*c.nIn)
	stderrDone := make(chan struct{})
	go c.readStderr(errR, logLine, stderrDone)
	ready := make(chan error, 1)
	go c.read(bufio.NewReaderSize(outR, 64<<10), ready)
	go func() {
		// The host exited (a crash, an exit of its FMU, a kill): Wait has
		// ended what it left running, so its pipes close; the crash report
		// on stderr is read to its end before anyone is told.
		c.exit = tree.Wait()
		select {
		case <-stderrDone:
		case <-time.After(drainAfterExit):
		}
		errR.Close()
		outR.Close()
		<-stderrDone
		if c.shm {
			c.box.Close() // a wait for its answer ends now; then the memory goes
			c.boxMu.Lock()
			c.box.Release()
			c.box = nil
			c.boxMu.Unlock()
		}
		close(c.done)
	}()
	if _, err := writeFrame(inW, nil, frameOpen, open); err != nil {
		c.Kill()
		<-c.done
		return nil, fmt.Errorf("the FMU host ended before it was ready: %s", c.Why())
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			c.Kill()
			<-c.done
			return nil, err
		}
	case <-c.done:
		return nil, fmt.Errorf("the FMU host ended before it was ready: %s", c.Why())
	case <-timer.C:
		c.Kill()
		<-c.done
		return nil, fmt.Errorf("the FMU host was not ready within %v (loading and instantiating the FMU)", grace)
	}
	return c, nil
}

// maxStderrLine bounds a line of the host's stderr: an FMU may log or
// print anything; a longer line is cut, and said to be.
const maxStderrLine = 16 << 10

func (c *Client) readStderr(r io.Reader, logLine func(string), done chan struct{}) {
	defer close(done)
	lr := lines.NewReader(bufio.NewReaderSize(r, 4096), maxStderrLine)
	crashAt, dropped := -1, 0
	for n := 0; ; n++ {
		b, long, err := lr.Next()
		if err != nil {
			break
		}
		line := strings.TrimRight(string(b), "\r\n")
		if long > 0 {
			line = fmt.Sprintf("%s… (a line of %d bytes, cut to its first %d)", line, long, len(b))
		}
		if crashAt < 0 && isCrash(line) {
			crashAt = n
			c.tailMu.Lock()
			c.crash = line
			c.tailMu.Unlock()
		}
		c.tailMu.Lock()
		c.tail = append(c.tail, line)
		if len(c.tail) > 16 {
			c.tail = c.tail[1:]
		}
		c.tailMu.Unlock()
		// A crash report is the signal and where it hit, then a dump of
		// the host's goroutines that says nothing about the FMU.
		if crashAt >= 0 && n > crashAt+2 {
			dropped++
			continue
		}
		if logLine != nil {
			logLine(line)
		}
	}
	if dropped > 0 && logLine != nil {
		logLine(fmt.Sprintf("(%d more lines of the host's crash report not shown)", dropped))
	}
}

// isCrash reports whether a line of the host's stderr begins the Go
// runtime's report of a fatal signal or error.
func isCrash(line string) bool {
	return strings.HasPrefix(line, "SIG") || strings.HasPrefix(line, "fatal error") || strings.HasPrefix(line, "panic:")
}

// read takes the ready frame, then every answer, until the host's stdout
// closes.
func (c *Client) read(r *bufio.Reader, ready chan<- error) {
	var head [5]byte
	typ, p, err := readFrame(r, &head, nil)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed):
		ready <- fmt.Errorf("the FMU host ended before it was ready: %s", c.waitWhy())
		return
	case err != nil || typ != frameReady:
		// Not a frame: say what came instead (text, mostly).
		more := p
		if err != nil {
			more, _ = r.Peek(r.Buffered())
		}
		what := append(head[:], more[:min(len(more), 60)]...)
		ready <- fmt.Errorf("the FMU host's answer to open is not a frame of its protocol: it wrote %q…; something in it writes to its standard output", what)
		return
	case len(p) > 0:
		ready <- errors.New(string(p))
		return
	}
	ready <- nil
	outs := make([]float64, c.nOut)
	var a Answer
	for {
		typ, p, err = readFrame(r, &head, p)
		if err != nil {
			return // it ended: Done tells
		}
		if typ != frameAnswer || decodeAnswer(p, outs, &a) != nil {
			c.Kill() // not speaking the protocol: nothing it says can be trusted
			return
		}
		now := time.Now().UnixNano()
		c.mu.Lock()
		if c.has {
			c.unseen.Add(1)
		}
		c.answer = a
		copy(c.outs, outs)
		c.has = true
		if asked := c.outstanding.Swap(0); asked != 0 {
			c.observeAge(now - asked)
		}
		c.mu.Unlock()
		select {
		case c.answers <- struct{}{}:
		default:
		}
	}
}

// waitWhy is Why once the process has ended (briefly waited for).
func (c *Client) waitWhy() string {
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
	}
	return c.Why()
}

// Send hands the host the step request seq (a new number for every
// request, which its answer carries), unless one is still unanswered:
// then it returns false and the data is dropped (the next request carries
// newer). reset asks the host to reset the FMU first (BeamNG started its
// coupling again); tune and tuneValue are parameter changes to apply then.
// An answer to the request before, which came after its Wait gave up, may
// be collected on the way: Take gives it, with its own seq. It allocates
// nothing.
func (c *Client) Send(seq uint64, t float64, reset bool, tune []fmi.Var, tuneValue []float64, inputs []float64) bool {
	if c.shm {
		c.boxMu.Lock()
		defer c.boxMu.Unlock()
		if c.box == nil || c.outstanding.Load() != 0 && !c.collect(time.Now()) {
			return false
		}
		req := c.box.Request()
		b := appendStep(req[:0], seq, t, reset, tune, tuneValue, inputs)
		if len(b) > 0 && &b[0] != &req[0] {
			return false // more than a request can hold: not sent (Validate bounds the variables)
		}
		c.outstanding.Store(time.Now().UnixNano())
		return c.box.Ask(len(b)) == nil
	}
	if c.outstanding.Load() != 0 {
		return false
	}
	b := append(c.req[:0], frameStep, 0, 0, 0, 0)
	b = appendStep(b, seq, t, reset, tune, tuneValue, inputs)
	binary.LittleEndian.PutUint32(b[1:], uint32(len(b)-5))
	c.req = b
	c.outstanding.Store(time.Now().UnixNano())
	if _, err := c.stdin.Write(b); err != nil {
		return false // it is gone; Done tells
	}
	return true
}

// Wait waits until the request sent has its answer (Take then gives it),
// until the deadline, or until the host ends; it reports whether the
// answer came. The coupling's goroutine calls it, as it calls Send.
func (c *Client) Wait(deadline time.Time) bool {
	if c.shm {
		c.boxMu.Lock()
		defer c.boxMu.Unlock()
		return c.box != nil && c.collect(deadline)
	}
	c.timer.Reset(time.Until(deadline))
	defer c.timer.Stop()
	for {
		c.mu.Lock()
		has := c.has
		c.mu.Unlock()
		if has {
			return true
		}
		select {
		case <-c.answers:
		case <-c.timer.C:
			return false
		case <-c.done:
			return false
		}
	}
}

// collect takes the answer to the outstanding request from the mailbox,
// waiting for it until the deadline (now: only if it is there already).
// Under boxMu, with the box there.
func (c *Client) collect(deadline time.Time) bool {
	if c.outstanding.Load() == 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.has
	}
	p, err := c.box.Await(deadline)
	switch {
	case errors.Is(err, mailbox.ErrTorn):
		c.Kill() // it wrote over its own answer: nothing it says can be trusted
		return false
	case err != nil:
		return false
	}
	if decodeAnswer(p, c.boxOuts, &c.boxAnswer) != nil {
		c.Kill()
		return false
	}
	now := time.Now().UnixNano()
	c.mu.Lock()
	if c.has {
		c.unseen.Add(1)
	}
	c.answer = c.boxAnswer
	copy(c.outs, c.boxOuts)
	c.has = true
	c.mu.Unlock()
	if asked := c.outstanding.Swap(0); asked != 0 {
		c.observeAge(now - asked)
	}
	return true
}

// observeAge keeps the longest a request waited for its answer.
func (c *Client) observeAge(age int64) {
	for {
		old := c.maxAge.Load()
		if age <= old || c.maxAge.CompareAndSwap(old, age) {
			return
		}
	}
}

// Outstanding is when the unanswered request was sent (unix ns), 0 when
// none is.
func (c *Client) Outstanding() int64 { return c.outstanding.Load() }

// Take moves the newest answer into a and its outputs into outs: one
// that came after its Wait gave up too. a.Seq says which request it
// answers: the caller uses it for that request only.
func (c *Client) Take(outs []float64, a *Answer) bool {
	if c.shm && c.outstanding.Load() != 0 {
		c.boxMu.Lock()
		if c.box != nil {
			c.collect(time.Now())
		}
		c.boxMu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.has {
		return false
	}
	*a = c.answer
	copy(outs, c.outs)
	c.has = false
	return true
}

// Unseen counts answers that a newer one replaced before Take gave them:
// an answer that came after its Wait gave up, collected on the way to the
// next request, then replaced by that request's. They are never used.
func (c *Client) Unseen() int64 { return c.unseen.Load() }

// MaxAge is the longest a request waited for its answer.
func (c *Client) MaxAge() time.Duration { return time.Duration(c.maxAge.Load()) }

// Done is closed once the host process has exited.
func (c *Client) Done() <-chan struct{} { return c.done }

// Why says how the process ended: its crash report or last words on
// stderr, and its exit status.
func (c *Client) Why() string {
	status := "still running"
	select {
	case <-c.done:
		status = "exited"
		if c.exit != nil {
			status = c.exit.Error()
		}
	default:
	}
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	if c.crash != "" {
		return c.crash + " (" + status + ")"
	}
	for _, l := range c.tail {
		if strings.HasPrefix(l, "fmu-host:") {
			return l + " (" + status + ")"
		}
	}
	return status
}

// Kill ends the host at once (a hung FMU), with everything it started.
func (c *Client) Kill() { c.tree.Kill() }

// Close asks the host to terminate the FMU and exit, and kills it if it
// has not within 2 s. Call it from the goroutine that steps.
func (c *Client) Close() {
	c.closeOne.Do(func() {
		writeFrame(c.stdin, nil, frameQuit, nil)
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
			c.Kill()
			<-c.done
		}
	})
}

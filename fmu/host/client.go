package host

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/fmu/fmi"
)

// Client is the coupling's end of one fmu-host process.
type Client struct {
	cmd                *exec.Cmd
	stdin              io.WriteCloser
	nIn, nOut, nParams int
	req                []byte // the request frame Send builds; only Send touches it

	outstanding atomic.Int64 // unix ns the unanswered request was sent; 0: none
	maxAge      atomic.Int64 // ns: the longest a request waited for its answer

	mu      sync.Mutex
	answer  Answer
	outs    []float64
	has     bool
	answers chan struct{} // signalled when an answer arrives

	done     chan struct{} // closed once the process has exited
	exit     error
	tailMu   sync.Mutex
	tail     []string // the last lines of its stderr
	crash    string   // the first line of a crash report on its stderr
	closeOne sync.Once
}

// Start runs argv (the fmu-host command) in dir, opens the FMU of setup in
// it and waits up to grace for it to be ready. Every line the host writes
// to stderr (the FMU's log, a crash report) is passed to logLine.
func Start(argv []string, dir string, setup fmi.Setup, grace time.Duration, logLine func(string)) (*Client, error) {
	open, err := json.Marshal(setup)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the FMU host %q: %w", strings.Join(argv, " "), err)
	}
	c := &Client{
		cmd: cmd, stdin: stdin, nIn: len(setup.Inputs), nOut: len(setup.Outputs), nParams: len(setup.Params),
		outs: make([]float64, len(setup.Outputs)), answers: make(chan struct{}, 1), done: make(chan struct{}),
	}
	c.req = make([]byte, 0, 5+16+13*c.nParams+8*c.nIn)
	stderrDone := make(chan struct{})
	go c.readStderr(stderr, logLine, stderrDone)
	go func() {
		<-stderrDone // Wait closes the pipe: read it to the end first
		c.exit = cmd.Wait()
		close(c.done)
	}()
	ready := make(chan error, 1)
	go c.read(bufio.NewReaderSize(stdout, 64<<10), ready)
	if _, err := writeFrame(stdin, nil, frameOpen, open); err != nil {
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

func (c *Client) readStderr(r io.Reader, logLine func(string), done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	crashAt, dropped := -1, 0
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
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
	io.Copy(io.Discard, r)
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
	case err != nil:
		ready <- fmt.Errorf("the FMU host ended before it was ready: %s", c.waitWhy())
		return
	case typ != frameReady:
		ready <- fmt.Errorf("the FMU host answered frame %q to open", typ)
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
		c.answer = a
		copy(c.outs, outs)
		c.has = true
		if asked := c.outstanding.Swap(0); asked != 0 {
			for age := now - asked; ; {
				old := c.maxAge.Load()
				if age <= old || c.maxAge.CompareAndSwap(old, age) {
					break
				}
			}
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

// Send writes a step request, unless one is still unanswered: then it
// returns false and the data is dropped (the next request carries newer).
// tune and tuneValue are parameter changes to apply first. It allocates
// nothing.
func (c *Client) Send(t float64, tune []fmi.Var, tuneValue []float64, inputs []float64) bool {
	if c.outstanding.Load() != 0 {
		return false
	}
	b := append(c.req[:0], frameStep, 0, 0, 0, 0)
	b = putF64(b, t)
	b = putU32(b, uint32(len(tune)))
	for i, v := range tune {
		b = putF64(append(putU32(b, v.VR), byte(v.Kind)), tuneValue[i])
	}
	for _, v := range inputs {
		b = putF64(b, v)
	}
	binary.LittleEndian.PutUint32(b[1:], uint32(len(b)-5))
	c.req = b
	c.outstanding.Store(time.Now().UnixNano())
	if _, err := c.stdin.Write(b); err != nil {
		return false // it is gone; Done tells
	}
	return true
}

// Outstanding is when the unanswered request was sent (unix ns), 0 when
// none is.
func (c *Client) Outstanding() int64 { return c.outstanding.Load() }

// Answers is signalled when an answer arrives.
func (c *Client) Answers() <-chan struct{} { return c.answers }

// Take moves the newest answer into a and its outputs into outs.
func (c *Client) Take(outs []float64, a *Answer) bool {
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

// Kill ends the host at once (a hung FMU).
func (c *Client) Kill() {
	if c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
}

// Close asks the host to terminate the FMU and exit, and kills it if it
// has not within 2 s.
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

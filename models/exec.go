package models

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"beamconnect/beamng"
	"beamconnect/ports"
)

// ExecProtocol documents the line protocol of the "exec" model.
const ExecProtocol = `The exec model runs modelParams.command (a string split at spaces, or an
array of strings) in the config file's directory and talks to it one line
per step over stdin and stdout, numbers separated by spaces:

  first, once:  "# columns: t status <outputs…> | directive <inputs…>"
                (the names of what follows, for the program's information)
  each step:    beamconnect writes  "t status o1 o2 …"   (local time in s,
                connection status 0–5, then every output port element in
                port order)
                the program answers "d i1 i2 …"          (the connection
                directive, then every input port element in port order)

An answer must come within modelParams.deadlineMs (default: 80 % of the
coupling period). A late or missing answer does not hold the coupling up:
the inputs keep their last values and a counter says so; a late answer is
used at the next step. "nan" in an answer sends NaN, which BeamNG reads as
"keep the previous value". Lines starting with '#' are ignored both ways.
What the program writes to stderr goes to beamconnect's log. After a config
reload a new "# columns:" line comes before the next step's line, and the
answers must follow the new columns from then on.`

// Exec is a model in an external process (see ExecProtocol).
type Exec struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	requests chan []byte
	answers  chan []float64
	deadline time.Duration
	timer    *time.Timer
	width    atomic.Int64           // numbers expected in an answer
	header   atomic.Pointer[string] // a new "# columns:" line to send first, after a reload
	last     []float64
	missed   atomic.Int64
	bad      atomic.Int64
	done     chan struct{}
	exitErr  atomic.Value
}

// NewExec starts the program of params["command"].
func NewExec(params Params, plan *ports.Plan) (*Exec, error) {
	var argv []string
	switch c := params["command"].(type) {
	case string:
		argv = strings.Fields(c)
	case []string:
		argv = c
	}
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
	cmd := exec.Command(argv[0], argv[1:]...)
	if plan.Source != "" {
		cmd.Dir = filepath.Dir(plan.Source)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("model exec: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("model exec: %w", err)
	}
	cmd.Stderr = os.Stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("model exec: starting %q: %w", strings.Join(argv, " "), err)
	}
	width := 0
	for _, p := range plan.Inputs {
		width += p.Width
	}
	m := &Exec{
		cmd: cmd, stdin: stdin,
		requests: make(chan []byte, 1), answers: make(chan []float64, 1),
		deadline: time.Duration(deadline * float64(time.Millisecond)),
		timer:    time.NewTimer(time.Hour),
		done:     make(chan struct{}),
	}
	m.width.Store(int64(width))
	m.timer.Stop()
	go m.write(columns(plan))
	go m.read(stdout)
	go func() {
		err := cmd.Wait()
		if err != nil {
			m.exitErr.Store(err)
		}
		close(m.done)
	}()
	return m, nil
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
						b.WriteString(f.Meta.String())
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

// write feeds requests to the program; only the newest waiting request is
// kept, so a program that stops reading never blocks the coupling.
func (m *Exec) write(header string) {
	w := bufio.NewWriter(m.stdin)
	w.WriteString(header)
	w.Flush()
	for req := range m.requests {
		if _, err := w.Write(req); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// read parses answers; only the newest unread answer is kept.
func (m *Exec) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != int(m.width.Load()) {
			m.bad.Add(1)
			continue
		}
		vals := make([]float64, len(fields))
		ok := true
		for i, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				ok = false
				break
			}
			vals[i] = v
		}
		if !ok {
			m.bad.Add(1)
			continue
		}
		select {
		case <-m.answers: // drop an older unread answer
		default:
		}
		m.answers <- vals
	}
}

// Step sends the outputs and waits up to the deadline for the inputs.
func (m *Exec) Step(t float64, out, in [][]float64) {
	var req []byte
	if h := m.header.Swap(nil); h != nil {
		req = append(req, *h...)
	}
	req = strconv.AppendFloat(req, t, 'g', -1, 64)
	for _, p := range out {
		for _, v := range p {
			req = append(req, ' ')
			req = strconv.AppendFloat(req, v, 'g', -1, 64)
		}
	}
	req = append(req, '\n')
	select {
	case <-m.requests: // the program has not taken the previous one: replace it
	default:
	}
	m.requests <- req

	var vals []float64
	select {
	case vals = <-m.answers:
	default:
		m.timer.Reset(m.deadline)
		select {
		case vals = <-m.answers:
			m.timer.Stop()
		case <-m.timer.C:
		case <-m.done:
			m.timer.Stop()
		}
	}
	if vals == nil {
		m.missed.Add(1)
		return // inputs keep their last values
	}
	i := 0
	for _, p := range in {
		for k := range p {
			if i < len(vals) {
				p[k] = vals[i]
			}
			i++
		}
	}
}

// Rebind tells the program about a reloaded plan: the next request starts
// with a new "# columns:" line, and answers must have the new width. The
// program keeps running.
func (m *Exec) Rebind(plan *ports.Plan) error {
	width := 0
	for _, p := range plan.Inputs {
		width += p.Width
	}
	h := columns(plan)
	m.header.Store(&h)
	m.width.Store(int64(width))
	return nil
}

// Missed counts steps that got no answer in time; Bad counts answers that
// did not parse or had the wrong count of numbers.
func (m *Exec) Missed() int64 { return m.missed.Load() }
func (m *Exec) Bad() int64    { return m.bad.Load() }

// Close ends the program: its stdin closes, it gets 2 s to exit, then it
// is killed with everything it started.
func (m *Exec) Close() error {
	close(m.requests)
	m.stdin.Close()
	select {
	case <-m.done:
	case <-time.After(2 * time.Second):
		killGroup(m.cmd)
		<-m.done
	}
	if err, _ := m.exitErr.Load().(error); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == -1 {
			return nil // killed by us
		}
		return fmt.Errorf("model exec: %w", err)
	}
	return nil
}

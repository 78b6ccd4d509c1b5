package host

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"beamconnect/fmu/fmi"
	"beamconnect/internal/mailbox"
	"beamconnect/internal/proctree"
)

// Main is the fmu-host process: it serves the coupling on stdin and
// stdout until told to quit or its stdin closes, and returns the exit
// status. A crash of the FMU's code ends the process with the runtime's
// account of the signal on stderr, which the Client trims to its first
// lines.
//
// stdout must be the program's own standard output (os.Stdout, which
// package stdout has made a private copy of fd 1): loading the FMU points
// fd 1 at stderr, so that what the FMU prints reaches the log instead of
// the frames. The terminal's signals pass the host by, and it ends, with
// any process its FMU started, when its parent ends (package proctree).
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	proctree.EndWithParent()
	box, err := mailbox.FromEnv()
	switch {
	case errors.Is(err, mailbox.ErrNoBox):
		box = nil // steps come through stdin
	case err != nil:
		fmt.Fprintf(stderr, "fmu-host: %v\n", err)
		return 1
	}
	if box != nil && os.Getenv(busyPollEnv) != "" {
		box.BusyPoll()
	}
	if err := Serve(stdin, stdout, stderr, box); err != nil {
		fmt.Fprintf(stderr, "fmu-host: %v\n", err)
		return 1
	}
	return 0
}

// Serve runs one FMU for the coupling at the other end of r and w. The
// FMU's log lines go to logw. With a mailbox (box not nil) the steps come
// through it; r then only says when to quit.
func Serve(r io.Reader, w io.Writer, logw io.Writer, box *mailbox.Box) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var head [5]byte
	typ, p, err := readFrame(br, &head, nil)
	if err != nil {
		return fmt.Errorf("reading the open request: %w", err)
	}
	if typ != frameOpen {
		return fmt.Errorf("expected an open request first, got frame %q", typ)
	}
	var setup fmi.Setup
	if err := json.Unmarshal(p, &setup); err != nil {
		return fmt.Errorf("open request: %w", err)
	}
	logs := bufio.NewWriter(logw)
	log := func(s fmi.Status, category, msg string) {
		fmt.Fprintf(logs, "%s %s: %s\n", s.Name(setup.Major), category, msg)
		logs.Flush()
	}
	st, err := fmi.NewStepper(setup, log)
	var out []byte
	if err != nil {
		writeFrame(w, out, frameReady, []byte(err.Error()))
		return err
	}
	defer st.Close()
	if out, err = writeFrame(w, out, frameReady, nil); err != nil {
		return err
	}
	var (
		step    Step
		outputs = make([]float64, setup.Values())
		answer  = make([]byte, 0, 88+8*len(outputs))
	)
	stepOnce := func(p []byte) ([]byte, error) {
		if err := decodeStep(p, fmi.Count(setup.Inputs), &step); err != nil {
			return nil, err
		}
		res, msg := Stepped, ""
		if step.Reset {
			if err := st.Reset(); err != nil {
				res, msg = Failed, "resetting the FMU: "+err.Error()
			}
		}
		if res == Stepped && len(step.TuneVars) > 0 {
			if err := st.SetParams(step.TuneVars, step.TuneValue); err != nil {
				res, msg = TuneFailed, "setting parameters: "+err.Error()
			}
		}
		if res == Stepped {
			ok, err := st.Step(step.T, step.Inputs, outputs)
			var bad *fmi.BadOutput
			var end *fmi.Terminated
			switch {
			case errors.As(err, &end):
				res, msg = Terminated, err.Error()
			case fmi.Unfit(err):
				res, msg = Unfit, err.Error()
			case errors.As(err, &bad):
				res, msg = BadOutput, err.Error()
			case err != nil:
				res, msg = Failed, err.Error()
			case !ok:
				res = NotStepped
			}
		}
		// After Failed the instance is unusable (FMI allows little but
		// freeing it after an error): every later step fails too, and
		// the coupling stops this host and starts another.
		tc, _ := st.Time()
		sol := st.Solver()
		pr := Progress{CatchUps: uint32(st.CatchUps), Resets: uint32(st.Resets), Steps: uint32(sol.Steps),
			Rejected: uint32(sol.Rejected), Events: uint32(sol.Events)}
		answer = appendAnswer(answer[:0], res, step.Seq, tc, pr, outputs, msg)
		return answer, nil
	}
	if box != nil {
		return serveBox(br, &head, box, stepOnce)
	}
	for {
		typ, p, err = readFrame(br, &head, p)
		switch {
		case errors.Is(err, io.EOF) || err == nil && typ == frameQuit:
			return nil // the coupling closed or quit: st.Close terminates the FMU
		case err != nil:
			return fmt.Errorf("reading a request: %w", err)
		case typ != frameStep:
			return fmt.Errorf("expected a step request, got frame %q", typ)
		}
		if answer, err = stepOnce(p); err != nil {
			return err
		}
		if out, err = writeFrame(w, out, frameAnswer, answer); err != nil {
			return err
		}
	}
}

// serveBox answers the steps that come through the mailbox until the
// coupling quits (a quit frame, or its end of the pipe closing), which
// closes the box.
func serveBox(br *bufio.Reader, head *[5]byte, box *mailbox.Box, step func([]byte) ([]byte, error)) error {
	quit := make(chan error, 1)
	go func() {
		typ, _, err := readFrame(br, head, nil)
		switch {
		case errors.Is(err, io.EOF) || err == nil && typ == frameQuit:
			quit <- nil
		case err != nil:
			quit <- fmt.Errorf("reading a request: %w", err)
		default:
			quit <- fmt.Errorf("expected quit, got frame %q", typ)
		}
		box.Close()
	}()
	for {
		p, err := box.Next(time.Time{})
		if errors.Is(err, mailbox.ErrClosed) {
			return <-quit
		}
		if err != nil {
			return err
		}
		a, err := step(p)
		if err != nil {
			return err
		}
		out := box.Answer()
		if len(a) > len(out) {
			a = a[:len(out)] // only an error text can be this long: cut
		}
		if err := box.Reply(copy(out, a)); err != nil {
			return err
		}
	}
}

package program

import (
	"errors"
	"fmt"
	"strings"

	"beamconnect/models"
)

// How an exec program starts over when BeamNG starts its coupling again
// (modelParams.reset). A program that speaks reset said so with a line of
// its own, "# protocol: reset"; it is then written "# reset" before its
// next request, and goes back to its initial state itself. One that does
// not is ended and started again: a new run of it starts from the start.
// Neither blocks the message path: Reset only marks the reset; the
// program's writer writes the line before the next request, and the
// supervisor ends and starts the program while that request waits. No
// request made after a reset reaches a run of the program that has not had
// it (each request carries the resets asked for when it was made, gen).
type resetMode uint8

const (
	resetAuto    resetMode = iota // its line if the program speaks reset, else started again
	resetLine                     // its line only: a program that does not speak it is not reset
	resetRestart                  // always started again
	resetNone                     // the program keeps its state, as the config says
)

var resetModes = []string{"auto", "line", "restart", "none"}

// resetParam reads modelParams.reset; "auto" when absent.
func resetParam(p models.Params) (resetMode, error) {
	v, ok := p["reset"]
	if !ok {
		return resetAuto, nil
	}
	if msg := checkReset(v); msg != "" {
		return 0, fmt.Errorf("model exec: modelParams.reset: %s", msg)
	}
	for i, name := range resetModes {
		if v == name {
			return resetMode(i), nil
		}
	}
	return resetAuto, nil
}

// checkReset checks modelParams.reset's value: "" when it is one.
func checkReset(v any) string {
	s, ok := v.(string)
	for _, name := range resetModes {
		if ok && s == name {
			return ""
		}
	}
	return fmt.Sprintf(`expected "auto" (the program's reset line if it speaks it, else the program started again), "line", "restart" or "none", got %s`, models.DescribeValue(v))
}

// ProtocolReset is the word a program's "# protocol:" line names to say
// it speaks reset, and resetLine what it is then written.
const (
	ProtocolReset = "reset"
	resetLineText = "# reset\n"
)

// Reset starts the program over, BeamNG having started its coupling
// again: with its reset line before the next request, or by starting it
// again. It does not wait for either. It returns an error when the
// program will not start over: the config says it keeps its state
// (models.ErrKeepsState), it has ended for good, or it must be reset by
// its line and has not said it speaks it.
func (m *Exec) Reset() error {
	if m.reset == resetNone {
		return fmt.Errorf(`modelParams.reset is "none": %w`, models.ErrKeepsState)
	}
	if m.dead.Load() != nil && !m.restart {
		return errors.New("the model program has ended and is not started again (modelParams.restart is false)")
	}
	m.procMu.Lock()
	speaks := m.proc.speaksReset.Load()
	m.procMu.Unlock()
	if m.reset == resetLine && !speaks {
		return errors.New(`modelParams.reset is "line", and the model program has not said it speaks reset (a line "# protocol: reset" of its own): it is not started again`)
	}
	m.resetGen.Add(1)
	if m.reset == resetRestart || !speaks {
		// From here the program is starting: the next step waits for
		// its new run's start, as for any start, not the model timeout
		// that the old run, which spoke, would have had (the old run's
		// lines no longer say it has started: execio's read).
		m.spoke.Store(false)
		m.askStartAgain()
	}
	return nil
}

// askStartAgain asks the supervisor to start the program again for a
// reset.
func (m *Exec) askStartAgain() {
	select {
	case m.resetNow <- struct{}{}:
	default:
	}
}

// resetByLine reports whether run p takes a reset by its line.
func (m *Exec) resetByLine(p *process) bool {
	return m.reset != resetRestart && p.speaksReset.Load()
}

// startAgain ends run p of the program at once and starts it again: a
// reset of a program that does not speak it.
func (m *Exec) startAgain(p *process) (*process, error) {
	m.log.Info("the model program is started again to start over", "command", strings.Join(m.argv, " "), "why", m.startAgainWhy())
	p.stdin.Close()
	p.tree.Kill()
	<-p.done
	np, err := m.start()
	if err == nil {
		m.resetStarts.Add(1)
	}
	return np, err
}

func (m *Exec) startAgainWhy() string {
	if m.reset == resetRestart {
		return `modelParams.reset is "restart"`
	}
	return `it has not said it speaks reset ("# protocol: reset")`
}

// ResetStarts counts the times the program was started again to start
// over.
func (m *Exec) ResetStarts() int64 { return m.resetStarts.Load() }

// Notes says, for the summary, how the program started over, if it was
// started again for that.
func (m *Exec) Notes() []string {
	n := m.resetStarts.Load()
	if n == 0 {
		return nil
	}
	times := "once"
	if n > 1 {
		times = fmt.Sprintf("%d times", n)
	}
	return []string{fmt.Sprintf("the model program was started again %s to start over when BeamNG started its coupling again (%s)", times, m.startAgainWhy())}
}

// declareProtocol takes a program's "# protocol:" line for run p: the
// words it speaks.
func (m *Exec) declareProtocol(p *process, words []byte) {
	for _, w := range strings.Fields(string(words)) {
		switch w {
		case ProtocolReset:
			if !p.speaksReset.Swap(true) {
				m.log.Debug("the model program speaks reset")
			}
		default:
			m.log.Warn("model program", "problem", fmt.Sprintf("its \"# protocol:\" line names %q, which beamconnect does not know (it knows %q): ignored", w, ProtocolReset))
		}
	}
}

// Package timing analyses a coupling's timing from BeamNG's debug logs
// (simulinkSendLog.csv, simulinkReceiveLog.csv, simulinkPhysicsStepsLog.csv,
// from BeamNG or the emulator): where each reply lands, skips between
// sends, stalls, lockstep, the real-time factor, and a verdict. It redoes
// the analysis BeamNG's own timing study makes with MATLAB (docs/timing.md)
// and draws its figures as SVG.
package timing

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Event is a logged message: when, and its id.
type Event struct {
	T  float64 // s, BeamNG's os.clockhp() (or the emulator's run clock)
	ID float64
}

// Logs are the three debug logs.
type Logs struct {
	Steps    []float64 // start of each physics step
	Sends    []Event
	Receives []Event
}

// The file names BeamNG writes with debugFile=true.
const (
	SendLog    = "simulinkSendLog.csv"
	ReceiveLog = "simulinkReceiveLog.csv"
	StepsLog   = "simulinkPhysicsStepsLog.csv"
)

// ReadDir reads the three logs from dir.
func ReadDir(dir string) (*Logs, error) {
	return ReadFiles(filepath.Join(dir, StepsLog), filepath.Join(dir, SendLog), filepath.Join(dir, ReceiveLog))
}

// ReadFiles reads the three logs from their paths.
func ReadFiles(steps, sends, receives string) (*Logs, error) {
	var l Logs
	var err error
	var ev []Event
	if ev, err = readCSV(steps, 1); err != nil {
		return nil, err
	}
	for _, e := range ev {
		l.Steps = append(l.Steps, e.T)
	}
	if l.Sends, err = readCSV(sends, 2); err != nil {
		return nil, err
	}
	if l.Receives, err = readCSV(receives, 2); err != nil {
		return nil, err
	}
	if len(l.Steps) == 0 {
		return nil, fmt.Errorf("timing: %s has no physics steps", steps)
	}
	return &l, nil
}

// readCSV reads the first cols columns (time, then id) of every row; a
// header row, which BeamNG writes, is skipped.
func readCSV(path string, cols int) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("timing: %w", err)
	}
	defer f.Close()
	var out []Event
	r := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		s, err := r.ReadString('\n')
		if s = strings.TrimSpace(s); s != "" {
			fields := strings.SplitN(s, ",", cols+1)
			if len(fields) < cols {
				return nil, fmt.Errorf("timing: %s:%d: expected %d columns (time, id), got %d", path, line, cols, len(fields))
			}
			var e Event
			var perr error
			if e.T, perr = strconv.ParseFloat(strings.TrimSpace(fields[0]), 64); perr == nil && cols > 1 {
				e.ID, perr = strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
			}
			switch {
			case perr != nil && line == 1:
				// the header
			case perr != nil:
				return nil, fmt.Errorf("timing: %s:%d: expected numbers (time, id): %q", path, line, s)
			default:
				out = append(out, e)
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("timing: %s: %w", path, err)
		}
	}
}

// StallGap is the gap between physics steps that counts as one of BeamNG's
// 2 s blocking-receive timeouts.
const StallGap = 1.9

// Report holds the numbers behind the figures.
type Report struct {
	Steps             int     `json:"steps"`
	Sends             int     `json:"sends"`
	Receives          int     `json:"receives"`
	SkipsBetweenSends int     `json:"skips_between_sends"` // median
	RepliesSameStep   int     `json:"replies_same_step"`   // in the step right after the send: as soon as possible
	RepliesLaterStep  int     `json:"replies_later_step"`  // in a later, non-blocking skip step
	RepliesBlocking   int     `json:"replies_blocking"`    // in a send step: BeamNG waited for it
	Stalls            int     `json:"stalls"`              // 2 s blocking timeouts
	SimS              float64 `json:"sim_s"`
	WallS             float64 `json:"wall_s"`
	RealtimeFactor    float64 `json:"realtime_factor"`
	// FirstStall is when the first physics step after a 2 s blocking
	// receive began (or the first reply's time when there was no stall),
	// where the start-up zoom looks; -1 when neither exists.
	FirstStall float64 `json:"first_stall_s"`
	// SendsAhead counts sends BeamNG made while the replies' ids were ahead
	// of its own count of sends: out of lockstep, a standing backlog.
	SendsAhead int `json:"sends_ahead"`

	stallWall float64 // wall time spent in stalls
	// stalls are the physics steps that began after each stall (indices
	// into Logs.Steps), for the lockstep replay and the figures.
	stalls []int

	Healthy  bool     `json:"healthy"`
	Problems []string `json:"problems"` // why not healthy
	Notes    []string `json:"notes"`    // healthy, but worth knowing
}

// Analyze computes the report. dt is the physics step (0.0005 s).
//
// Each receive is placed in the physics step it happened in (the last step
// that started before it) and matched to the message in flight: the latest
// one sent in an earlier step. A receive in a step that also sends was a
// blocking receive: with BeamNG's usual window of one message, a send step
// only receives when the window is full. A receive in the step right after
// its message's send step came as soon as it could; one further on landed
// in a later skip step.
func Analyze(l *Logs, dt float64) Report {
	r := Report{Steps: len(l.Steps), Sends: len(l.Sends), Receives: len(l.Receives)}
	stepOf := func(t float64) int {
		i, _ := slices.BinarySearch(l.Steps, t)
		if i < len(l.Steps) && l.Steps[i] == t {
			return i
		}
		return i - 1
	}
	sendStep := make([]int, len(l.Sends))
	isSend := map[int]bool{}
	for i, s := range l.Sends {
		sendStep[i] = stepOf(s.T)
		isSend[sendStep[i]] = true
	}
	var skips []int
	for i := 1; i < len(sendStep); i++ {
		skips = append(skips, sendStep[i]-sendStep[i-1]-1)
	}
	if len(skips) > 0 {
		slices.Sort(skips)
		r.SkipsBetweenSends = skips[len(skips)/2]
	}
	for _, rc := range l.Receives {
		st := stepOf(rc.T)
		// The message in flight: the latest sent in an earlier step.
		k, _ := slices.BinarySearchFunc(sendStep, st, func(a, b int) int { return a - b })
		if k == 0 {
			continue // nothing was in flight
		}
		from := sendStep[k-1]
		switch {
		case isSend[st]:
			r.RepliesBlocking++
		case st == from+1:
			r.RepliesSameStep++
		default:
			r.RepliesLaterStep++
		}
	}
	for i := 1; i < len(l.Steps); i++ {
		if gap := l.Steps[i] - l.Steps[i-1]; gap >= StallGap {
			r.stallWall += gap - dt
			r.stalls = append(r.stalls, i)
		}
	}
	r.Stalls = len(r.stalls)
	switch {
	case r.Stalls > 0:
		r.FirstStall = l.Steps[r.stalls[0]]
	case len(l.Receives) > 0:
		r.FirstStall = l.Receives[0].T
	default:
		r.FirstStall = -1
	}
	r.SimS = float64(len(l.Steps)) * dt
	if n := len(l.Steps); n > 1 {
		r.WallS = l.Steps[n-1] - l.Steps[0] + dt
		r.RealtimeFactor = r.SimS / r.WallS
	}
	r.SendsAhead = sendsAhead(l, r.stalls)
	r.judge()
	return r
}

// sendsAhead replays BeamNG's window from the logs (its count of sends
// and the highest reply id it has taken, both reset by a 2 s stall) and
// counts the sends it made with the window past empty: the replies' ids
// ahead of its count, so that it sent without waiting for the reply to its
// last message. That is what a reset leaves behind when the client does
// not re-base its reply ids: BeamNG out of lockstep, a standing backlog.
// stalls are the steps that began after a stall, in order.
func sendsAhead(l *Logs, stalls []int) int {
	n, sent, maxReply := 0, 0.0, 0.0
	si, ri := 0, 0
	for i := range l.Steps {
		if len(stalls) > 0 && stalls[0] == i {
			sent, maxReply = 0, 0 // the blocking receive timed out: BeamNG's reset
			stalls = stalls[1:]
		}
		end := math.Inf(1)
		if i+1 < len(l.Steps) {
			end = l.Steps[i+1]
		}
		// This step's receives and sends, in the order they happened.
		for si < len(l.Sends) && l.Sends[si].T < end || ri < len(l.Receives) && l.Receives[ri].T < end {
			if ri < len(l.Receives) && l.Receives[ri].T < end && (si >= len(l.Sends) || l.Receives[ri].T <= l.Sends[si].T) {
				maxReply = max(maxReply, l.Receives[ri].ID)
				ri++
				continue
			}
			if sent < maxReply {
				n++
			}
			sent++
			si++
		}
	}
	return n
}

// judge sets the verdict: not healthy when BeamNG stalled or ran out of
// lockstep; healthy but noted when it ran slower than real time or the
// replies came only just in time.
func (r *Report) judge() {
	r.Problems, r.Notes = []string{}, []string{}
	if r.Sends == 0 {
		r.Problems = append(r.Problems, "BeamNG sent nothing: its coupling never started")
	} else if r.Receives == 0 {
		r.Problems = append(r.Problems, "no reply reached BeamNG: nothing answered, or the replies went elsewhere (remotePort, remoteIP)")
	}
	if r.Stalls > 0 {
		what := fmt.Sprintf("%d stalls: BeamNG waited 2 s for a reply %d times", r.Stalls, r.Stalls)
		if r.Stalls == 1 {
			what = "1 stall: BeamNG waited 2 s for a reply once"
		}
		r.Problems = append(r.Problems, what+" (a reply lost or late, an echoed id at start-up, a client paused)")
	}
	if r.SendsAhead > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("out of lockstep: BeamNG sent %d messages without waiting for their replies (after a stall the reply ids were not re-based: a standing backlog, controls act late)", r.SendsAhead))
	}
	// Real time apart from the stalls, which are problems of their own.
	if wall := r.WallS - r.stallWall; wall > 1 && r.SimS/wall < 0.95 {
		r.Notes = append(r.Notes, fmt.Sprintf("slower than real time (%.3f× apart from stalls): the client takes longer than the send period, and BeamNG waits for it", r.SimS/wall))
	}
	if r.SkipsBetweenSends > 0 && r.Receives > 0 && r.RepliesBlocking*2 > r.Receives {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d replies came only in BeamNG's blocking receive at the next send: the client takes nearly the whole period", r.RepliesBlocking, r.Receives))
	}
	r.Healthy = len(r.Problems) == 0
}

// Verdict is the report's first line: healthy or not, and why.
func (r Report) Verdict() string {
	switch {
	case !r.Healthy && len(r.Notes) > 0:
		return "NOT healthy: " + strings.Join(r.Problems, "; ") + "; and " + strings.Join(r.Notes, "; ")
	case !r.Healthy:
		return "NOT healthy: " + strings.Join(r.Problems, "; ")
	case len(r.Notes) > 0:
		return "healthy (lockstep, no stalls), but: " + strings.Join(r.Notes, "; ")
	}
	return "healthy: lockstep, no stalls, every reply in time"
}

func (r Report) String() string {
	return r.Verdict() + "\n" + fmt.Sprintf(`physics steps        %d (%.3f s simulated in %.3f s: %.3f× real time)
sends                %d, median %d skip steps between them
replies              %d: %d in the next step, %d in a later skip step, %d in a blocking receive
stalls (2 s timeout) %d
sends ahead          %d (sent without waiting, the reply ids ahead of BeamNG's count: out of lockstep)`,
		r.Steps, r.SimS, r.WallS, r.RealtimeFactor, r.Sends, r.SkipsBetweenSends,
		r.Receives, r.RepliesSameStep, r.RepliesLaterStep, r.RepliesBlocking, r.Stalls, r.SendsAhead)
}

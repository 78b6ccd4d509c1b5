package child

import (
	"fmt"
	"math"
)

// maxTime bounds the FMU's time, in seconds either way (about 31 years):
// no BeamNG message is that far, and within it the time of message k,
// start + k × period, is exact to far less than the thousandth of a
// period a step is held to.
const maxTime = 1e9

// span is a step the master asked for, in BeamNG's messages.
type span struct {
	end int64 // the index of the message that ends the step (its data are the outputs)
	// tail: the last step, shorter than a whole number of periods, ends at
	// the stop time between two messages. The messages within it get its
	// inputs, the last of them (end) released at once with them; the
	// outputs at the stop time are that message's data.
	tail bool
}

// experiment is what the master said of its simulation when it
// initialized the FMU: its start and, if it gave one, its stop time.
type experiment struct {
	start, stop float64
	stopDefined bool
	// atStop: the last step, a tail, ended between two messages (at stop,
	// the stop time, or where it ended when the master gave none): no
	// step goes on from there.
	atStop bool
}

// newExperiment checks the master's start and stop time.
func newExperiment(start float64, stopDefined bool, stop float64) (experiment, error) {
	e := experiment{start: start, stop: stop, stopDefined: stopDefined}
	switch {
	case math.IsNaN(start) || math.Abs(start) > maxTime:
		return e, fmt.Errorf("the start time %s s: expected a number of seconds within ±%s (about 31 years)", sec(start), sec(maxTime))
	case stopDefined && (math.IsNaN(stop) || stop < start):
		return e, fmt.Errorf("the stop time %s s is before the start time %s s", sec(stop), sec(start))
	}
	return e, nil
}

// span checks the master's step from t of h, the FMU being at message n
// (period p apart from the start), and says which messages it couples.
// A step is a whole number of periods from the FMU's time; the last one
// may be shorter, down to no whole period (it then couples only the
// message at t): masters shorten their last step to land on their stop
// time. With a stop time given, that is the step that ends there; with
// none (fmusim tells it only when asked to), a shorter step is taken for
// the last, and a step after it is refused.
func (e *experiment) span(t, h float64, n int64, p float64) (span, error) {
	tol := p / 1000
	at := e.start + float64(n)*p
	periods := fmt.Sprintf("a whole number of BeamNG's %s ms periods (%s s, %s s, %s s…)", sec(p*1000), sec(p), sec(2*p), sec(4*p))
	switch {
	case e.atStop && e.stopDefined:
		return span{}, fmt.Errorf("a step from t = %s s, but the FMU reached the stop time %s s with the last step: no step goes past it", sec(t), sec(e.stop))
	case e.atStop:
		return span{}, fmt.Errorf("a step from t = %s s, but the step before ended at %s s, between BeamNG's messages (not a whole number of BeamNG's %s ms periods), which only the last step may: set the master's communication step size to %s, or give the FMU the stop time",
			sec(t), sec(e.stop), sec(p*1000), periods)
	case math.IsNaN(h) || math.IsInf(h, 0):
		return span{}, fmt.Errorf("a step of h = %s s: a step is %s", sec(h), periods)
	case h <= 0:
		return span{}, fmt.Errorf("a step of h = %s s: a step is longer than 0, %s", sec(h), periods)
	case math.IsNaN(t) || math.Abs(t-at) > tol:
		return span{}, fmt.Errorf("a step from t = %s s, but the FMU is at %s s: FMI's communication points are contiguous", sec(t), sec(at))
	case t+h > maxTime:
		return span{}, fmt.Errorf("a step of h = %s s from t = %s s ends past %s s (about 31 years), further than any BeamNG message: a step is %s", sec(h), sec(t), sec(maxTime), periods)
	case e.stopDefined && t+h > e.stop+tol:
		return span{}, fmt.Errorf("a step of h = %s s from t = %s s ends at %s s, past the stop time %s s the master set", sec(h), sec(t), sec(t+h), sec(e.stop))
	}
	m := math.Round(h / p)
	if m >= 1 && math.Abs(h-m*p) <= tol {
		return span{end: n + int64(m)}, nil
	}
	if !e.stopDefined || math.Abs(t+h-e.stop) <= tol {
		if !e.stopDefined {
			e.stop = t + h // taken for the stop time
		}
		return span{end: n + int64(math.Floor((h+tol)/p)), tail: true}, nil
	}
	return span{}, fmt.Errorf("a step of h = %s s: a step couples whole BeamNG messages, so h must be %s: set the master's communication step size so; only the last step, which ends at the stop time (%s s), may be shorter",
		sec(h), periods, sec(e.stop))
}

// time is the FMU's time at message n: the stop time once the last step
// reached it.
func (e *experiment) time(n int64, p float64) float64 {
	if e.atStop {
		return e.stop
	}
	return e.start + float64(n)*p
}

// tailNote says once what the last, shorter step coupled.
func tailNote(from, stop float64, n, end int64, start, p float64) string {
	last := start + float64(end)*p
	if end == n {
		return fmt.Sprintf("the last step, from t = %s s to the stop time %s s, is shorter than BeamNG's %s ms period: it coupled BeamNG's message of %s s only (its reply carries the step's inputs), and the outputs at the stop time are that message's data",
			sec(from), sec(stop), sec(p*1000), sec(last))
	}
	return fmt.Sprintf("the last step, from t = %s s to the stop time %s s, is not a whole number of BeamNG's %s ms periods: it coupled BeamNG's messages of %s s to %s s (the last one's reply carries the step's inputs), and the outputs at the stop time are the data of the message of %s s",
		sec(from), sec(stop), sec(p*1000), sec(from), sec(last), sec(last))
}

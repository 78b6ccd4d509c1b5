package coupling

import (
	"math"
	"slices"
)

// modelClock is the model's time: the simulation's, what BeamNG simulated,
// never the wall clock, whatever the time sync. BeamNG's message k of a
// vehicle was generated at k × the send period; the model's time is the
// first message's time plus one period per simulation step since. A pause
// of BeamNG is a pause of the model's time; a message lost, or skipped
// after a pause of beamconnect, moves it on by the steps BeamNG simulated
// meanwhile.
//
// With several vehicles every vehicle sends once per simulation step, each
// with ids of its own (counted from its controller's load). A vehicle's
// first message joins the model's current step; from there on each of its
// messages is one step further, so the model's time advances once per
// simulation step, at whichever vehicle's message comes first in it, and a
// message of another vehicle in the same step gets the same time (the model
// computed its controls in that step). The model's time follows the vehicle
// furthest on: one whose BeamNG went silent does not hold it back, and
// joins the current step again when it comes back.
//
// BeamNG starting a vehicle's coupling again (ids from 0, from a new port)
// starts the model over at that message's time, when the model reads the
// vehicle, or reads no vehicle at all (a model of time alone, such as an
// FMU with outputs only: the simulation's time is all it takes from
// BeamNG); its other vehicles join the new start. Couplings started again
// within staleAfter of each other (BeamNG restarting the scenario restarts
// every vehicle's) start the model over once.
type modelClock struct {
	period  float64
	started bool
	t0      float64   // the model's time at its step 0
	n       float64   // the model's step: its time is t0 + n × period
	base    []float64 // per vehicle: the id of its message at step 0 (NaN: it joins at its next)
	reset   bool      // the model started over, and has not gone staleAfter on since
	resets  int64
	// shift is what the recording's time axis adds to the model's time:
	// where BeamNG started its coupling again, the axis goes on one
	// period after the last step instead of running back.
	shift float64
}

func newModelClock(vehicles int, period float64) *modelClock {
	c := &modelClock{period: period, base: make([]float64, vehicles)}
	c.forget()
	return c
}

// forget lets every vehicle join at its next message.
func (c *modelClock) forget() {
	for i := range c.base {
		c.base[i] = math.NaN()
	}
}

// place takes vehicle v's message id and returns the model's time for it.
// restart says BeamNG started v's coupling again with this message, reads
// which vehicles' data the model reads; reset whether the model must start
// over first.
func (c *modelClock) place(v int, id float64, restart bool, reads []bool) (t float64, reset bool) {
	switch {
	case !c.started:
		c.started, c.t0, c.n = true, id*c.period, 0
		c.forget()
		c.base[v] = id
		return c.t0, false
	case restart && startsOver(reads, v) && !(c.reset && c.n*c.period < staleAfter):
		c.shift += c.now() + c.period - id*c.period
		c.t0, c.n, c.reset = id*c.period, 0, true
		c.resets++
		c.forget()
		c.base[v] = id
		return c.t0, true
	case restart || c.base[v] != c.base[v] || id-c.base[v] < c.n-1:
		// A new vehicle, a coupling started again, or one that fell behind
		// (it was silent while another went on): it joins the current step.
		c.base[v] = id - c.n
	}
	if k := id - c.base[v]; k > c.n {
		c.n = k
	}
	if c.n*c.period >= staleAfter {
		c.reset = false
	}
	return c.now(), false
}

// axis is the recording's time of model time t: BeamNG's simulation time,
// which goes on (never back) where BeamNG started its coupling again.
func (c *modelClock) axis(t float64) float64 { return t + c.shift }

// now is the model's time: of its latest step, 0 before the first message.
func (c *modelClock) now() float64 {
	if !c.started {
		return 0
	}
	return c.t0 + c.n*c.period
}

// startsOver reports whether BeamNG starting vehicle v's coupling again
// starts the model over: it reads v's data, or no vehicle's (its time, the
// simulation's, is then all it takes from BeamNG, and that starts over).
func startsOver(reads []bool, v int) bool {
	return v < len(reads) && reads[v] || !slices.Contains(reads, true)
}

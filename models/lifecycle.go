package models

import "errors"

// Resetter is a Model that starts over when BeamNG starts its coupling
// again (message ids from 0, from a new port: a reloaded controller, a
// restarted scenario): the coupling calls Reset between two messages,
// before the step on the new coupling's first message, whose time is
// the model's time from then on. The model goes back to its initial state
// with the run's parameters (as tuned so far). Reset must not block: a
// model that runs elsewhere (an FMU's host) resets with its next step,
// and a reset that fails there is a fault of that step. Reset returns an
// error when the model knows at once that it cannot start over: it then
// keeps its state, and the run says so (model_not_reset). A model that is
// no Resetter is not reset either, and the run says that too. A Reset
// that returns an error wrapping ErrKeepsState was told by the config to
// keep its state (an exec program's modelParams.reset "none"): it is not
// reset, and that is no fault.
type Resetter interface {
	Reset() error
}

// ErrKeepsState is what Reset wraps when the config says the model keeps
// its state on purpose across BeamNG starting its coupling again.
var ErrKeepsState = errors.New("the config says the model keeps its state")

// Ender is a Model that can end the simulation on its own (an FMU that
// asks to terminate): Ended says why once it has, nil before. From then on
// BeamNG gets neutral controls, counted apart from faults: an end is not a
// fault.
type Ender interface {
	Ended() error
}

// Noter is a Model with something to say about how it runs (an FMU's
// interface and step, and why it ended), for the summary: a line each.
type Noter interface {
	Notes() []string
}

// Starter is a Model that takes a while to start (a program of its own,
// an interpreter loading): Started is closed once it has answered. An
// emulated BeamNG (run --emulate) starts sending only then, as a user
// starts BeamNG's coupling after beamconnect's: in lockstep its first
// messages would otherwise wait for the start, and get neutral controls
// if it outlasted the model timeout.
type Starter interface {
	Started() <-chan struct{}
}

// Package models is the contract of what stands where the Simulink model
// stood: the Model interface and the optional ones the coupling looks for
// (Idler, Rebinder, Reader, Faulter, Tallier, Reporter, Sampler, Closer), a model's
// Params and the Findings about them, and "hold", the model that writes
// nothing, and what every kind of model is built from. The models
// themselves live below: models/builtin (the built-in controllers),
// models/program ("exec": an external process), models/fmumodel ("fmu");
// models/kinds makes any of them by its name.
package models

import (
	"fmt"

	"beamconnect/ports"
	"beamconnect/quality"
)

// Model stands where the Simulink model stood. The coupling steps it once
// per BeamNG message whose data it may act on: a whole message of a
// vehicle, with the data of every other vehicle it reads no older than a
// silence (see the coupling). It is never stepped on stale data, and a
// reply carries its controls only when Step says it computed them from the
// data it was given; otherwise BeamNG gets neutral controls for that
// message, and the coupling counts it.
//
// outputs holds the plan's output port vectors (data from BeamNG):
// outputs[0][0] is the connection status, a ports.Status (ports.Connected…). inputs
// holds the input port vectors (data to BeamNG), which the model writes:
// inputs[0][0] is the connection directive (0 disconnects). Between steps
// the inputs keep what the model last wrote; they start at the fields'
// initial values. t is the model's time in seconds.
//
// Step must return within its own deadline (a model that waits for a
// program waits with one), must not keep the slices, and should not
// allocate: it runs on the coupling's hot path.
type Model interface {
	Step(t float64, outputs [][]float64, inputs [][]float64) (computed bool)
}

// Idler is a Model that is also stepped while no data come: every 50 ms
// while BeamNG is not connected, so that it sees the status and can set the
// directive. Nothing it writes then reaches BeamNG.
type Idler interface {
	Idle(t float64, outputs [][]float64, inputs [][]float64)
}

// Closer is a Model holding resources (a process) to release at the end.
type Closer interface {
	Close() error
}

// Rebinder is a Model that can move to a reloaded config while it runs:
// its new plan (port numbers and fields may all have moved) and its new
// modelParams. A model that is not a Rebinder refuses every reload; no
// model keeps port numbers from an older plan.
//
// Rebind runs off the message path while Step goes on with the running
// binding: it checks and does everything that can fail (binding by field
// identity, parameters a running model cannot take, values the model
// refuses) and changes nothing the running model uses. It returns commit,
// which the coupling calls between two messages to switch the model over;
// commit cannot fail. running are the modelParams the model runs with.
type Rebinder interface {
	Rebind(plan *ports.Plan, running, params Params) (commit func(), err error)
}

// Reader is a Model that reads the data of only some vehicles: the
// coupling steps it while those have fresh data, whatever the others do.
// A model that is not a Reader reads every vehicle the config maps.
type Reader interface {
	Reads(vehicle int) bool
}

// Faulter is a Model that can fail on its own: a process that exits, hangs
// or answers badly. Fault is nil while the model is healthy; the coupling
// reads it after every step and sends neutral controls while it is not. It
// must not allocate.
type Faulter interface {
	Fault() error
}

// Reporter is a Model that says how well it controls: a report per loop,
// judged as beamng.quality judges any model's (package quality). The
// summary, the status line, --json and the live page show them when the
// config names no loops of its own. Quality is read from other goroutines
// while the model steps (the trackers publish atomically); final says the
// run is over.
type Reporter interface {
	Quality(final bool) []quality.Report
}

// Params are a model's parameters from the config (beamng.modelParams).
type Params map[string]any

// Float returns a numeric parameter, or def when absent.
func (p Params) Float(name string, def float64) (float64, error) {
	v, ok := p[name]
	if !ok {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("modelParams.%s: expected a number, got %v", name, v)
	}
	return f, nil
}

// Hold writes nothing: inputs stay at their initial values. For logging
// rigs, and for driving BeamNG from its own UI while recording.
type Hold struct{}

func (Hold) Step(float64, [][]float64, [][]float64) bool { return true }

// Reset: hold has no state, so it starts over as it is.
func (Hold) Reset() error { return nil }

// Reads: hold reads no vehicle's data, so a silent vehicle keeps none of
// the others from their (initial) values.
func (Hold) Reads(int) bool { return false }

// Rebind: hold writes nothing, so any plan will do; it takes no
// parameters.
func (Hold) Rebind(_ *ports.Plan, _, params Params) (func(), error) {
	if f := CheckParams("hold", nil, params); len(f) > 0 {
		return nil, f[0]
	}
	return func() {}, nil
}

// Package models holds what stands where the Simulink model stood: the Model
// interface a program implements, the built-in controllers, "hold" for
// pure logging rigs, "exec" for an external process, and "fmu" for a
// co-simulation FMU.
package models

import (
	"fmt"
	"log/slog"
	"strings"

	"beamconnect/ports"
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

// Check reports whether the model called name could bind to plan, without
// starting anything: a reload is refused before it is applied when the new
// config lacks a port the model needs.
func Check(name string, plan *ports.Plan) error { return checkWith(name, nil, plan) }

// checkWith is Check with the model's parameters, which name what some
// models bind (follow's ego and lead).
func checkWith(name string, params Params, plan *ports.Plan) error {
	b := &binder{plan: plan, model: name}
	switch name {
	case "cruise-pedals":
		bindPedals(b)
	case "cruise-torque":
		bindTorque(b)
	case "heading-hold":
		bindHeading(b)
	case "follow":
		m := &Follow{}
		m.egoName, _ = params["ego"].(string)
		m.leadName, _ = params["lead"].(string)
		m.bind(b)
	}
	return b.err()
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

// Names of the built-in models.
func Names() []string {
	return []string{"cruise-pedals", "cruise-torque", "exec", "fmu", "follow", "heading-hold", "hold"}
}

// New builds the model called name for plan, binding it to the ports that
// carry the signals it needs.
//
// log (nil: discard) hears of what a model that runs on its own reports:
// an exec program that ends, or answers badly.
func New(name string, params Params, plan *ports.Plan, log *slog.Logger) (Model, error) {
	if _, ok := paramSpecs[name]; !ok {
		return nil, Validate(name, params, plan)[0] // names the models there are
	}
	var errs []string
	for _, f := range Validate(name, params, plan) {
		if !f.Warning {
			errs = append(errs, f.Error())
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model %s: %s", name, strings.Join(errs, "; "))
	}
	b := &binder{plan: plan, model: name}
	var m Model
	var err error
	switch name {
	case "hold":
		m = Hold{}
	case "cruise-pedals":
		m, err = newCruisePedals(b, params)
	case "cruise-torque":
		m, err = newCruiseTorque(b, params)
	case "heading-hold":
		m, err = newHeadingHold(b, params)
	case "follow":
		m, err = newFollow(b, params)
	case "exec":
		// Assign only a working *Exec: a nil one in the interface would not
		// compare equal to nil below.
		var ex *Exec
		if ex, err = NewExec(params, plan, log); err == nil {
			m = ex
		}
	case "fmu":
		var f *FMU
		if f, err = NewFMU(params, plan, log); err == nil {
			m = f
		}
	}
	if err == nil {
		err = b.err()
	}
	if err != nil {
		if c, ok := m.(Closer); ok && m != nil {
			c.Close()
		}
		return nil, err
	}
	return m, nil
}

// Hold writes nothing: inputs stay at their initial values. For logging
// rigs, and for driving BeamNG from its own UI while recording.
type Hold struct{}

func (Hold) Step(float64, [][]float64, [][]float64) bool { return true }

// Reads: hold reads no vehicle's data, so a silent vehicle keeps none of
// the others from their (initial) values.
func (Hold) Reads(int) bool { return false }

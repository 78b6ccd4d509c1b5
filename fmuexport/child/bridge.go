package child

import (
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"beamconnect/ports"
)

// bridge is the model the coupling steps: the master. Every BeamNG
// message of a step's interval [t, t+h) gets the master's inputs of that
// step, held over it; the first message at or after t+h ends the step: its
// data are the step's outputs, and its reply waits for the master's next
// step, whose inputs it carries. So the outputs at a communication point
// are BeamNG's message of that time, the master computes its inputs from
// them while BeamNG waits (lockstep), and BeamNG applies them from that
// message on. Message k of the run is at the FMU's time start + k × the
// period: the first message BeamNG sends is the FMU's start.
//
// With several vehicles, a step ends at the first vehicle's message of its
// end; the other vehicles' outputs are their latest, at most one period
// older, as beamconnect pairs vehicles for any model, and their messages
// of that time get the next step's inputs.
type bridge struct {
	period float64
	log    *slog.Logger
	outs   []ports.Element // the FMU's outputs, in value reference order
	ins    []ports.Element // its inputs
	held   []float64       // the master's inputs of the step in progress (the loop's)
	out    []float64       // the outputs at the end of the step (written before ended is sent)

	orders chan order    // the master's next step
	ended  chan int64    // a step ended, at the message of this index
	stop   chan struct{} // closed: no more steps (terminated, the master gone)

	started bool
	t0      float64 // the model time of message 0
	last    float64 // the model time of the latest message
	expect  int64   // the index the next message should have
	end     int64   // the index of the message that ends the step in progress
	tail    bool    // the step in progress is the last, a tail (order)
	past    bool    // the last step (a tail) is over: messages wait for the end

	arrived  atomic.Int64 // when the latest message came (unix ns)
	restarts atomic.Int64
	fault    atomic.Pointer[error] // BeamNG lost: neutral controls, a fault
	over     atomic.Pointer[error] // the master ended the simulation: neutral controls, not a fault
}

// order is the master's step: its end (the index of the message that ends
// it) and its inputs; tail: it is the last step, which ends at the stop
// time before the next message, so that the message of its end is
// released at once with its inputs (span).
type order struct {
	end    int64
	tail   bool
	inputs []float64
}

func newBridge(period float64, outs, ins []ports.Element, log *slog.Logger) *bridge {
	return &bridge{period: period, log: log, outs: outs, ins: ins,
		held: make([]float64, len(ins)), out: make([]float64, len(outs)),
		orders: make(chan order), ended: make(chan int64, 1), stop: make(chan struct{})}
}

// Step couples one BeamNG message (see bridge).
func (b *bridge) Step(t float64, outs, ins [][]float64) bool {
	b.arrived.Store(time.Now().UnixNano())
	if b.fault.Load() != nil || b.over.Load() != nil {
		return false
	}
	if b.past {
		// After the master's last step, as after any step, a message
		// waits for a step that does not come: the master terminates
		// (neutral controls). It leaves the step's outputs as they were.
		<-b.stop
		return false
	}
	switch {
	case !b.started:
		b.started, b.t0 = true, t
	case t < b.last:
		// BeamNG started its coupling again (its ids from 0): its time
		// starts over, the master's goes on. This message takes the
		// place of the one expected.
		b.t0 = t - float64(b.expect)*b.period
		b.restarts.Add(1)
		b.log.Warn("BeamNG started its coupling again (a reloaded controller, a restarted scenario): its time starts over, the FMU's goes on; the car is where BeamNG put it",
			"fmu_time_index", b.expect)
	}
	b.last = t
	k := int64(math.Round((t - b.t0) / b.period))
	for k >= b.end {
		for i, e := range b.outs {
			b.out[i] = e.Get(outs)
		}
		select {
		case b.ended <- k:
		case <-b.stop:
			return false
		}
		if b.tail {
			// The last step ends before the next message: this one goes
			// with its inputs, and the next waits for a step that does
			// not come.
			b.past = true
			break
		}
		select {
		case o := <-b.orders:
			b.end, b.tail = o.end, o.tail
			copy(b.held, o.inputs)
		case <-b.stop:
			return false
		}
	}
	for i, e := range b.ins {
		ins[e.Port][e.Elem] = b.held[i]
	}
	b.expect = k + 1
	return true
}

// Reset: the master is the model, and beamconnect cannot start it over.
// By design its time goes on when BeamNG starts its coupling again (Step
// places BeamNG's new time under the master's), which is the export's
// documented answer to a restart, not a model that kept a state it
// should have dropped.
func (b *bridge) Reset() error { return nil }

// Fault is BeamNG lost: from then on BeamNG gets neutral controls, never
// the master's last inputs.
func (b *bridge) Fault() error {
	if e := b.fault.Load(); e != nil {
		return *e
	}
	return nil
}

// Ended is the master ending the simulation (it terminated the FMU, or
// its process ended): BeamNG gets neutral controls, and it is no fault.
func (b *bridge) Ended() error {
	if e := b.over.Load(); e != nil {
		return *e
	}
	return nil
}

// lose says BeamNG is lost.
func (b *bridge) lose(err error) { b.fault.CompareAndSwap(nil, &err) }

// finish ends the simulation: no step waits any more.
func (b *bridge) finish(err error) {
	if b.over.CompareAndSwap(nil, &err) {
		close(b.stop)
	}
}

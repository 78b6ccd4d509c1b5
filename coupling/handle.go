package coupling

import (
	"net/netip"
	"time"

	"beamconnect/recording"
)

// handle answers one datagram if it is BeamNG's message.
func (l *Link) handle(d []byte, from netip.AddrPort, arrival time.Time, rxAt int64) {
	id, whole, ok := l.accept(d, from, arrival)
	if !ok {
		return
	}
	a := l.step(id, arrival, whole)
	stepped := l.clock.Now()
	if a.late {
		// The step took so long that BeamNG has timed out and moved on.
		l.stats.inc(Late)
		return
	}
	l.lockstep.observe(id, rxAt, arrival)
	// Master time sync: the reply waits for its time, so BeamNG, which
	// blocks when its window is full, cannot run ahead of the local clock.
	paced := l.sim.Paced
	waited := l.sim.Hold(id)
	if l.sim.Paced != paced {
		l.stats.Pacing.Observe(l.sim.LastError)
	}
	sentAt := stepped
	if waited > 0 {
		sentAt = l.clock.Now()
	}
	if err := l.send(a.datagram); err != nil {
		l.log.Warn("reply failed", "err", err)
		return
	}
	l.sent(l.reply)
	l.lockstep.replied(id, sentAt)
	l.stats.inc(Replies)
	if a.neutral {
		l.stats.inc(NeutralReplies)
	}
	l.stats.Turnaround.Observe(l.clock.Now().Sub(arrival) - waited)
	if l.opt.OnMessage != nil {
		l.opt.OnMessage(l.index, id, l.reply[0])
	}
}

// observed hands the message's step to whatever watches the run: the
// recording and the scope. They show what the reply carries, value for
// value, as step encoded it: this vehicle's controls from the reply
// (clamped, or neutral, "keep" as BeamNG gets it), the other vehicles' as
// the model wrote them in this step, and the model's own variables as the
// step left them. Their time is BeamNG's simulation time of the message.
// Under the stage's lock, in the step, so no other vehicle's step comes
// in between.
func (l *Link) observed(st *stage, id float64) {
	o := l.opt
	if o.Record == nil && o.Scope == nil {
		return
	}
	st.sample()
	ins := l.wireInputs()
	if o.Record != nil {
		e := &l.entry
		*e = recording.Entry{Time: l.simTime, LocalTime: l.sim.Local(), Vehicle: l.index, Status: int(l.reported()),
			ID: id, ReplyID: l.reply[0], Reloads: st.stats.Get(Reloads),
			Outputs: st.outs, Inputs: ins, Setpoints: st.loops.set, Model: st.modelVals, VariablesPending: st.vars.pending()}
		o.Record.Row(e)
	}
	if o.Scope != nil {
		o.Scope.Push(l.simTime, st.outs, ins, st.loops.group, st.modelGroup)
	}
}

// wireInputs is the input ports as the reply carries them: this vehicle's
// fields from the reply's slots, the other vehicles' as the model wrote
// them. Under the stage's lock.
func (l *Link) wireInputs() [][]float64 {
	st := l.stage
	if len(l.wire) != len(st.ins) {
		l.wire = make([][]float64, len(st.ins)) // a reload changed the ports
	}
	for pn, v := range st.ins {
		l.wire[pn] = append(l.wire[pn][:0], v...)
	}
	for pn := range l.plan.Inputs[1:] {
		port := &l.plan.Inputs[pn+1]
		for fi := range port.Fields {
			f := &port.Fields[fi]
			if f.Vehicle == l.index && f.Width > 0 {
				copy(l.wire[port.Number][f.Offset:f.Offset+f.Width], l.reply[f.Slot:f.Slot+f.Width])
			}
		}
	}
	return l.wire
}

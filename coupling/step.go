package coupling

import (
	"math"
	"time"

	"beamconnect/beamng"
	"beamconnect/contracts"
	"beamconnect/ports"
)

// answer is what step made of one accepted message.
type answer struct {
	datagram []byte // the reply (valid until the next step)
	neutral  bool   // it carries neutral controls, not the model's
	late     bool   // the step took so long that BeamNG has given up on it
}

// step answers BeamNG message id: the contracts that are due fill the
// output ports, the model steps, and its controls go into the reply only
// when it computed them from this message's data; otherwise the reply
// carries neutral controls and the reason is counted: a message that lacks
// data the model reads (whole is false), another vehicle's data the model
// reads stale or not there yet, a model that computed nothing in time, a
// model fault. It allocates nothing.
func (l *Link) step(id float64, arrival time.Time, whole bool) answer {
	t := l.sim.Message(id, arrival)
	l.stats.localTime.Store(math.Float64bits(t))

	st := l.enter()
	replyID := l.ids.next(id, &l.lockstep)
	mt := st.place(l.index, id, l.restarted)
	l.simTime = st.clock.axis(mt) // the recording's time of this message
	l.restarted = false
	if whole {
		st.capture(l.index, &l.slots, l.msg)
		l.fillOutputs(id, t)
	}
	l.checkOverdue(t)
	why, ok := ShortMessages, false
	if whole {
		why, ok = st.step(l.index, id, mt)
		st.loops.observe(l.index, mt, st.outs, st.ins) // judged in simulation time
	}
	if ok {
		l.fillReply(id)
	} else {
		copy(l.reply, l.neutral)
		if why != ShortMessages {
			l.stats.inc(why) // short messages were counted when taken
		}
	}
	l.reply[0] = replyID
	// "Keep" resolved to what BeamNG has; l.last becomes this reply only
	// once it is sent (handle), as it may be withheld.
	l.proto.Resolve(l.reply, l.last)
	l.ids.sent(replyID)
	a := answer{neutral: !ok}
	a.datagram, _ = beamng.Encode(l.tx, l.reply) // tx is sized for the reply
	// A reply later than BeamNG waits is withheld, and not recorded; any
	// other is recorded here, before another vehicle's step can change
	// what the model wrote: the row is the reply as encoded.
	if a.late = l.clock.Now().Sub(arrival) >= RebaseGap; !a.late {
		l.observed(st, id)
	}
	st.leave()
	l.report() // the step may have faulted or healed the model
	return a
}

// fillOutputs writes this vehicle's fields of the output ports whose
// incoming contract is due, from the message and the contract's meta
// values.
func (l *Link) fillOutputs(id, t float64) {
	p := l.plan
	remote := id * p.Period
	for ci := range p.Contracts {
		ct := &p.Contracts[ci]
		if ct.Dir != beamng.FromBeamNG {
			continue
		}
		due := ct.Schedule.Due(uint64(id))
		if !ct.CommData && !due {
			continue
		}
		if !ct.CommData {
			l.in[ci].Update(id, remote, t)
		}
		for _, pn := range ct.Ports {
			l.fill(&p.Outputs[pn], l.stage.outs[pn], &l.in[ci])
		}
	}
}

// fill writes one output port's fields of this vehicle.
func (l *Link) fill(port *ports.Port, v []float64, ct *contracts.Incoming) {
	for fi := range port.Fields {
		f := &port.Fields[fi]
		if f.Vehicle != l.index {
			continue // another vehicle's data: its own link fills it
		}
		switch f.Source {
		case ports.Slot:
			for k := range f.Width {
				x := l.msg[f.Slot+k]
				if x-x != 0 { // NaN or ±Inf
					x = f.Invalid
				}
				v[f.Offset+k] = x
			}
		case ports.Relative:
			v[f.Offset] = l.stage.relative(f)
		case ports.Meta:
			switch f.Meta {
			case contracts.Time:
				v[f.Offset] = ct.RemoteTime
			case contracts.ReceiveTimeOffset:
				v[f.Offset] = ct.ReceiveTimeOffset()
			case contracts.SerialNumber:
				v[f.Offset] = ct.Serial
			case contracts.PingResults:
				l.pingResults(v[f.Offset : f.Offset+f.Width])
			}
		}
	}
}

// fillReply writes the outgoing contracts that are due into the reply:
// their fields' port values, and NaN ("keep") where a contract is not due
// or the model wrote models.Keep; where BeamNG has no NaN filter (Gen 2)
// Resolve then sends the last value instead.
func (l *Link) fillReply(id float64) {
	p := l.plan
	copy(l.reply, p.Vehicles[l.index].Template)
	for ci := range p.Contracts {
		ct := &p.Contracts[ci]
		if ct.Dir != beamng.ToBeamNG {
			continue
		}
		due := ct.Schedule.Due(uint64(id - l.ids.base))
		for _, pn := range ct.Ports {
			port := &p.Inputs[pn]
			for fi := range port.Fields {
				f := &port.Fields[fi]
				if f.Vehicle != l.index {
					continue // another vehicle's control
				}
				for k := range f.Width {
					v := math.NaN()
					if due {
						// Finite, or models.Keep: the step checked (a NaN
						// there is a fault). Keep is NaN on the wire, which
						// Gen 1 keeps; Resolve gives Gen 2 the last value.
						v = l.clamp(f, f.Slot+k, l.stage.ins[pn][f.Offset+k])
					}
					l.reply[f.Slot+k] = v
				}
			}
		}
	}
}

// clamp keeps a control within the range BeamNG documents for it (the
// pedals 0 to 1, the steering −1 to 1): a value beyond it is counted, and
// warned about once per field, naming the field and the value. NaN and
// ±Inf pass: Sendable deals with them.
func (l *Link) clamp(f *ports.Field, slot int, v float64) float64 {
	lo, hi := l.lo[slot], l.hi[slot]
	if v >= lo && v <= hi || v-v != 0 { // in range, or not a number: Sendable's
		return v
	}
	l.stats.inc(Clamped)
	if !l.clamped[slot] {
		l.clamped[slot] = true
		l.log.Warn("the model's control is beyond what BeamNG accepts: clamped (counted; said once per field)",
			"field", f.Name, "value", v, "range", [2]float64{lo, hi})
	}
	return min(max(v, lo), hi)
}

// checkOverdue rolls this vehicle's incoming contracts' blocked states up.
func (l *Link) checkOverdue(t float64) {
	var n int64
	for ci := range l.plan.Contracts {
		ct := &l.plan.Contracts[ci]
		if ct.Dir == beamng.FromBeamNG && !ct.CommData && l.in[ci].Check(t) {
			n++
		}
	}
	if l.stats.Get(Overdue) != n { // a gauge read by other goroutines: written only when it moves
		l.stats.Set(Overdue, n)
	}
}

// PingResultsLayout documents the ping_results commData port.
const PingResultsLayout = `ping_results (a commData meta field; arraySize up to 8, in this order):
  [0] turnaround of the previous message: read to reply written, s
  [1] time between the last two BeamNG messages, s
  [2] BeamNG messages handled
  [3] replies sent
  [4] datagrams dropped (foreign host or port, wrong size, malformed, duplicate, id jump)
  [5] BeamNG 2 s stalls recovered (reply ids re-based)
  [6] turnaround median so far, s
  [7] turnaround 99th percentile so far, s
Elements past 8 stay NaN.`

func (l *Link) pingResults(v []float64) {
	s := &l.stats
	var dropped int64
	for _, k := range droppedCounters {
		dropped += s.Get(k)
	}
	vals := [8]float64{
		s.Turnaround.Last().Seconds(),
		l.interArrival.Seconds(),
		float64(s.Get(Messages)),
		float64(s.Get(Replies)),
		float64(dropped),
		float64(s.Get(StallsRecovered)),
		s.Turnaround.Quantile(0.5).Seconds(),
		s.Turnaround.Quantile(0.99).Seconds(),
	}
	for i := range v {
		if i < len(vals) {
			v[i] = vals[i]
		} else {
			v[i] = math.NaN()
		}
	}
}

// Blocked is VS Connect's roll-up: the node (and this link) is blocked when
// any incoming contract is.
func (l *Link) Blocked() bool { return l.stats.Get(Overdue) > 0 }

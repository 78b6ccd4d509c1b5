package coupling

import (
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"time"

	"beamconnect/beamng"
	"beamconnect/ports"
)

// replier is what a link sends BeamNG: each reply's id (replyIDs, and the
// lockstep watchdog that adjusts it), the reply itself, built from the
// model's controls or neutral ones and encoded, and what BeamNG has of
// the replies sent (last, owed).
type replier struct {
	log      *slog.Logger
	stats    *Stats
	sock     *socket
	proto    *beamng.Protocol
	ids      replyIDs
	lockstep lockstep
	reply    []float64
	tx       []byte
	neutral  []float64 // the reply's values when the model's cannot be trusted
	lo, hi   []float64 // per reply slot, the range BeamNG documents for its control (±Inf: none)
	clamped  []bool    // per reply slot: a value beyond its range was warned about
	last     []float64 // the last reply's values, which BeamNG has
	owed     bool      // BeamNG's latest message has had no reply yet
	wire     [][]float64
}

func (r *replier) init(log *slog.Logger, stats *Stats, sock *socket, veh ports.Vehicle, policy ports.ReplyID) {
	n := veh.Layout.Len(beamng.ToBeamNG)
	r.log, r.stats, r.sock, r.proto = log, stats, sock, veh.Layout.Protocol
	r.reply, r.tx = make([]float64, n), make([]byte, 8*n)
	r.neutral = veh.Layout.Protocol.Neutral(veh.Layout)
	r.last = slices.Clone(veh.Template) // what BeamNG holds before the first reply, as far as we know
	r.lockstep.init(log, stats, &r.ids, veh.Unanswered)
	r.ids.policy = policy
}

// rebind moves the replies from plan old (nil at the start) to plan p, of
// vehicle v: the reply ids go on under p's policy, and the controls' ranges
// are p's.
func (r *replier) rebind(old, p *ports.Plan, v int) {
	if old != nil && r.ids.switchTo(p.ReplyID) {
		r.log.Warn("reply ids switched to echo: echoed ids lag one behind what BeamNG last applied, so BeamNG will wait 2 s once before it follows them")
	}
	if old == nil || !old.Vehicles[v].Layout.Equal(p.Vehicles[v].Layout) {
		r.lo, r.hi = p.Vehicles[v].Layout.Limits()
		r.clamped = make([]bool, len(r.lo))
	}
}

// build builds and encodes the reply to message id of vehicle v under
// replyID, under the stage's lock: the model's controls when it computed
// them from this message (computed), otherwise neutral ones; "keep"
// resolved to what BeamNG has. last becomes this reply only once it is
// sent, as it may be withheld. The datagram is valid until the next build.
func (r *replier) build(plan *ports.Plan, st *stage, v int, id, replyID float64, computed bool) []byte {
	if computed {
		r.fill(plan, st, v, id)
	} else {
		copy(r.reply, r.neutral)
	}
	r.reply[0] = replyID
	r.proto.Resolve(r.reply, r.last)
	r.ids.sent(replyID)
	b, _ := beamng.Encode(r.tx, r.reply) // tx is sized for the reply
	return b
}

// fill writes the outgoing contracts that are due into the reply: their
// fields' port values, and NaN ("keep") where a contract is not due or the
// model wrote models.Keep; where BeamNG has no NaN filter (Gen 2) Resolve
// then sends the last value instead.
func (r *replier) fill(p *ports.Plan, st *stage, v int, id float64) {
	copy(r.reply, p.Vehicles[v].Template)
	for ci := range p.Contracts {
		ct := &p.Contracts[ci]
		if ct.Dir != beamng.ToBeamNG {
			continue
		}
		due := ct.Schedule.Due(uint64(id - r.ids.base))
		for _, pn := range ct.Ports {
			port := &p.Inputs[pn]
			for fi := range port.Fields {
				f := &port.Fields[fi]
				if f.Vehicle != v {
					continue // another vehicle's control
				}
				for k := range f.Width {
					x := math.NaN()
					if due {
						// Finite, or models.Keep: the step checked (a NaN
						// there is a fault). Keep is NaN on the wire, which
						// Gen 1 keeps; Resolve gives Gen 2 the last value.
						x = r.clamp(f, f.Slot+k, st.ins[pn][f.Offset+k])
					}
					r.reply[f.Slot+k] = x
				}
			}
		}
	}
}

// clamp keeps a control within the range BeamNG documents for it (the
// pedals 0 to 1, the steering −1 to 1): a value beyond it is counted, and
// warned about once per field, naming the field and the value. NaN and
// ±Inf pass: Sendable deals with them.
func (r *replier) clamp(f *ports.Field, slot int, v float64) float64 {
	lo, hi := r.lo[slot], r.hi[slot]
	if v >= lo && v <= hi || v-v != 0 { // in range, or not a number: Sendable's
		return v
	}
	r.stats.inc(Clamped)
	if !r.clamped[slot] {
		r.clamped[slot] = true
		r.log.Warn("the model's control is beyond what BeamNG accepts: clamped (counted; said once per field)",
			"field", f.Name, "value", v, "range", [2]float64{lo, hi})
	}
	return min(max(v, lo), hi)
}

// sent notes that the reply built went out: BeamNG has its values now,
// and its latest message is answered.
func (r *replier) sent() {
	copy(r.last, r.reply)
	r.owed = false
}

// wireInputs is the input ports as the reply carries them: vehicle v's
// fields from the reply's slots, the other vehicles' as the model wrote
// them. Under the stage's lock.
func (r *replier) wireInputs(p *ports.Plan, st *stage, v int) [][]float64 {
	if len(r.wire) != len(st.ins) {
		r.wire = make([][]float64, len(st.ins)) // a reload changed the ports
	}
	for pn, x := range st.ins {
		r.wire[pn] = append(r.wire[pn][:0], x...)
	}
	for pn := range p.Inputs[1:] {
		port := &p.Inputs[pn+1]
		for fi := range port.Fields {
			f := &port.Fields[fi]
			if f.Vehicle == v && f.Width > 0 {
				copy(r.wire[port.Number][f.Offset:f.Offset+f.Width], r.reply[f.Slot:f.Slot+f.Width])
			}
		}
	}
	return r.wire
}

// neutralReply builds the neutral reply of a link letting go, and takes it
// as sent. BeamNG applies a reply only if its id is above the highest it
// applied. With BeamNG's latest message unanswered, the neutral reply
// answers it (the next id). With it answered by a reply as neutral, that
// reply goes again under its own id, which BeamNG drops unless the first
// was lost on the way: its window stays as it was, and a session that
// takes over (Handover) answers its next message under the id it expects.
// Otherwise the neutral reply takes the next id, which BeamNG applies at
// once and counts as the answer to its next message.
func (r *replier) neutralReply() []byte {
	id := r.ids.last + 1
	r.neutralInto(id)
	if !r.owed && slices.EqualFunc(r.reply[1:], r.last[1:], sameValue) {
		id = r.ids.last
	}
	b := r.neutralInto(id)
	r.ids.sent(id)
	r.sent()
	return b
}

// sameValue is equality of two values of a reply, NaN ("keep") equal to
// itself.
func sameValue(a, b float64) bool { return a == b || a != a && b != b }

// neutralInto fills the reply with neutral controls under id, "keep"
// resolved to what BeamNG has, and encodes it.
func (r *replier) neutralInto(id float64) []byte {
	copy(r.reply, r.neutral)
	r.reply[0] = id
	r.proto.Resolve(r.reply, r.last)
	b, _ := beamng.Encode(r.tx, r.reply)
	return b
}

// again sends the last reply again, to message id, under the id the reply
// ids were gives it (the ids before a re-base, the highest sent kept): the
// id BeamNG expects after a pause. It reports the reply id.
func (r *replier) again(was replyIDs, id float64, now time.Time) (float64, error) {
	highest := r.ids.max
	r.ids = was
	r.ids.max = highest
	replyID := r.ids.next(id, &r.lockstep)
	r.reply[0] = replyID
	b, _ := beamng.Encode(r.tx, r.reply) // the reply to id, as sent, under the id BeamNG expects
	if err := r.sock.send(b); err != nil {
		return replyID, err
	}
	r.ids.sent(replyID)
	r.sent()
	r.lockstep.replied(id, now)
	return replyID, nil
}

// replyIDs gives each reply its id, by policy. BeamNG applies a reply only
// when its id is above the highest it applied, and its window expects the
// reply id to be the number of messages it has sent since its last reset:
// received id + 1 from a fresh start.
type replyIDs struct {
	policy  ports.ReplyID
	base    float64 // BeamNG id that reply ids count from (after a reset)
	counter float64 // replies since the base ("counter")
	last    float64 // the last reply id sent
	max     float64 // the highest reply id ever sent
}

// next is the id of the reply to message id: "next" is the messages
// answered since the base, counting from 1 (id + 1 from a fresh start);
// "counter" counts replies from 1; "echo" is the received id, as the
// S-function sends it. Echo is for compatibility and never re-based: an
// echoed id one below BeamNG's restarted window counter would be rejected,
// stalling BeamNG again every 2 s. While the lockstep watchdog repairs
// BeamNG's window, it adjusts next and counter ids (below).
func (r *replyIDs) next(id float64, lock *lockstep) float64 {
	var n float64
	switch r.policy {
	case ports.ReplyEcho:
		return id
	case ports.ReplyCounter:
		r.counter++
		n = r.counter
	default:
		n = id - r.base + 1
	}
	return lock.adjust(n)
}

// sent records the id of a reply that went out.
func (r *replyIDs) sent(id float64) {
	r.last = id
	r.max = max(r.max, id)
}

// switchTo changes the policy of a running link (a reload) so the ids go
// on from the last one sent: a counter starts above it. It reports whether
// the change costs BeamNG a 2 s stall: echoed ids lag one behind what
// BeamNG last applied, so it rejects the first and waits out its timeout.
func (r *replyIDs) switchTo(p ports.ReplyID) (stall bool) {
	if p == r.policy {
		return false
	}
	old := r.policy
	r.policy = p
	if p == ports.ReplyCounter {
		r.counter = r.last
	}
	return p == ports.ReplyEcho && old != ports.ReplyEcho
}

// rebase restarts the reply ids at BeamNG message id, so they track the
// window counter BeamNG just restarted.
func (r *replyIDs) rebase(id float64) { r.base, r.counter = id, 0 }

// The lockstep watchdog.
//
// In lockstep BeamNG lets `unanswered` messages be in flight (one, by
// default) and blocks for the reply before it sends more (spec §4), so it
// can never send message m before the reply to message m-unanswered went
// out. When it does (the kernel stamps every datagram's arrival), BeamNG is
// no longer waiting for us: it is running free, usually because a late
// reply of ours with a high id was accepted after its 2 s timeout had
// reset its window (a reply reordered or delayed on the network), or
// because another program answers it. Its window is then negative, it
// never blocks, and it rejects our replies until its send counter catches
// up with the stale id: for as long as the run had lasted.
//
// The repair the protocol allows: BeamNG applies a reply whose id is above
// the highest it has applied, and its window compares that id with a count
// of whole messages. So while its window is repaired, each reply's id is
// just above the highest BeamNG can hold: above every id sent so far, then
// a 1/1024 more each time. BeamNG applies every reply (the model's controls
// reach the car at the full rate) while its send count gains a whole
// message on the highest id it holds with each one, until the ids meet its
// count again and it waits for every reply as before: as many messages as
// the gap. A 2 s timeout of BeamNG's resets its window too (the ids are
// re-based then).
//
// Seeing BeamNG run ahead needs it to be faster than the round trip: in
// BeamNG's per-frame batches of physics steps it usually is; a BeamNG whose
// steps are slower than our replies runs free unseen (and harmlessly, while
// our replies are accepted). Non-Linux systems do not stamp arrivals: the
// watchdog is off there.

// lockstepWindow is how many recent messages the evidence is counted over,
// and lockstepEvidence how many of them must show BeamNG running ahead.
const (
	lockstepWindow   = 32
	lockstepEvidence = 3
	// lockstepQuiet is how many messages with no sign of running ahead,
	// after a repair, bring the episode to an end.
	lockstepQuiet = 64
	// repairEvery bounds how often a repair starts: if another program is
	// answering BeamNG with higher ids, jumping again does not help.
	repairEvery = 10 * time.Second
)

type lockstep struct {
	log    *slog.Logger
	stats  *Stats
	ids    *replyIDs   // the link's reply ids: the repair jumps above the highest sent
	window int         // BeamNG's unanswered
	sent   []sentReply // ring, by message id: when its reply went out
	// evidence has one bit per recent message, newest lowest: 1 when BeamNG
	// sent it before the reply it should have waited for.
	evidence   uint64
	lost       bool
	since      time.Time
	quiet      int
	repairing  bool    // BeamNG's window is being repaired
	top        float64 // the last reply id of the repair: the highest BeamNG holds
	lastNormal float64 // the last reply id the policy gave, before adjusting
	lastRepair time.Time
	// suspected: BeamNG's reloaded controller ran ahead from its start
	// (takeSource): the repair starts at the next message, seen or not.
	suspected bool
}

type sentReply struct {
	id float64 // BeamNG message id answered; -1: none
	at int64   // unix ns the reply was handed to the socket
}

func (w *lockstep) init(log *slog.Logger, stats *Stats, ids *replyIDs, window int) {
	w.log, w.stats, w.ids = log, stats, ids
	w.window = max(window, 1)
	w.sent = make([]sentReply, min(w.window, 256))
	w.reset()
}

// reset forgets the replies sent: BeamNG's window restarted (its 2 s
// timeout, a reload, a new session), so what came before tells nothing.
// A repair in progress ends too, since its ids were counted against the
// old window.
func (w *lockstep) reset() {
	for i := range w.sent {
		w.sent[i].id = -1
	}
	w.evidence, w.repairing = 0, false
}

func (w *lockstep) slot(id float64) *sentReply {
	return &w.sent[uint64(id)%uint64(len(w.sent))]
}

// replied records when the reply to message id went out.
func (w *lockstep) replied(id float64, at time.Time) {
	if w.window > len(w.sent) {
		return
	}
	*w.slot(id) = sentReply{id, at.UnixNano()}
}

// observe looks at the message just handled (before its reply goes out):
// did it arrive before the reply BeamNG should have waited for?
func (w *lockstep) observe(id float64, rxAt int64, now time.Time) {
	if w.suspected {
		w.suspected = false
		if !w.lost {
			w.lose(id, -1, 0, now)
		}
		return
	}
	if rxAt == 0 && w.lost && !w.repairing {
		// No arrival times to see it by: the repair has closed the gap,
		// so BeamNG waits for every reply again.
		w.regain(now, "the repair closed BeamNG's window gap")
	}
	if rxAt == 0 || w.window > len(w.sent) {
		return // no arrival times, or a window too wide to track
	}
	prev := id - float64(w.window)
	ahead := false
	if prev >= 0 {
		r := w.slot(prev)
		ahead = r.id == prev && rxAt < r.at
	}
	w.evidence <<= 1
	if ahead {
		w.evidence |= 1
	}
	recent := bits.OnesCount64(w.evidence & (1<<lockstepWindow - 1))
	switch {
	case !w.lost && ahead && recent >= lockstepEvidence:
		w.lose(id, prev, recent, now)
	case w.lost && ahead:
		w.quiet = 0
	case w.lost && !w.repairing:
		if w.quiet++; w.quiet >= lockstepQuiet {
			w.regain(now, "BeamNG waits for every reply again")
		}
	}
}

// lose starts an episode out of lockstep at message id: seen sent before
// the reply to message prev, recent times of the last lockstepWindow; or,
// with prev -1, suspected.
func (w *lockstep) lose(id, prev float64, recent int, now time.Time) {
	w.lost, w.since, w.quiet = true, now, 0
	w.stats.inc(LockstepLost)
	w.stats.lockstepSince.Store(now.UnixNano())
	args := []any{"message", id, "sent_before_the_reply_to", prev, "in_the_last", lockstepWindow, "times", recent,
		"likely", "a late reply of ours was accepted after BeamNG's 2 s timeout reset its window (reordered or delayed on the network), or another program answers BeamNG"}
	if prev < 0 {
		args = []any{"message", id, "likely", "BeamNG's reloaded controller took a late reply of ours to its old self as its own: it sent more than its window allows before any reply to it"}
	}
	if w.ids.policy == ports.ReplyEcho || now.Sub(w.lastRepair) < repairEvery {
		w.log.Warn("BeamNG is no longer in lockstep: it sends without waiting for the replies, which it may be rejecting", args...)
		return
	}
	w.lastRepair = now
	// From the next message: reply ids just above every id sent so far.
	w.repairing, w.top = true, w.ids.max
	w.log.Warn("BeamNG is no longer in lockstep: it sends without waiting for the replies, which it may be rejecting; repairing its window: reply ids just above every id sent, so every reply applies, until BeamNG's count meets them",
		append(args, "gap_messages", w.ids.max-w.lastNormal)...)
}

func (w *lockstep) regain(now time.Time, why string) {
	d := now.Sub(w.since)
	w.lost = false
	w.stats.add(OutOfLockstep, int64(d))
	w.stats.lockstepSince.Store(0)
	w.log.Info("BeamNG is back in lockstep", "why", why, "after", d.Round(time.Millisecond))
}

// suspect is told that BeamNG's reloaded controller sent more messages
// than its window allows before any reply to it: it took a reply of ours
// to its old self, late on the network, as its own, and runs ahead. The
// repair starts at once, whether arrival times show it or not.
func (w *lockstep) suspect() { w.suspected = true }

// rebased is told that the reply ids were re-based because BeamNG's window
// restarted: a lost lockstep ends there.
func (w *lockstep) rebased(now time.Time) {
	if w.lost {
		w.regain(now, "BeamNG's window restarted")
	}
	w.reset()
}

// repairStep is how far above the previous one each reply id of a repair
// is: a fraction, so that BeamNG applies every reply while its count of
// whole messages catches up (a power of two: the sums stay exact).
const repairStep = 1.0 / 1024

// adjust turns the policy's reply id r into the one sent, while a repair
// is in progress.
func (w *lockstep) adjust(r float64) float64 {
	w.lastNormal = r
	if !w.repairing {
		return r
	}
	if r > w.top {
		// The ids meet BeamNG's count again: it waits for every reply.
		w.repairing = false
		return r
	}
	w.top += repairStep
	return w.top
}

// end closes an open episode when the run ends.
func (w *lockstep) end(now time.Time) {
	if w.lost {
		w.stats.add(OutOfLockstep, int64(now.Sub(w.since)))
		w.stats.lockstepSince.Store(0)
		w.stats.openAtEnd.Store(true)
		w.lost = false
	}
}

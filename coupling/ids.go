package coupling

import (
	"beamconnect/ports"
	"time"
)

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
// BeamNG's window, it adjusts next and counter ids (lockstep.go).
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

// rebase restarts the reply ids at BeamNG message id, so they track the
// window counter BeamNG just restarted, and restarts the master schedule
// there, so a stall is not followed by a burst.
func (l *Link) rebase(id float64, now time.Time) {
	l.ids.rebase(id)
	l.sim.Anchor(id, now)
	l.lockstep.rebased(now)
}

package coupling

import (
	"fmt"
	"time"

	"beamconnect/ports"
)

// How a silence of BeamNG ends. BeamNG falls silent while connected for
// reasons that need different reply ids afterwards:
//
//   - its own 2 s wait for a reply it has not had (a reply or a message
//     lost, a reply too late): it reset its window, so the reply ids are
//     re-based to count from its next message (reply.go);
//   - a pause (its physics paused, a hitch, a debugger): it goes on where it
//     left off, with its window as it was, so the ids go on too; a re-base
//     would be rejected and cost a 2 s stall;
//   - its stop: the silence still open when beamconnect is stopped (finish).
//
// BeamNG waits only for a reply it has not had. So a silence whose first
// message is the next id (nothing lost), while every message before it was
// answered, was a pause: a note, not a fault. Except when it lasted as long
// as BeamNG's own wait (rebaseGap to stallGap, 1.9 to 2.3 s), where a reply
// lost on the way looks the same: there the ids are re-based on the likelier
// cause, the wait, and the guess is checked by what BeamNG does next (with a
// window of one message). After its wait it takes the re-based reply and
// sends its next message within a period or two; after a pause it rejects
// it and blocks for the reply it expects, which is then sent again with
// that id, guessWait after, well before its own 2 s are up. A silence with
// ids lost, or more messages queued than its window lets it send unanswered,
// had BeamNG waiting: a stall, re-based as before.

// guessWait bounds how long BeamNG may take to send its next message after
// a re-based reply it took (a period, and a frame or a hitch of its
// physics), and so how long a BeamNG that paused waits for the reply it
// expects: at least this, and sourcePeriods periods.
const guessWait = 250 * time.Millisecond

// maxGuessWait is the longest check of a guess that still leaves BeamNG's
// 2 s wait room for the reply sent again (a period longer than a tenth of
// it: the silence is taken for BeamNG's wait, as it likely is).
const maxGuessWait = 1500 * time.Millisecond

// silenceGuess is a silence of about BeamNG's own 2 s that ended with
// nothing lost: re-based as its wait, until BeamNG's next move says.
type silenceGuess struct {
	phase  guessPhase
	id     float64       // the message that ended the silence
	at     time.Time     // when it came (guessing), or when its reply went again (resent)
	gap    time.Duration // the silence
	silent bool          // the silence was long enough to be said ("BeamNG went silent")
	ids    replyIDs      // the reply ids before the re-base
}

type guessPhase uint8

const (
	noGuess  guessPhase = iota
	guessing            // re-based as BeamNG's wait; its next message soon says it took the reply
	resent              // BeamNG did not go on: the reply sent again with the ids as before (a pause?)
)

// resumedWhole reports whether BeamNG's message id, the first after a
// silence, goes on where BeamNG left off: the next id, nothing lost, no more
// queued than its window lets it send unanswered, and the message before
// answered. BeamNG had no reply to wait for: its silence was a pause. (The
// message before may be the session before's, taken over: lastArrival.)
func (in *inbox) resumedWhole(id float64) bool {
	first, queued := id, int64(1)
	if in.drainN > 0 {
		first, queued = in.drainLow, in.drainN
	}
	return !in.lastArrival.IsZero() && first == in.lastID+1 && queued <= int64(in.out.lockstep.window) && !in.out.owed
}

// endSilence classifies message id, which ends a silence of gap (at least
// rebaseGap) from BeamNG's latched port, and re-bases the reply ids when
// BeamNG reset its window.
func (in *inbox) endSilence(id float64, gap time.Duration, now time.Time) (pause bool) {
	switch {
	case !in.resumedWhole(id):
		in.stall(gap, in.silent, id, now)
		in.rebase(id, now)
	case gap >= stallGap:
		return true // longer than BeamNG ever waits, and nothing lost: a pause
	case in.out.ids.policy == ports.ReplyEcho || in.out.lockstep.window > 1 || in.guessWait() > maxGuessWait:
		// No check possible: echoed ids are never re-based, and with a
		// wider window BeamNG sends on either way. Its wait is the likelier.
		in.stall(gap, in.silent, id, now)
		in.rebase(id, now)
	default:
		in.guess = silenceGuess{phase: guessing, id: id, at: now, gap: gap, silent: in.silent, ids: in.out.ids}
		in.log.Debug("BeamNG was silent for about its own 2 s wait, nothing lost: re-basing reply ids, checking it was not a pause",
			"gap", gap.Round(time.Millisecond), "id", id)
		in.rebase(id, now)
	}
	return false
}

// guessWait is how long BeamNG may take to send on after a reply it took.
func (in *inbox) guessWait() time.Duration {
	return max(guessWait, sourcePeriods*seconds(in.plan.Period))
}

// stall counts one of BeamNG's 2 s waits for a reply, after which the reply
// ids were re-based; silent says the silence was said.
func (in *inbox) stall(gap time.Duration, silent bool, id float64, now time.Time) {
	in.stats.inc(StallsRecovered)
	in.diag.stalled(now)
	if gap < stallGap && silent {
		in.stats.inc(stallSilences) // the silence was BeamNG's own 2 s timeout
	}
	in.log.Warn("BeamNG waited 2 s for a reply and reset its window: re-basing reply ids",
		"gap", gap.Round(time.Millisecond), "id", id)
}

// paused notes a pause of BeamNG of gap that ended with message id:
// nothing lost, its window as it was, so the reply ids go on and the
// coupling is in lockstep at once. A pause long enough to be said as a
// silence is counted, and noted in the summary; it is not a fault.
func (in *inbox) paused(gap time.Duration, silent bool, id float64, now time.Time) {
	in.sim.Anchor(id, now) // master time sync: no burst to catch up the pause
	if !silent {
		return
	}
	in.stats.inc(Pauses)
	if int64(gap) > in.stats.Get(longestPause) {
		in.stats.Set(longestPause, int64(gap))
	}
	in.log.Info("BeamNG went on where it left off, nothing lost: it paused (not a fault); in lockstep at once",
		"paused_for", gap.Round(time.Millisecond), "id", id)
}

// settleGuess is told of BeamNG's message id, which follows the message
// that opened a guess (or a new coupling session): how soon it came says
// whether BeamNG had reset its window (it took the re-based reply) or had
// paused (it took the reply sent again).
func (in *inbox) settleGuess(id float64, now time.Time) {
	g := &in.guess
	if g.phase == noGuess || id == g.id {
		return
	}
	soon := now.Sub(g.at) < in.guessWait()
	switch {
	case g.phase == resent && soon:
		in.paused(g.gap, g.silent, g.id, now)
	case g.phase == resent:
		// The reply sent again did not help either: BeamNG waited after
		// all (the replies do not reach it?).
		in.stall(g.gap, g.silent, g.id, now)
	default:
		in.stall(g.gap, g.silent, g.id, now)
	}
	g.phase = noGuess
}

// checkGuess, while BeamNG is silent after a re-base on a guess, sends the
// reply again with the ids as before the re-base once BeamNG has not gone
// on for guessWait: it paused, and waits for that reply. It reports whether
// it sent one.
func (in *inbox) checkGuess(now time.Time) bool {
	g := &in.guess
	if g.phase != guessing || now.Sub(g.at) < in.guessWait() {
		return false
	}
	if in.out.owed || in.sock.t == nil {
		// The re-based reply never went out: BeamNG waits for a reply it
		// has not had, as guessed.
		in.stall(g.gap, g.silent, g.id, now)
		g.phase = noGuess
		return false
	}
	// The reply to g.id, as sent, under the id BeamNG expects.
	id, err := in.out.again(g.ids, g.id, now)
	if err != nil {
		in.log.Warn("reply failed", "err", err)
		return false
	}
	g.phase, g.at = resent, now
	in.log.Info("BeamNG did not go on after the re-based reply: it paused rather than waited; its reply sent again with the id it expects",
		"id", g.id, "reply_id", id)
	return true
}

// endGuess ends a guess still open when the run ends, before BeamNG said
// whether it waited or paused: taken for its wait, as guessed.
func (in *inbox) endGuess(now time.Time) {
	if g := &in.guess; g.phase != noGuess {
		in.stall(g.gap, g.silent, g.id, now)
		g.phase = noGuess
	}
}

// rebase restarts the reply ids at BeamNG message id, so they track the
// window counter BeamNG just restarted, and restarts the master schedule
// there, so a stall is not followed by a burst.
func (in *inbox) rebase(id float64, now time.Time) {
	in.out.ids.rebase(id)
	in.sim.Anchor(id, now)
	in.out.lockstep.rebased(now)
}

// pausesNote is the summary's note of BeamNG's pauses, "" for none.
func pausesNote(v *Values) string {
	if v[Pauses] == 0 {
		return ""
	}
	return fmt.Sprintf("BeamNG paused %d times while connected (the longest %.1f s) and went on where it left off, nothing lost: the coupling went on in lockstep at once; a pause is not a fault",
		v[Pauses], time.Duration(v[longestPause]).Seconds())
}

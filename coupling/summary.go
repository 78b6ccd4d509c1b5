package coupling

import (
	"fmt"
	"time"

	"beamconnect/config"
)

// Faults lists, one line each, what went wrong during the run: a run that
// lists nothing was healthy. Read it after Run returns. A run is never
// called healthy when BeamNG was not coupled in lockstep all along: when it
// never connected, stalled, ran out of lockstep, went silent, or when the
// model failed or datagrams that are not BeamNG's came in.
func (c *Coupling) Faults() []string {
	s := &c.stats
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if s.Connects.Load() == 0 {
		if n := s.BindFailures.Load(); n > 0 {
			add("never connected: %v could not be bound (%d tries; see the log for why)", c.local, n)
		} else {
			add("never connected: no message from BeamNG at %v (is BeamNG's coupling started and sending here, from %v?)", c.local, c.remote.Addr())
		}
	} else if n := s.BindFailures.Load(); n > 0 {
		add("the local address could not be bound %d times (each retried)", n)
	}
	out = append(out, s.Problems(c.plan.ReplyID)...)
	if s.Connects.Load() > 0 && Status(s.endLink.Load()) != Connected {
		msg := fmt.Sprintf("BeamNG was not connected when the run ended (status %s)", Status(s.endLink.Load()))
		if d := time.Duration(s.endSilence.Load()); d > 0 {
			msg += fmt.Sprintf(": silent for its last %.1f s", d.Seconds())
		}
		out = append(out, msg)
	}
	return out
}

// Problems lists, one line each, what the counters say went wrong so far:
// datagrams dropped, stalls (less the start-up stall the echo reply-id
// policy keeps on purpose), withheld replies, model faults, lockstep lost,
// silences. It is safe to call while the coupling runs (the live page does);
// Faults adds what only the end of a run can say.
func (s *Stats) Problems(policy config.ReplyID) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if n := s.Foreign.Load(); n > 0 {
		add("%d datagrams that were not BeamNG's (another host, or another port than BeamNG's) were dropped", n)
	}
	if w, m, d, j := s.WrongSize.Load(), s.Malformed.Load(), s.Duplicates.Load(), s.IDJumps.Load(); w+m+d+j > 0 {
		add("%d datagrams from BeamNG's address were dropped as unusable: wrong size %d, malformed id %d, repeated id %d, implausible id jump %d", w+m+d+j, w, m, d, j)
	}
	if n, l := s.ShortMessages.Load(), s.LongMessages.Load(); n+l > 0 {
		add("%d of BeamNG's messages were shorter than the CSV says and %d longer (rows BeamNG could not resolve; see validate's warnings): fields past the end read their invalidValue", n, l)
	}
	if n := s.NonFinite.Load(); n > 0 {
		add("the model wrote NaN or Inf %d times: the last value sent went to BeamNG instead (a Gen 2 BeamNG has no NaN filter)", n)
	}
	stalls := s.StallsRecovered.Load()
	if policy == config.ReplyEcho && stalls > 0 {
		stalls-- // the S-function's start-up stall, which the echo policy keeps on purpose
	}
	if stalls > 0 {
		add("BeamNG stalled %d times, waiting 2 s for a reply (reply ids re-based each time)", stalls)
	}
	if n := s.Late.Load(); n > 0 {
		add("%d replies were withheld: the model's step took longer than BeamNG waits", n)
	}
	if n := s.ModelFaults.Load(); n > 0 {
		add("the model faulted %d times (dead, hung, panicked or answering badly): %d replies carried neutral controls", n, s.NeutralReplies.Load())
	}
	if n := s.LockstepLost.Load(); n > 0 {
		msg := fmt.Sprintf("BeamNG ran out of lockstep %d times, %.3f s in all", n, s.OutOfLockstepTotal().Seconds())
		if s.EndedOutOfLockstep() {
			msg += ", and was still out of lockstep at the end"
		}
		out = append(out, msg)
	}
	if n := s.Silences.Load() - s.stallSilences.Load(); n > 0 {
		add("BeamNG went silent %d times while connected, longer than its own 2 s timeout (its coupling stopped, it paused, or it was lost)", n)
	}
	return out
}

// StatusAtEnd is the connection state when the run was asked to stop,
// before it disconnected.
func (s *Stats) StatusAtEnd() Status { return Status(s.endLink.Load()) }

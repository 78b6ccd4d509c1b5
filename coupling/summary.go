package coupling

import (
	"beamconnect/ports"
	"fmt"
	"time"
)

// Faults lists, one line each, what went wrong for this vehicle during the
// run: never connected, what was diagnosed live (the cause and its fix),
// the counters' problems, and not connected at the end. Read it after Run
// returns.
func (l *Link) Faults() []string {
	s := &l.stats
	out := l.diag.faults(l.clock.Now())
	if s.Get(Connects) == 0 {
		if n := s.Get(BindFailures); n > 0 {
			out = append(out, fmt.Sprintf("never connected: %v could not be bound (%d tries; see the log for why)", l.sock.local, n))
		} else {
			out = append(out, fmt.Sprintf("never connected: no message from BeamNG at %v (is BeamNG's coupling started and sending here, from %v?)", l.sock.local, l.sock.remote.Addr()))
		}
	} else if n := s.Get(BindFailures); n > 0 {
		out = append(out, fmt.Sprintf("the local address could not be bound %d times (each retried)", n))
	}
	v := s.Snapshot()
	for _, p := range v.Problems(string(l.out.ids.policy)) {
		if v[LockstepLost] > 0 && s.endedOutOfLockstep() && p == lockstepLine(&v, LockstepLost, "") {
			p += ", and was still out of lockstep at the end"
		}
		out = append(out, p)
	}
	if end := s.StatusAtEnd(); s.Get(Connects) > 0 && end != ports.Connected && s.Get(stopSilences) == 0 {
		msg := fmt.Sprintf("BeamNG was not connected when the run ended (status %s)", end)
		switch d := time.Duration(s.endSilence.Load()); {
		case s.endWaiting.Load():
			msg += fmt.Sprintf(": silent for its last %.1f s, waiting 2 s for a reply it had not had, or stopped", d.Seconds())
		case d > 0:
			msg += fmt.Sprintf(": silent for its last %.1f s, and the run ended by its duration, which BeamNG was to send throughout (stop beamconnect with Ctrl-C or SIGTERM once BeamNG has stopped, and that is a clean stop)", d.Seconds())
		}
		out = append(out, msg)
	}
	return out
}

// notes lists what the run says that is not a fault: BeamNG paused and went
// on, BeamNG stopped sending some time before beamconnect was stopped (its
// coupling stopped, then beamconnect was). Read it after Run returns.
func (l *Link) notes() []string {
	s := &l.stats
	var out []string
	v := s.Snapshot()
	if n := pausesNote(&v); n != "" {
		out = append(out, n)
	}
	if s.Get(stopSilences) == 0 {
		return out
	}
	return append(out, fmt.Sprintf("BeamNG stopped sending %.1f s before beamconnect was stopped (at local time %.3f s): its coupling stopped, and then beamconnect was; a clean stop, not a fault",
		time.Duration(s.endSilence.Load()).Seconds(), s.LocalTime()))
}

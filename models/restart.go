package models

import "time"

// Restart backoff of a model's process (exec's program, an FMU's host) or,
// in process, of an FMU's instance.
const (
	firstRestart = time.Second
	maxRestart   = 30 * time.Second
	// ranWell is how long a process must have run healthy for its next
	// restart to come after firstRestart again.
	ranWell = 10 * time.Second
)

// backoff paces restarts: 1 s, then twice as long each time up to 30 s,
// and 1 s again after a run that went well.
type backoff struct{ next time.Duration }

func newBackoff() backoff { return backoff{next: firstRestart} }

// ran records how long the process ran and whether it worked meanwhile.
func (b *backoff) ran(d time.Duration, healthy bool) {
	if healthy && d > ranWell {
		b.next = firstRestart
	}
}

// wait sleeps the current delay, then doubles it. It returns false when
// closing ends the wait first.
func (b *backoff) wait(closing <-chan struct{}) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	select {
	case <-t.C:
	case <-closing:
		return false
	}
	b.next = min(2*b.next, maxRestart)
	return true
}

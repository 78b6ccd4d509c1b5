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

// Backoff paces restarts: 1 s, then twice as long each time up to 30 s,
// and 1 s again after a run that went well.
type Backoff struct{ next time.Duration }

// NewBackoff is a backoff whose first wait is 1 s.
func NewBackoff() Backoff { return Backoff{next: firstRestart} }

// Ran records how long the process ran and whether it worked meanwhile.
func (b *Backoff) Ran(d time.Duration, healthy bool) {
	if healthy && d > ranWell {
		b.next = firstRestart
	}
}

// Wait sleeps the current delay, then doubles it. It returns false when
// closing ends the wait first.
func (b *Backoff) Wait(closing <-chan struct{}) bool {
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

// Next is how long the next Wait will sleep.
func (b *Backoff) Next() time.Duration { return b.next }

//go:build unix && !linux

package mailbox

import "time"

// waker where no futex is at hand: the sleeping side looks again every
// 50 µs (a wake is then a no-op). Spinning first keeps a busy handoff fast.
type waker struct{}

func newLocalWaker() (waker, func(), error) { return waker{}, func() {}, nil }

func (waker) wait(_ *Box, _ int, _ uint32, left time.Duration) {
	d := 50 * time.Microsecond
	if left >= 0 && left < d {
		d = left
	}
	time.Sleep(d)
}

func (waker) wake(*Box, int) {}

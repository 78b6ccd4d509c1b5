//go:build !windows

package mailbox

import "time"

// clock reads the monotonic clock, finely enough to time a spin (Go's
// clock: the vDSO's on Linux).
type clock struct{}

var epoch = time.Now()

// now is nanoseconds since the process's first look.
func (*clock) now() int64 { return int64(time.Since(epoch)) }

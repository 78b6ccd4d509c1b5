//go:build !windows

package mailbox

import _ "unsafe" // for go:linkname

// clock reads the system's monotonic clock (Linux: CLOCK_MONOTONIC, read
// through the vDSO), the same in every process: a side compares it with
// the time the other side stamped its word with, and the shim, in C,
// stamps its requests from it too (clock_gettime).
type clock struct{}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// now is the clock in nanoseconds.
func (*clock) now() int64 { return nanotime() }

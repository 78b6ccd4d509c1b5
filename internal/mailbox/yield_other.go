//go:build !linux && !windows

package mailbox

import "runtime"

// Yield gives the processor to another goroutine that wants it, if any.
func Yield() { runtime.Gosched() }

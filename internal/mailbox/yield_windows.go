package mailbox

import "syscall"

var procSwitchToThread = syscall.NewLazyDLL("kernel32.dll").NewProc("SwitchToThread")

// Yield gives the processor to another thread that wants it, if any, and
// returns at once otherwise: a spin that yields costs the machine nothing
// when it is busy with other work, and a microsecond when it is idle.
//
// It calls SwitchToThread through SyscallN, which allocates nothing (see
// waker.wake).
func Yield() { syscall.SyscallN(procSwitchToThread.Addr()) }

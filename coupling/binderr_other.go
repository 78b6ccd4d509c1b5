//go:build !windows

package coupling

import "syscall"

// The bind errors bindHint explains.
var (
	errAddrInUse    error = syscall.EADDRINUSE
	errAddrNotAvail error = syscall.EADDRNOTAVAIL
)

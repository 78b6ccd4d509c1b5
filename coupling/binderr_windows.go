package coupling

import "syscall"

// Winsock's codes for the bind errors bindHint explains: syscall's
// EADDRINUSE and EADDRNOTAVAIL are not what Windows returns.
var (
	errAddrInUse    error = syscall.Errno(10048) // WSAEADDRINUSE
	errAddrNotAvail error = syscall.Errno(10049) // WSAEADDRNOTAVAIL
)

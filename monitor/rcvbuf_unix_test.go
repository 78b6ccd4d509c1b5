//go:build !windows

package monitor

import "syscall"

// setReceiveBuffer sets a socket's SO_RCVBUF before it connects.
func setReceiveBuffer(fd uintptr, n int) {
	syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}

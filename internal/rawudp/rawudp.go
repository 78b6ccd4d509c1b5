// Package rawudp reads and writes a UDP socket with direct system calls,
// outside Go's netpoller, allocating nothing.
//
// Why: in lockstep every microsecond between BeamNG's message and the reply
// is a microsecond BeamNG's physics waits. A socket left in the netpoller's
// epoll set makes every arriving datagram wake an idle runtime thread as
// well as the reader, which on a two-core machine takes the core BeamNG's
// side needs. Take moves the socket out of the netpoller; then a reader
// either blocks in the kernel as a C program does (Wait: the kernel wakes
// that thread directly) or busy-polls (Poll in a loop: no wake-up at all,
// one core kept busy).
package rawudp

import "errors"

// ErrAgain is the answer of Poll when no datagram is waiting, and of Wait
// when none came within its bound.
var ErrAgain = errors.New("rawudp: no datagram waiting")

// ErrUnsupported is Take's answer where raw sockets are not implemented
// (everywhere but Linux): keep using the net.UDPConn.
var ErrUnsupported = errors.New("raw UDP sockets need Linux")

// ErrClosed is the answer of Close to a socket already closed.
var ErrClosed = errors.New("rawudp: socket closed")

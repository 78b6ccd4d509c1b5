// Package busypoll reads a UDP socket without blocking and without the Go
// netpoller: one recvmsg(MSG_DONTWAIT) system call per try, no allocation.
// A loop that tries again until a datagram is there answers it without a
// thread wake-up (the ≈60 µs a blocking read costs on loopback, go-notes
// §3), at the price of a CPU core kept busy.
package busypoll

import "errors"

// ErrAgain is Recv's answer when no datagram is waiting.
var ErrAgain = errors.New("busypoll: no datagram waiting")

// ErrUnsupported is New's answer where busy polling is not implemented.
var ErrUnsupported = errors.New("busy polling needs Linux")

package memnet

import (
	"net/netip"
	"os"
	"time"
)

// Socket is a bound socket read the way the coupling reads UDP with a
// receive timeout (coupling.Transport): a read waits at most its bound and
// then says os.ErrDeadlineExceeded, and tells when the datagram arrived,
// as a kernel stamps it. Inside testing/synctest every wait is on the fake
// clock.
type Socket struct {
	conn *Conn
	wait time.Duration
}

// Timed binds addr (port 0: a free ephemeral port) as a Socket whose reads
// wait at most wait.
func (n *Network) Timed(addr netip.AddrPort, wait time.Duration) (*Socket, error) {
	c, err := n.Listen(addr, 0)
	if err != nil {
		return nil, err
	}
	return &Socket{conn: c, wait: wait}, nil
}

// Read waits for one datagram: its length, its sender and when it arrived
// (unix ns). A wait that ends with nothing is os.ErrDeadlineExceeded; a
// closed socket, ErrClosed. It allocates nothing.
func (s *Socket) Read(buf []byte) (int, netip.AddrPort, int64, error) {
	n, from, ok, err := s.conn.ReadFrom(buf, s.wait, nil)
	switch {
	case err != nil:
		return 0, from, 0, err
	case !ok:
		return 0, from, 0, os.ErrDeadlineExceeded
	}
	return n, from, s.conn.Arrival(), nil
}

// Queued reads a datagram that is already waiting, without waiting; ok is
// false when none is.
func (s *Socket) Queued(buf []byte) (n int, from netip.AddrPort, ok bool) {
	n, from, ok, _ = s.conn.ReadFrom(buf, 0, nil)
	return n, from, ok
}

// Send sends one datagram to the socket bound at to (lost, as UDP loses
// it, when there is none or its queue is full).
func (s *Socket) Send(b []byte, to netip.AddrPort) error { return s.conn.WriteTo(b, to) }

// LocalAddr is the address the socket is bound to.
func (s *Socket) LocalAddr() netip.AddrPort { return s.conn.LocalAddr() }

// Close unbinds the socket.
func (s *Socket) Close() error { return s.conn.Close() }

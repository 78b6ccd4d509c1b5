package coupling

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"

	"beamconnect/internal/rawudp"
)

// Transport is a link's socket: BeamNG's messages in, the replies out. The
// per-message code reads and writes through it and never asks which kind
// it is. Three kinds bind a real UDP socket (ListenUDP picks one): Go's
// netpoller, a raw socket read with one blocking recvmsg per message, and
// a raw socket read by busy polling; tests use an in-memory one
// (internal/memnet's Socket).
type Transport interface {
	// Read waits for one datagram, at most about idleStep: its length, its
	// sender, and when the kernel received it (unix ns; 0 where the socket
	// does not say). A wait that ends with nothing returns
	// os.ErrDeadlineExceeded.
	Read(buf []byte) (n int, from netip.AddrPort, rxAt int64, err error)
	// Queued reads a datagram that is already waiting, without waiting;
	// ok is false when none is.
	Queued(buf []byte) (n int, from netip.AddrPort, ok bool)
	// Send writes one datagram. Only the link's loop writes its socket.
	Send(b []byte, to netip.AddrPort) error
	LocalAddr() netip.AddrPort
	// Close releases the socket; it is called from the link's loop.
	Close() error
}

// Listen binds a link's local address.
type Listen func(local netip.AddrPort) (Transport, error)

// errTimeout is a Read that waited its bound and got nothing.
var errTimeout = os.ErrDeadlineExceeded

// rxBuffer is the kernel receive buffer asked for: room for a burst of
// BeamNG's messages after a pause.
const rxBuffer = 1 << 20

// ListenUDP binds local for a link. On Linux the socket is taken out of the
// netpoller and read as a C program reads it: one blocking recvmsg per
// message, woken by the kernel directly (busy: non-blocking reads in a loop
// on a locked thread instead, for the lowest latency at the cost of a
// core). Left in the netpoller, every datagram would also wake an idle
// runtime thread, taking the core BeamNG's side needs. Elsewhere it is Go's
// socket; fallback says why busy polling, if asked for, is not used.
func ListenUDP(local netip.AddrPort, busy bool) (t Transport, fallback error, err error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, nil, err
	}
	conn.SetReadBuffer(rxBuffer)
	stamps := enableRxTimes(conn)
	sock, err := rawudp.Take(conn)
	if err == nil && !busy {
		err = sock.SetWait(idleStep)
	}
	if err == nil {
		raw := rawSocket{sock: sock, oob: make([]byte, 128), stamps: stamps}
		if busy {
			return &spinSocket{rawSocket: raw}, nil, nil
		}
		return &waitSocket{rawSocket: raw}, nil, nil
	}
	if busy {
		fallback = err
	}
	if sock != nil {
		// Take closed conn: bind again, the usual way.
		sock.Close()
		if conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(local)); err != nil {
			return nil, nil, err
		}
		conn.SetReadBuffer(rxBuffer)
		stamps = enableRxTimes(conn)
	}
	return &netSocket{conn: conn, oob: make([]byte, 128), stamps: stamps}, fallback, nil
}

// netSocket is Go's socket, read through the netpoller with a deadline.
type netSocket struct {
	conn     *net.UDPConn
	oob      []byte
	stamps   bool
	deadline time.Time // the read deadline as last set
}

func (s *netSocket) Read(buf []byte) (int, netip.AddrPort, int64, error) {
	// Moving the deadline is a timer change in the runtime, so it moves
	// only once half of it has passed, not on every message.
	if now := time.Now(); s.deadline.Sub(now) < idleStep/2 {
		s.deadline = now.Add(idleStep)
		s.conn.SetReadDeadline(s.deadline)
	}
	if !s.stamps {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		return n, from, 0, timeoutOr(err)
	}
	n, oobn, _, from, err := s.conn.ReadMsgUDPAddrPort(buf, s.oob)
	if err != nil {
		return n, from, 0, timeoutOr(err)
	}
	return n, from, rxTimestamp(s.oob[:oobn]), nil
}

func (s *netSocket) Queued(buf []byte) (int, netip.AddrPort, bool) {
	s.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	s.deadline = time.Time{} // Read sets its own again
	n, from, err := s.conn.ReadFromUDPAddrPort(buf)
	return n, from, err == nil
}

func (s *netSocket) Send(b []byte, to netip.AddrPort) error {
	_, err := s.conn.WriteToUDPAddrPort(b, to)
	return err
}

func (s *netSocket) LocalAddr() netip.AddrPort {
	return s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}
func (s *netSocket) Close() error { return s.conn.Close() }

// timeoutOr turns a read deadline into errTimeout. A nil error returns
// before errors.As, whose target escapes: one allocation per message on
// the netpoller's path (every read on Windows).
func timeoutOr(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errTimeout
	}
	return err
}

// rawSocket is what both raw kinds share: the socket out of the netpoller.
type rawSocket struct {
	sock   *rawudp.Socket
	oob    []byte
	stamps bool
}

func (s *rawSocket) control() []byte {
	if s.stamps {
		return s.oob
	}
	return nil
}

func (s *rawSocket) result(n, oobn int, from netip.AddrPort, err error) (int, netip.AddrPort, int64, error) {
	switch {
	case err == rawudp.ErrAgain:
		return 0, from, 0, errTimeout
	case err != nil:
		return 0, from, 0, os.NewSyscallError("recvmsg", err)
	case s.stamps:
		return n, from, rxTimestamp(s.oob[:oobn]), nil
	}
	return n, from, 0, nil
}

func (s *rawSocket) Queued(buf []byte) (int, netip.AddrPort, bool) {
	n, _, from, err := s.sock.Poll(buf, nil)
	return n, from, err == nil
}

func (s *rawSocket) Send(b []byte, to netip.AddrPort) error { return s.sock.Send(b, to) }
func (s *rawSocket) LocalAddr() netip.AddrPort              { return s.sock.LocalAddr() }

// waitSocket reads with one blocking recvmsg, bounded by SO_RCVTIMEO.
type waitSocket struct{ rawSocket }

func (s *waitSocket) Read(buf []byte) (int, netip.AddrPort, int64, error) {
	return s.result(s.sock.Wait(buf, s.control()))
}

func (s *waitSocket) Close() error { return s.sock.Close() }

// spinSocket reads by busy polling: non-blocking reads in a loop, no
// netpoller and no thread wake-up. Its first read locks the loop to its OS
// thread, so the loop never waits to be scheduled back onto one; Close,
// from the same loop, lets it go.
type spinSocket struct {
	rawSocket
	locked bool
}

func (s *spinSocket) Read(buf []byte) (int, netip.AddrPort, int64, error) {
	if !s.locked {
		runtime.LockOSThread()
		s.locked = true
	}
	oob := s.control()
	var deadline time.Time
	for i := 0; ; i++ {
		n, oobn, from, err := s.sock.Poll(buf, oob)
		if err != rawudp.ErrAgain {
			return s.result(n, oobn, from, err)
		}
		// Every 4096 tries (about a millisecond) let any other goroutine
		// that is ready run (an exec model's reader, the recorder): the
		// process may have a P per spinning link only. Every 256, read the
		// clock: the idle step is only a bound.
		if i&4095 == 4095 {
			runtime.Gosched()
		}
		if i&255 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(idleStep)
			} else if now.After(deadline) {
				return 0, from, 0, errTimeout
			}
		}
	}
}

func (s *spinSocket) Close() error {
	if s.locked {
		runtime.UnlockOSThread()
		s.locked = false
	}
	return s.sock.Close()
}

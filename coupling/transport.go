package coupling

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"beamconnect/internal/rawudp"
	"beamconnect/internal/timeslice"
	"beamconnect/ports"
	"beamconnect/timesync"
)

// Transport is a link's socket: BeamNG's messages in, the replies out. The
// per-message code reads and writes through it and never asks which kind
// it is. Three kinds bind a real UDP socket (listenUDP picks one): Go's
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

// Bind retries back off from firstRetry to maxRetry.
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// socket is a link's socket as its loop keeps it: where beamconnect
// listens (local) and BeamNG does (remote), the Transport while bound, and
// a bind that failed retried with backoff, given up on when an address
// never bound fails for longer than the bind timeout.
type socket struct {
	listen Listen
	log    *slog.Logger
	stats  *Stats
	clock  timesync.Clock
	limit  time.Duration // Options.BindTimeout

	t             Transport // nil while unbound
	local, remote netip.AddrPort
	asked         netip.AddrPort // the local address as configured (port 0: any free one)
	retryAt       time.Time      // when a failed bind is tried again
	backoff       time.Duration
	once          bool      // the address was bound in this run: a later failure is retried without limit
	failingSince  time.Time // the first of the failed binds in a row (zero: none)
	bindErr       error     // the latest bind's error
}

// bound notes the socket in t as bound: the retries start over.
func (s *socket) bound() {
	s.backoff, s.once, s.failingSince = 0, true, time.Time{}
	s.local = s.t.LocalAddr()
}

// failed logs a failed bind and schedules the next try.
func (s *socket) failed(err error) error {
	s.stats.inc(BindFailures)
	s.bindErr = err
	if s.failingSince.IsZero() {
		s.failingSince = s.clock.Now()
	}
	wait := s.retryLater()
	s.log.Error("cannot bind the local address; retrying", "addr", s.local, "err", err,
		"retry_in", wait, "hint", bindHint(err, s.local))
	return fmt.Errorf("coupling: cannot bind %v: %w", s.local, err)
}

// givenUp is the error that ends the run when the address has failed to
// bind for longer than the bind timeout, and was never bound in this run;
// nil while it is retried.
func (s *socket) givenUp() error {
	if s.once || s.limit < 0 || s.failingSince.IsZero() || s.clock.Now().Sub(s.failingSince) < s.limit {
		return nil
	}
	n := s.stats.Get(BindFailures)
	s.log.Error("giving up: the local address could not be bound", "addr", s.local, "tries", n, "for", s.limit, "err", s.bindErr)
	return fmt.Errorf("could not bind %v for %v (%d tries): %w; %s", s.local, s.limit, n, s.bindErr, bindHint(s.bindErr, s.local))
}

// retryLater schedules the next bind, backing off.
func (s *socket) retryLater() time.Duration {
	s.backoff = min(max(2*s.backoff, firstRetry), maxRetry)
	s.retryAt = s.clock.Now().Add(s.backoff)
	return s.backoff
}

// send writes a reply to BeamNG.
func (s *socket) send(b []byte) error { return s.t.Send(b, s.remote) }

func (s *socket) close() {
	if s.t == nil {
		return
	}
	s.t.Close()
	s.t = nil
}

// sendTo is where BeamNG must send: the bound address, or when it binds
// every interface (0.0.0.0), this machine's address on the way to BeamNG.
func (s *socket) sendTo() netip.AddrPort {
	return ports.Vehicle{Local: s.local, Remote: s.remote}.SendTo()
}

// bindHint says what usually causes a bind error.
func bindHint(err error, addr netip.AddrPort) string {
	switch {
	case errors.Is(err, errAddrInUse):
		return fmt.Sprintf("another program has %v: a second beamconnect on this config, BeamNG's Simulink S-function or FMU, or a second vehicle on the same port? (on Linux: ss -ulpn 'sport = :%d'; on Windows: netstat -ano -p udp)", addr, addr.Port())
	case errors.Is(err, errAddrNotAvail):
		return fmt.Sprintf("%v is not an address of this machine: check beamng.localIP", addr.Addr())
	case errors.Is(err, syscall.EACCES):
		return fmt.Sprintf("port %d needs privileges: use a port above 1023", addr.Port())
	}
	return "check beamng.localIP and beamng.localPort"
}

// errTimeout is a Read that waited its bound and got nothing.
var errTimeout = os.ErrDeadlineExceeded

// rxBuffer is the kernel receive buffer asked for: room for a burst of
// BeamNG's messages after a pause.
const rxBuffer = 1 << 20

// listenUDP binds local for a link. On Linux the socket is taken out of the
// netpoller and read as a C program reads it: one blocking recvmsg per
// message, woken by the kernel directly (busy: non-blocking reads in a loop
// on a locked thread instead, for the lowest latency at the cost of a
// core). Left in the netpoller, every datagram would also wake an idle
// runtime thread, taking the core BeamNG's side needs. Elsewhere it is Go's
// socket; fallback says why busy polling, if asked for, is not used.
func listenUDP(local netip.AddrPort, busy bool) (t Transport, fallback error, err error) {
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
	timeslice.Shorten() // woken by BeamNG's datagram, run at once beside busy threads
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

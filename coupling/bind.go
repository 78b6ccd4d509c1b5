package coupling

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"beamconnect/rawudp"
)

// Bind retries back off from firstRetry to maxRetry.
const (
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// bindState is when the next bind is tried after a failure.
type bindState struct {
	retryAt time.Time
	backoff time.Duration
}

// failed schedules the next try, backing off.
func (b *bindState) failed() time.Duration {
	b.backoff = min(max(2*b.backoff, firstRetry), maxRetry)
	b.retryAt = time.Now().Add(b.backoff)
	return b.backoff
}

// connect binds the local address. On failure the status is Error and the
// Run loop tries again after a backoff, for as long as the directive asks
// for a connection.
func (c *Coupling) connect() error {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(c.local))
	if err != nil {
		return c.bindFailed(err)
	}
	c.bind.backoff = 0
	conn.SetReadBuffer(1 << 20)
	c.rxTimes = enableRxTimes(conn)
	c.local = conn.LocalAddr().(*net.UDPAddr).AddrPort()
	c.readDeadline = time.Time{}
	// Take the socket out of the netpoller where that is possible (Linux):
	// left in, every datagram would wake an idle runtime thread as well as
	// this loop's, taking the core BeamNG's side needs. Then the loop reads
	// as a C program does: one blocking recvmsg per message (the kernel
	// wakes this thread directly), or non-blocking ones in a loop when busy
	// polling. Elsewhere, Go's socket reads.
	c.conn, c.sock = nil, nil
	sock, err := rawudp.Take(conn)
	if err == nil && !c.busy {
		err = sock.SetWait(idleStep)
	}
	switch {
	case err == nil:
		c.sock = sock
		c.fault.sock.Store(sock)
	default:
		if sock != nil {
			sock.Close()
			// Take closed conn: bind again, the usual way.
			if conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(c.local)); err != nil {
				return c.bindFailed(err)
			}
			conn.SetReadBuffer(1 << 20)
			c.rxTimes = enableRxTimes(conn)
		}
		if c.busy {
			c.log.Warn("busy polling is not available here; reading the socket the usual way", "err", err)
			c.busy = false
		}
		c.conn = conn
		c.fault.conn.Store(conn)
	}
	c.fresh = true
	c.src.latched = netip.AddrPort{} // the first message will say where BeamNG sends from
	c.setLink(Connecting)
	c.log.Debug("bound", "addr", c.local, "arrival_times", c.rxTimes)
	return nil
}

// bindFailed logs a failed bind and schedules the next try.
func (c *Coupling) bindFailed(err error) error {
	c.stats.BindFailures.Add(1)
	wait := c.bind.failed()
	c.log.Error("cannot bind the local address; retrying", "addr", c.local, "err", err,
		"retry_in", wait, "hint", bindHint(err, c.local))
	c.setLink(Error)
	return fmt.Errorf("coupling: cannot bind %v: %w", c.local, err)
}

// bindHint says what usually causes a bind error.
func bindHint(err error, addr netip.AddrPort) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("another program has %v: a second beamconnect on this config, BeamNG's Simulink S-function or FMU, or a second vehicle on the same port? (on Linux: ss -ulpn 'sport = :%d')", addr, addr.Port())
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("%v is not an address of this machine: check beamng.localIP", addr.Addr())
	case errors.Is(err, syscall.EACCES):
		return fmt.Sprintf("port %d needs privileges: use a port above 1023", addr.Port())
	}
	return "check beamng.localIP and beamng.localPort"
}

// socketFailed closes a socket that failed for good and binds again later.
func (c *Coupling) socketFailed(err error) {
	wait := c.bind.failed()
	c.log.Error("socket failed; binding again", "err", err, "retry_in", wait)
	c.closeConn()
	c.setLink(Error)
}

// read reads one datagram, with the time the kernel received it (unix ns)
// where the socket reports it, else 0.
func (c *Coupling) read() (n int, from netip.AddrPort, rxAt int64, err error) {
	switch {
	case c.sock != nil && c.busy:
		return c.spin()
	case c.sock != nil:
		return c.wait()
	}
	if !c.rxTimes {
		n, from, err = c.conn.ReadFromUDPAddrPort(c.rx)
		return n, from, 0, err
	}
	n, oobn, _, from, err := c.conn.ReadMsgUDPAddrPort(c.rx, c.oob)
	if err != nil {
		return n, from, 0, err
	}
	return n, from, rxTimestamp(c.oob[:oobn]), nil
}

// spin is read for busy polling: non-blocking reads in a loop, no netpoller
// and no thread wake-up, until a datagram comes or idleStep has passed (a
// timeout, as a blocking read's deadline would give).
func (c *Coupling) spin() (n int, from netip.AddrPort, rxAt int64, err error) {
	oob := c.oob
	if !c.rxTimes {
		oob = nil
	}
	var deadline time.Time
	for i := 0; ; i++ {
		n, oobn, from, err := c.sock.Poll(c.rx, oob)
		if err == nil {
			if c.rxTimes {
				rxAt = rxTimestamp(oob[:oobn])
			}
			return n, from, rxAt, nil
		}
		if err != rawudp.ErrAgain {
			return 0, from, 0, os.NewSyscallError("recvmsg", err)
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
				return 0, from, 0, os.ErrDeadlineExceeded
			}
		}
	}
}

// write sends a reply to BeamNG: straight with sendto where the socket is
// raw, else through Go's socket.
func (c *Coupling) write(b []byte) error {
	if c.sock != nil {
		return c.sock.Send(b, c.remote)
	}
	_, err := c.conn.WriteToUDPAddrPort(b, c.remote)
	return err
}

// wait is read with one blocking recvmsg on the raw socket: the kernel
// wakes this thread when a datagram comes, or after idleStep (SO_RCVTIMEO),
// reported as a timeout as a read deadline would be.
func (c *Coupling) wait() (n int, from netip.AddrPort, rxAt int64, err error) {
	oob := c.oob
	if !c.rxTimes {
		oob = nil
	}
	n, oobn, from, err := c.sock.Wait(c.rx, oob)
	switch {
	case err == nil:
		if c.rxTimes {
			rxAt = rxTimestamp(oob[:oobn])
		}
		return n, from, rxAt, nil
	case err == rawudp.ErrAgain:
		return 0, from, 0, os.ErrDeadlineExceeded
	}
	return 0, from, 0, os.NewSyscallError("recvmsg", err)
}

// bound reports whether the local address is bound.
func (c *Coupling) bound() bool { return c.conn != nil || c.sock != nil }

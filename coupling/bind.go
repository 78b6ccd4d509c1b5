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

	"beamconnect/busypoll"
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
		c.stats.BindFailures.Add(1)
		wait := c.bind.failed()
		c.log.Error("cannot bind the local address; retrying", "addr", c.local, "err", err,
			"retry_in", wait, "hint", bindHint(err, c.local))
		c.setLink(Error)
		return fmt.Errorf("coupling: cannot bind %v: %w", c.local, err)
	}
	c.bind.backoff = 0
	conn.SetReadBuffer(1 << 20)
	c.rxTimes = enableRxTimes(conn)
	c.poll = nil
	if c.busy {
		if c.poll, err = busypoll.New(conn); err != nil {
			c.log.Warn("busy polling is not available here; reading the socket the usual way", "err", err)
			c.busy, c.poll = false, nil
		}
	}
	c.conn = conn
	c.fault.conn.Store(conn)
	c.local = conn.LocalAddr().(*net.UDPAddr).AddrPort()
	c.fresh = true
	c.src.latched = netip.AddrPort{} // the first message will say where BeamNG sends from
	c.setLink(Connecting)
	c.log.Debug("bound", "addr", c.local, "arrival_times", c.rxTimes)
	return nil
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
	if c.poll != nil {
		return c.spin()
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
		n, oobn, from, err := c.poll.Recv(c.rx, oob)
		if err == nil {
			if c.rxTimes {
				rxAt = rxTimestamp(oob[:oobn])
			}
			return n, from, rxAt, nil
		}
		if err != busypoll.ErrAgain {
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

// write sends a reply to BeamNG: straight with sendto when busy polling
// (no netpoller on the path), else through the socket.
func (c *Coupling) write(b []byte) error {
	if c.poll != nil {
		if err := c.poll.Send(b, c.remote); err == nil {
			return nil
		}
		// EAGAIN (a full send buffer) or an IPv6 peer: the usual way, which waits.
	}
	_, err := c.conn.WriteToUDPAddrPort(b, c.remote)
	return err
}

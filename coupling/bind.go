package coupling

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
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

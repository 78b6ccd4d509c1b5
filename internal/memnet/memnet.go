// Package memnet is an in-memory datagram network with addresses: sockets
// bound to netip.AddrPort that send each other whole datagrams through
// bounded queues, as UDP on loopback does, without the kernel. Tests run
// BeamNG's side, the coupling and strangers on one Network inside
// testing/synctest, where every wait is on the fake clock and is durably
// blocking: a test of seconds of protocol time runs in milliseconds, the
// same way every time.
//
// Like UDP it loses rather than blocks: a datagram to an address nobody
// has bound, or to a full queue, is dropped and counted.
package memnet

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// MaxDatagram is the largest datagram a socket holds; longer ones are cut
// (as a receive buffer of that size would).
const MaxDatagram = 65536

// DefaultDepth is how many datagrams a socket queues before it drops.
const DefaultDepth = 512

// ErrClosed is returned by a read on a closed socket.
var ErrClosed = errors.New("memnet: socket closed")

// Network is a set of bound sockets.
type Network struct {
	mu      sync.Mutex
	conns   map[netip.AddrPort]*Conn
	nextEph uint16
	// Unbound counts datagrams sent to an address nobody had bound.
	Unbound atomic.Int64
}

// New makes an empty network.
func New() *Network {
	return &Network{conns: map[netip.AddrPort]*Conn{}, nextEph: firstEphemeral}
}

// Listen binds addr; port 0 picks a free ephemeral port. depth ≤ 0 means
// DefaultDepth.
func (n *Network) Listen(addr netip.AddrPort, depth int) (*Conn, error) {
	if depth <= 0 {
		depth = DefaultDepth
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr.Port() == 0 {
		p, ok := n.ephemeral(addr.Addr())
		if !ok {
			return nil, fmt.Errorf("memnet: listen %v: no free ephemeral port (%d to 65535 are all bound)", addr, firstEphemeral)
		}
		addr = netip.AddrPortFrom(addr.Addr(), p)
	}
	if _, used := n.conns[addr]; used {
		return nil, fmt.Errorf("memnet: listen %v: address already in use", addr)
	}
	c := &Conn{net: n, addr: addr, q: NewQueue(depth, MaxDatagram)}
	n.conns[addr] = c
	return c, nil
}

// firstEphemeral is the lowest port Listen picks for port 0, as IANA's
// dynamic range starts.
const firstEphemeral = 49152

// ephemeral picks the next free port of the dynamic range on addr, going
// round it once.
func (n *Network) ephemeral(addr netip.Addr) (uint16, bool) {
	for range 65536 - firstEphemeral {
		p := n.nextEph
		n.nextEph++
		if n.nextEph == 0 {
			n.nextEph = firstEphemeral
		}
		if _, used := n.conns[netip.AddrPortFrom(addr, p)]; !used {
			return p, true
		}
	}
	return 0, false
}

func (n *Network) lookup(a netip.AddrPort) *Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.conns[a]
}

// Conn is one bound socket. Reads are for one goroutine at a time; writes
// may come from any.
type Conn struct {
	net  *Network
	addr netip.AddrPort
	q    *Queue
}

// LocalAddr is the address the socket is bound to.
func (c *Conn) LocalAddr() netip.AddrPort { return c.addr }

// WriteTo sends one datagram to the socket bound at to. It never blocks:
// with nobody there, or that socket's queue full, the datagram is lost. A
// closed socket cannot send.
func (c *Conn) WriteTo(b []byte, to netip.AddrPort) error {
	if c.q.isClosed() {
		return ErrClosed
	}
	dst := c.net.lookup(to)
	if dst == nil {
		c.net.Unbound.Add(1)
		return nil
	}
	dst.q.Put(b, c.addr)
	return nil
}

// ReadFrom copies the oldest queued datagram into buf, waiting up to wait
// for one (wait ≤ 0: only what is queued), or until stop is closed or the
// socket is. ok is false when none came; err is ErrClosed once the socket
// is closed. It allocates nothing.
func (c *Conn) ReadFrom(buf []byte, wait time.Duration, stop <-chan struct{}) (n int, from netip.AddrPort, ok bool, err error) {
	return c.q.Get(buf, wait, stop)
}

// Arrival is when the datagram read last was delivered (unix ns), as a
// kernel stamps a datagram's arrival: a reader that gets to it later still
// sees when it came.
func (c *Conn) Arrival() int64 { return c.q.Arrival() }

// Queued is how many datagrams wait to be read.
func (c *Conn) Queued() int { return c.q.Len() }

// Dropped counts datagrams lost because this socket's queue was full.
func (c *Conn) Dropped() int64 { return c.q.Dropped() }

// Discard throws away every queued datagram.
func (c *Conn) Discard() { c.q.Discard() }

// Close unbinds the socket: what was queued is lost, reads end with
// ErrClosed, and datagrams sent to its address are lost.
func (c *Conn) Close() error {
	if c.q.close() {
		c.net.mu.Lock()
		if c.net.conns[c.addr] == c {
			delete(c.net.conns, c.addr)
		}
		c.net.mu.Unlock()
	}
	return nil
}

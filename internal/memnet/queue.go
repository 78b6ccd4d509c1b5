package memnet

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Queue is a bounded FIFO of datagrams, as a socket's receive buffer is: a
// datagram that finds it full is dropped and counted, never waited for.
// Puts may come from any goroutine, gets from one at a time. Its buffers
// are made as it first fills and reused after, so a queue that never holds
// much costs little, and a steady flow of datagrams allocates nothing.
// A Conn reads from one; so can a reader goroutine that moves datagrams
// off a real socket for a loop that must poll without a syscall.
type Queue struct {
	full    chan packet
	free    chan []byte
	max     int
	timer   *time.Timer // Get's wait, made once
	closed  chan struct{}
	once    sync.Once
	last    int64 // delivery time of the datagram read last
	dropped atomic.Int64
}

type packet struct {
	b    []byte
	from netip.AddrPort
	at   int64 // unix ns the datagram was put
}

// NewQueue makes a queue of depth datagrams (≤ 0: DefaultDepth) that keeps
// at most max bytes of each: longer ones are cut, as a receive buffer of
// that size cuts them.
func NewQueue(depth, max int) *Queue {
	if depth <= 0 {
		depth = DefaultDepth
	}
	q := &Queue{full: make(chan packet, depth), free: make(chan []byte, depth), max: max, closed: make(chan struct{})}
	q.timer = time.NewTimer(time.Hour)
	q.timer.Stop()
	return q
}

// Put copies b in, noting from and when it came. It never blocks: with
// the queue full, b is dropped and counted; with it closed, b is lost.
func (q *Queue) Put(b []byte, from netip.AddrPort) {
	if q.isClosed() {
		return
	}
	if len(q.full) == cap(q.full) {
		q.dropped.Add(1) // full: lost without making a buffer for it
		return
	}
	var buf []byte
	select {
	case buf = <-q.free:
	default: // none to reuse yet: append makes one
	}
	p := packet{append(buf[:0], b[:min(len(b), q.max)]...), from, time.Now().UnixNano()}
	select {
	case q.full <- p:
	default: // another sender filled it meanwhile
		q.dropped.Add(1)
		q.recycle(p.b)
	}
}

// Get copies the oldest datagram into dst, waiting up to wait for one
// (wait ≤ 0: only what is queued), or until stop is closed or the Conn
// it belongs to is. ok is false when none came; err is ErrClosed once the
// Conn is closed. It allocates nothing.
func (q *Queue) Get(dst []byte, wait time.Duration, stop <-chan struct{}) (n int, from netip.AddrPort, ok bool, err error) {
	var p packet
	select {
	case p = <-q.full:
	case <-q.closed:
		return 0, from, false, ErrClosed
	default:
		if wait <= 0 {
			return 0, from, false, nil
		}
		q.timer.Reset(wait)
		select {
		case p = <-q.full:
			q.timer.Stop()
		case <-q.timer.C:
			return 0, from, false, nil
		case <-stop:
			q.timer.Stop()
			return 0, from, false, nil
		case <-q.closed:
			q.timer.Stop()
			return 0, from, false, ErrClosed
		}
	}
	n = copy(dst, p.b)
	q.last = p.at
	q.recycle(p.b)
	return n, p.from, true, nil
}

// recycle keeps a buffer for the next datagram. There is room unless
// senders racing for the last slot made one too many; that one is let go.
func (q *Queue) recycle(b []byte) {
	select {
	case q.free <- b:
	default:
	}
}

// Arrival is when the datagram read last was put (unix ns).
func (q *Queue) Arrival() int64 { return q.last }

// Len is how many datagrams wait to be read.
func (q *Queue) Len() int { return len(q.full) }

// Dropped counts datagrams lost because the queue was full.
func (q *Queue) Dropped() int64 { return q.dropped.Load() }

// Discard throws away every queued datagram.
func (q *Queue) Discard() {
	for {
		select {
		case p := <-q.full:
			q.recycle(p.b)
		default:
			return
		}
	}
}

// close ends the queue: gets return ErrClosed, puts are lost. It reports
// whether this call closed it.
func (q *Queue) close() bool {
	done := false
	q.once.Do(func() { close(q.closed); done = true })
	return done
}

func (q *Queue) isClosed() bool {
	select {
	case <-q.closed:
		return true
	default:
		return false
	}
}

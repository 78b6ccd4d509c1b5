package monitor

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// limits bound what the live page's visitors can take from the process
// that couples BeamNG: memory, CPU and file descriptors. Every one is a
// fixed default; tests shorten them.
type limits struct {
	// streams is how many /events streams may be open at once (each is a
	// browser tab); the next is answered 503.
	streams int
	// conns is how many connections the page holds open at once. More
	// wait in the kernel's accept queue, taking no file descriptor of
	// ours, until one closes: the coupling's sockets, the config watch
	// and the recording always find descriptors.
	conns int
	// header, read and idle close a connection that does not send its
	// request's header in time, its request in time, or another request
	// in time after a response (keep-alive).
	header, read, idle time.Duration
	// write bounds writing a response other than the event stream, whose
	// every write has writeTimeout.
	write time.Duration
	// backlogBytes caps the samples a joining stream is sent at once (the
	// window the ring holds, thinned out to fit).
	backlogBytes int
}

var defaultLimits = limits{
	streams: 16, conns: 64,
	header: 5 * time.Second, read: 10 * time.Second, idle: 30 * time.Second, write: 30 * time.Second,
	backlogBytes: 8 << 20,
}

// gate counts what is open against a limit.
type gate struct {
	open, refused atomic.Int64
}

// enter takes a place if one of limit is free.
func (g *gate) enter(limit int) bool {
	if g.open.Add(1) > int64(limit) {
		g.open.Add(-1)
		g.refused.Add(1)
		return false
	}
	return true
}

func (g *gate) leave() { g.open.Add(-1) }

// refuseStream answers a stream beyond the limit.
func refuseStream(w http.ResponseWriter, limit int) {
	w.Header().Set("Retry-After", "5")
	http.Error(w, "beamconnect's live page has "+strconv.Itoa(limit)+" viewers already, the most it serves at once "+
		"(each open tab is one): close one and reload this page.", http.StatusServiceUnavailable)
}

// limitListener accepts at most limit connections at once; Accept waits
// for one to close meanwhile.
type limitListener struct {
	net.Listener
	slots     chan struct{} // a slot is taken before accepting, so one may wait for a connection
	done      chan struct{}
	closeOnce sync.Once
	conns     atomic.Int64 // connections open
	peak      atomic.Int64 // the most open at once
}

func newLimitListener(ln net.Listener, limit int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, limit), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	for n := l.conns.Add(1); ; {
		p := l.peak.Load()
		if n <= p || l.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return &limitConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// open is how many connections are open now.
func (l *limitListener) open() int { return int(l.conns.Load()) }

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.conns.Add(-1)
		<-c.l.slots
	})
	return err
}

package memnet

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	a = netip.MustParseAddrPort("127.0.0.1:1000")
	b = netip.MustParseAddrPort("127.0.0.1:2000")
)

// Datagrams arrive whole, in order, with the sender's address and when
// they came; a read that finds nothing waits its bound on the fake clock.
func TestDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		ca, _ := n.Listen(a, 0)
		cb, _ := n.Listen(b, 0)
		ca.WriteTo([]byte("one"), b)
		time.Sleep(time.Millisecond)
		ca.WriteTo([]byte("two"), b)
		buf := make([]byte, 16)
		for i, want := range []string{"one", "two"} {
			n, from, ok, err := cb.ReadFrom(buf, 0, nil)
			if !ok || err != nil || string(buf[:n]) != want || from != a {
				t.Fatalf("read %d: %q from %v (%v %v), want %q from %v", i, buf[:n], from, ok, err, want, a)
			}
			if want := time.Unix(946684800, 0).Add(time.Duration(i) * time.Millisecond); cb.Arrival() != want.UnixNano() {
				t.Errorf("read %d arrived at %v, want %v", i, time.Unix(0, cb.Arrival()), want)
			}
		}
		start := time.Now()
		if _, _, ok, _ := cb.ReadFrom(buf, 50*time.Millisecond, nil); ok || time.Since(start) != 50*time.Millisecond {
			t.Errorf("an empty read returned %v after %v, want nothing after 50 ms", ok, time.Since(start))
		}
	})
}

// Like UDP it loses rather than blocks: a full queue drops, an address no
// one bound swallows, and both are counted.
func TestLoss(t *testing.T) {
	n := New()
	ca, _ := n.Listen(a, 0)
	cb, _ := n.Listen(b, 2)
	for range 3 {
		ca.WriteTo([]byte("x"), b)
	}
	ca.WriteTo([]byte("x"), netip.MustParseAddrPort("127.0.0.1:9"))
	if cb.Queued() != 2 || cb.Dropped() != 1 || n.Unbound.Load() != 1 {
		t.Errorf("queued %d, dropped %d, unbound %d; want 2, 1, 1", cb.Queued(), cb.Dropped(), n.Unbound.Load())
	}
}

// Port 0 picks a free port; a bound address cannot be bound twice until
// it is closed; a closed socket's reads end and what it held is gone.
func TestBinding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		e1, _ := n.Listen(netip.MustParseAddrPort("127.0.0.1:0"), 0)
		e2, _ := n.Listen(netip.MustParseAddrPort("127.0.0.1:0"), 0)
		if e1.LocalAddr().Port() == 0 || e1.LocalAddr() == e2.LocalAddr() {
			t.Errorf("ephemeral ports %v and %v", e1.LocalAddr(), e2.LocalAddr())
		}
		if _, err := n.Listen(e1.LocalAddr(), 0); err == nil {
			t.Error("an address was bound twice")
		}
		e2.WriteTo([]byte("lost"), e1.LocalAddr())
		done := make(chan error)
		go func() {
			_, _, _, err := e1.ReadFrom(make([]byte, 8), time.Hour, nil)
			_, _, _, err = e1.ReadFrom(make([]byte, 8), time.Hour, nil)
			done <- err
		}()
		synctest.Wait()
		e1.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("a read on a closed socket: %v", err)
		}
		if _, err := n.Listen(e1.LocalAddr(), 0); err != nil {
			t.Errorf("the address stays bound after Close: %v", err)
		}
		if err := e1.WriteTo([]byte("x"), b); !errors.Is(err, ErrClosed) {
			t.Errorf("a closed socket sent: %v", err)
		}
	})
}

// A datagram's trip allocates nothing.
func TestAllocs(t *testing.T) {
	n := New()
	ca, _ := n.Listen(a, 0)
	cb, _ := n.Listen(b, 0)
	msg, buf := make([]byte, 888), make([]byte, 1024)
	if got := testing.AllocsPerRun(1000, func() {
		ca.WriteTo(msg, b)
		cb.ReadFrom(buf, 0, nil)
	}); got != 0 {
		t.Errorf("%v allocations per datagram", got)
	}
}

// A socket costs only its bookkeeping until datagrams queue on it: a test
// may bind many with the default depth.
func TestListenIsCheap(t *testing.T) {
	n := New()
	if got := testing.AllocsPerRun(100, func() {
		c, err := n.Listen(a, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}); got > 10 {
		t.Errorf("binding a socket makes %v allocations", got)
	}
}

// When every ephemeral port is bound, binding port 0 fails as the kernel's
// does, rather than binding port 0 itself.
func TestEphemeralPortsRunOut(t *testing.T) {
	n := New()
	port0 := netip.MustParseAddrPort("127.0.0.1:0")
	seen := map[netip.AddrPort]bool{}
	for {
		c, err := n.Listen(port0, 1)
		if err != nil {
			if !strings.Contains(err.Error(), "no free ephemeral port") {
				t.Errorf("error %v, want one saying no ephemeral port is free", err)
			}
			break
		}
		if p := c.LocalAddr().Port(); p < 49152 || seen[c.LocalAddr()] {
			t.Fatalf("bound %v (after %d sockets)", c.LocalAddr(), len(seen))
		}
		seen[c.LocalAddr()] = true
	}
	if len(seen) != 65536-49152 {
		t.Errorf("%d ephemeral ports bound before running out, want %d", len(seen), 65536-49152)
	}
	// Closing one frees its port for the next.
	for ap := range seen {
		n.lookup(ap).Close()
		if c, err := n.Listen(port0, 1); err != nil || c.LocalAddr() != ap {
			t.Errorf("after closing %v, port 0 bound %v (%v)", ap, c, err)
		}
		break
	}
}

// A queue keeps at most its max bytes of a datagram, as a receive buffer
// of that size does (BeamNG's side reads at most 8192); a datagram that
// finds it full is dropped and counted, and the room a read makes is
// reused.
func TestQueueCutsAndDrops(t *testing.T) {
	q := NewQueue(1, 4)
	q.Put([]byte("abcdef"), a)
	q.Put([]byte("lost"), b)
	buf := make([]byte, 16)
	n, from, ok, err := q.Get(buf, 0, nil)
	if !ok || err != nil || string(buf[:n]) != "abcd" || from != a {
		t.Errorf("got %q from %v (%v %v), want \"abcd\" from %v", buf[:n], from, ok, err, a)
	}
	q.Put([]byte("xy"), b)
	if n, _, ok, _ := q.Get(buf, 0, nil); !ok || string(buf[:n]) != "xy" || q.Dropped() != 1 || q.Len() != 0 {
		t.Errorf("after a drop: %q (%v), dropped %d, queued %d", buf[:n], ok, q.Dropped(), q.Len())
	}
}

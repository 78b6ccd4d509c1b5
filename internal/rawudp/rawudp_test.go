//go:build linux

package rawudp

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func listen(t *testing.T, network, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("%s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func take(t *testing.T, c *net.UDPConn) *Socket {
	t.Helper()
	s, err := Take(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func addrOf(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// Take keeps the socket's address and closes the net.UDPConn: a datagram to
// the address reaches the Socket; Poll says ErrAgain while nothing waits,
// then returns the datagram and its sender, without allocating.
func TestTakePoll(t *testing.T) {
	a, b := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	to := addrOf(a)
	s := take(t, a)
	if s.LocalAddr() != to {
		t.Fatalf("local %v, was bound to %v", s.LocalAddr(), to)
	}
	if _, err := a.WriteToUDPAddrPort([]byte("x"), addrOf(b)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the net.UDPConn still works after Take: %v", err)
	}
	buf := make([]byte, 64)
	if _, _, _, err := s.Poll(buf, nil); !errors.Is(err, ErrAgain) {
		t.Fatalf("nothing sent: %v", err)
	}
	b.WriteToUDPAddrPort([]byte("hello"), to)
	var n int
	var from netip.AddrPort
	var err error
	for {
		n, _, from, err = s.Poll(buf, nil)
		if !errors.Is(err, ErrAgain) {
			break
		}
	}
	if err != nil || string(buf[:n]) != "hello" || from != addrOf(b) {
		t.Fatalf("%q from %v: %v", buf[:n], from, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.WriteToUDPAddrPort([]byte("x"), to)
		for {
			if _, _, _, err := s.Poll(buf, nil); !errors.Is(err, ErrAgain) {
				return
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per datagram", allocs)
	}
}

// Wait sleeps until a datagram comes, or reports ErrAgain once SetWait's
// bound has passed; a round trip through Send and Wait allocates nothing.
func TestWaitSend(t *testing.T) {
	s1 := take(t, listen(t, "udp4", "127.0.0.1:0"))
	s2 := take(t, listen(t, "udp4", "127.0.0.1:0"))
	for _, s := range []*Socket{s1, s2} {
		if err := s.SetWait(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	if _, _, _, err := s1.Wait(buf, nil); !errors.Is(err, ErrAgain) {
		t.Fatalf("nothing sent: %v", err)
	}
	// A datagram sent while Wait sleeps wakes it. The bound goes up first:
	// on a loaded machine the sender may run later than 20 ms, and that is
	// not a missed datagram. (The sleep is the datagram's lateness, what
	// the test is about; whichever runs first, the result is the same.)
	if err := s1.SetWait(time.Minute); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(5 * time.Millisecond) // the datagram's lateness, what the test is about
		s2.Send([]byte("late"), s1.LocalAddr())
	}()
	n, _, from, err := s1.Wait(buf, nil)
	if err != nil || string(buf[:n]) != "late" || from != s2.LocalAddr() {
		t.Fatalf("%q from %v: %v", buf[:n], from, err)
	}
	msg := []byte("ping")
	allocs := testing.AllocsPerRun(100, func() {
		if err := s2.Send(msg, s1.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := s1.Wait(buf, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round", allocs)
	}
}

// An IPv6 socket sends to IPv6 peers and, dual-stack, to IPv4 ones.
func TestSendIPv6(t *testing.T) {
	v6 := take(t, listen(t, "udp", "[::1]:0"))
	peer := listen(t, "udp6", "[::1]:0")
	if err := v6.Send([]byte("six"), addrOf(peer)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := peer.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "six" || from.Port() != v6.LocalAddr().Port() {
		t.Fatalf("%q from %v: %v", buf[:n], from, err)
	}
	v4 := take(t, listen(t, "udp4", "127.0.0.1:0"))
	if err := v4.Send([]byte("x"), addrOf(peer)); err == nil {
		t.Error("an IPv4 socket sent to an IPv6 address")
	}
}

// A second Close says the socket is closed rather than closing a
// descriptor the process may have reused.
func TestCloseTwice(t *testing.T) {
	s, err := Take(listen(t, "udp4", "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

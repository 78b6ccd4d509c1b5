//go:build linux

package busypoll

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

func pair(t *testing.T) (*net.UDPConn, *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Recv says ErrAgain while nothing waits, then returns the datagram and its
// sender, without allocating.
func TestRecv(t *testing.T) {
	a, b := pair(t)
	r, err := New(a)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, _, _, err := r.Recv(buf, nil); !errors.Is(err, ErrAgain) {
		t.Fatalf("nothing sent: %v", err)
	}
	to := a.LocalAddr().(*net.UDPAddr).AddrPort()
	b.WriteToUDPAddrPort([]byte("hello"), to)
	var n int
	var from netip.AddrPort
	for {
		n, _, from, err = r.Recv(buf, nil)
		if !errors.Is(err, ErrAgain) {
			break
		}
	}
	if err != nil || string(buf[:n]) != "hello" || from != b.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Fatalf("%q from %v: %v", buf[:n], from, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.WriteToUDPAddrPort([]byte("x"), to)
		for {
			if _, _, _, err := r.Recv(buf, nil); !errors.Is(err, ErrAgain) {
				return
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per datagram", allocs)
	}
}

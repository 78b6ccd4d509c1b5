//go:build !linux

package busypoll

import (
	"net"
	"net/netip"
)

// Reader is not available here: New reports ErrUnsupported.
type Reader struct{}

func New(*net.UDPConn) (*Reader, error) { return nil, ErrUnsupported }

func (*Reader) Recv(buf, oob []byte) (int, int, netip.AddrPort, error) {
	return 0, 0, netip.AddrPort{}, ErrUnsupported
}

func (*Reader) Send([]byte, netip.AddrPort) error { return ErrUnsupported }

//go:build !linux

package rawudp

import (
	"net"
	"net/netip"
	"time"
)

// Socket is not available here: Take reports ErrUnsupported.
type Socket struct{}

// Take reports ErrUnsupported and leaves conn as it is.
func Take(*net.UDPConn) (*Socket, error) { return nil, ErrUnsupported }

func (*Socket) Poll(buf, oob []byte) (int, int, netip.AddrPort, error) {
	return 0, 0, netip.AddrPort{}, ErrUnsupported
}

func (*Socket) Wait(buf, oob []byte) (int, int, netip.AddrPort, error) {
	return 0, 0, netip.AddrPort{}, ErrUnsupported
}

func (*Socket) SetWait(time.Duration) error       { return ErrUnsupported }
func (*Socket) Send([]byte, netip.AddrPort) error { return ErrUnsupported }
func (*Socket) LocalAddr() netip.AddrPort         { return netip.AddrPort{} }
func (*Socket) Close() error                      { return ErrUnsupported }

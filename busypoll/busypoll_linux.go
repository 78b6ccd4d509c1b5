package busypoll

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// Reader tries non-blocking reads of one UDP socket (IPv4 or IPv6).
// It is not safe for concurrent use; the socket must stay open while it is
// used (the Reader holds its descriptor, not a reference).
type Reader struct {
	fd   uintptr
	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6 // large enough for either family
}

// New prepares busy-polling reads of conn.
func New(conn *net.UDPConn) (*Reader, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("busypoll: %w", err)
	}
	r := &Reader{}
	if err := rc.Control(func(fd uintptr) { r.fd = fd }); err != nil {
		return nil, fmt.Errorf("busypoll: %w", err)
	}
	r.msg.Name = (*byte)(unsafe.Pointer(&r.name))
	r.msg.Iov = &r.iov
	r.msg.Iovlen = 1
	return r, nil
}

// Recv tries once to read a datagram into buf, and its control messages
// (such as SO_TIMESTAMPNS) into oob. It returns ErrAgain when none is
// waiting. It allocates nothing.
func (r *Reader) Recv(buf, oob []byte) (n, oobn int, from netip.AddrPort, err error) {
	if len(buf) == 0 {
		return 0, 0, from, fmt.Errorf("busypoll: empty buffer")
	}
	r.iov.Base = &buf[0]
	r.iov.SetLen(len(buf))
	r.msg.Namelen = uint32(unsafe.Sizeof(r.name))
	r.msg.Control = nil
	r.msg.SetControllen(0)
	if len(oob) > 0 {
		r.msg.Control = &oob[0]
		r.msg.SetControllen(len(oob))
	}
	// RawSyscall: the call never blocks (MSG_DONTWAIT), so the scheduler
	// need not hear of it.
	nr, _, errno := syscall.RawSyscall(syscall.SYS_RECVMSG, r.fd, uintptr(unsafe.Pointer(&r.msg)), syscall.MSG_DONTWAIT)
	switch errno {
	case 0:
	case syscall.EAGAIN, syscall.EINTR:
		return 0, 0, from, ErrAgain
	default:
		return 0, 0, from, errno
	}
	switch r.name.Family {
	case syscall.AF_INET:
		sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&r.name))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		from = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case syscall.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&r.name.Port))
		from = netip.AddrPortFrom(netip.AddrFrom16(r.name.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return int(nr), int(r.msg.Controllen), from, nil
}

// Send writes one datagram to to (IPv4) straight with sendto, without the
// netpoller. It allocates nothing.
func (r *Reader) Send(b []byte, to netip.AddrPort) error {
	if !to.Addr().Is4() || len(b) == 0 {
		return fmt.Errorf("busypoll: send to %v: IPv4 only", to)
	}
	var sa syscall.RawSockaddrInet4
	sa.Family = syscall.AF_INET
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(to.Port()>>8), byte(to.Port())
	sa.Addr = to.Addr().As4()
	_, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, r.fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	if errno != 0 {
		return errno
	}
	return nil
}

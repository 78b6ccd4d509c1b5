package rawudp

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// Socket is a UDP socket (IPv4 or IPv6) out of Go's netpoller. Poll, Wait
// and Send are for one goroutine, the one that closes it: the socket has
// one writer.
type Socket struct {
	fd     uintptr
	inet6  bool
	local  netip.AddrPort
	closed bool

	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6 // large enough for either family
}

// Take moves conn's socket out of the netpoller: it duplicates the
// descriptor, closes conn (Go's close takes the socket out of its epoll
// set; the duplicate keeps the socket, its binding and its options) and
// puts the socket in blocking mode, so Wait sleeps in the kernel. On error
// conn is left as it was.
func Take(conn *net.UDPConn) (*Socket, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("rawudp: %w", err)
	}
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	var fd int
	var dupErr error
	if err := rc.Control(func(f uintptr) {
		fd, dupErr = fcntlDup(int(f))
	}); err != nil {
		return nil, fmt.Errorf("rawudp: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("rawudp: duplicating the socket: %w", dupErr)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("rawudp: %w", err)
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("rawudp: %w", err)
	}
	conn.Close()
	s := &Socket{fd: uintptr(fd), local: local}
	_, s.inet6 = sa.(*syscall.SockaddrInet6)
	s.msg.Name = (*byte)(unsafe.Pointer(&s.name))
	s.msg.Iov = &s.iov
	s.msg.Iovlen = 1
	return s, nil
}

func fcntlDup(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// LocalAddr is the address the socket is bound to.
func (s *Socket) LocalAddr() netip.AddrPort { return s.local }

// SetWait bounds how long Wait sleeps (SO_RCVTIMEO); 0 waits for ever.
func (s *Socket) SetWait(d time.Duration) error {
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	if err := syscall.SetsockoptTimeval(int(s.fd), syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("rawudp: %w", err)
	}
	return nil
}

// Poll tries once to read a datagram into buf, and its control messages
// (such as SO_TIMESTAMPNS) into oob. It returns ErrAgain when none is
// waiting. It allocates nothing.
func (s *Socket) Poll(buf, oob []byte) (n, oobn int, from netip.AddrPort, err error) {
	return s.recv(buf, oob, syscall.MSG_DONTWAIT)
}

// Wait reads a datagram as a C program's blocking recvmsg does: one system
// call that sleeps in the kernel until a datagram comes, or ErrAgain after
// SetWait's bound. It allocates nothing.
func (s *Socket) Wait(buf, oob []byte) (n, oobn int, from netip.AddrPort, err error) {
	return s.recv(buf, oob, 0)
}

func (s *Socket) recv(buf, oob []byte, flags uintptr) (n, oobn int, from netip.AddrPort, err error) {
	if len(buf) == 0 {
		return 0, 0, from, fmt.Errorf("rawudp: empty buffer")
	}
	s.iov.Base = &buf[0]
	s.iov.SetLen(len(buf))
	s.msg.Namelen = uint32(unsafe.Sizeof(s.name))
	s.msg.Control = nil
	s.msg.SetControllen(0)
	if len(oob) > 0 {
		s.msg.Control = &oob[0]
		s.msg.SetControllen(len(oob))
	}
	var nr uintptr
	var errno syscall.Errno
	if flags&syscall.MSG_DONTWAIT != 0 {
		// RawSyscall: the call never blocks, so the scheduler need not
		// hear of it (a few hundred ns less per try).
		nr, _, errno = syscall.RawSyscall(syscall.SYS_RECVMSG, s.fd, uintptr(unsafe.Pointer(&s.msg)), flags)
	} else {
		// Syscall: it sleeps, and the runtime lets other goroutines have
		// this thread's P meanwhile. A signal (the runtime preempts with
		// SIGURG) ends a receive that has a timeout with EINTR even under
		// SA_RESTART: wait again rather than report a timeout that was not.
		for {
			nr, _, errno = syscall.Syscall(syscall.SYS_RECVMSG, s.fd, uintptr(unsafe.Pointer(&s.msg)), flags)
			if errno != syscall.EINTR {
				break
			}
			s.msg.Namelen = uint32(unsafe.Sizeof(s.name))
			s.msg.SetControllen(len(oob))
		}
	}
	switch errno {
	case 0:
	case syscall.EAGAIN, syscall.EINTR:
		return 0, 0, from, ErrAgain
	default:
		return 0, 0, from, errno
	}
	switch s.name.Family {
	case syscall.AF_INET:
		sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&s.name))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		from = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case syscall.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&s.name.Port))
		from = netip.AddrPortFrom(netip.AddrFrom16(s.name.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return int(nr), int(s.msg.Controllen), from, nil
}

// Send writes one datagram to to with sendto. Should the send buffer be
// full it waits for room, as a blocking socket does. It allocates nothing.
func (s *Socket) Send(b []byte, to netip.AddrPort) error {
	if len(b) == 0 {
		return fmt.Errorf("rawudp: empty datagram")
	}
	var sa4 syscall.RawSockaddrInet4
	var sa6 syscall.RawSockaddrInet6
	var sa unsafe.Pointer
	var salen uintptr
	switch {
	case s.inet6:
		sa6.Family = syscall.AF_INET6
		p := (*[2]byte)(unsafe.Pointer(&sa6.Port))
		p[0], p[1] = byte(to.Port()>>8), byte(to.Port())
		sa6.Addr = to.Addr().As16() // IPv4 as v4-mapped
		sa, salen = unsafe.Pointer(&sa6), unsafe.Sizeof(sa6)
	case to.Addr().Is4() || to.Addr().Is4In6():
		sa4.Family = syscall.AF_INET
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		p[0], p[1] = byte(to.Port()>>8), byte(to.Port())
		sa4.Addr = to.Addr().Unmap().As4()
		sa, salen = unsafe.Pointer(&sa4), unsafe.Sizeof(sa4)
	default:
		return fmt.Errorf("rawudp: send to %v from an IPv4 socket", to)
	}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, s.fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_DONTWAIT, uintptr(sa), salen)
	if errno == syscall.EAGAIN {
		_, _, errno = syscall.Syscall6(syscall.SYS_SENDTO, s.fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			0, uintptr(sa), salen)
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// Close closes the socket. A Wait in progress returns within SetWait's
// bound.
func (s *Socket) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return syscall.Close(int(s.fd))
}

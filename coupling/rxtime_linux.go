package coupling

import (
	"net"
	"syscall"
	"unsafe"
)

// enableRxTimes asks the kernel to stamp each datagram with its arrival
// time (SO_TIMESTAMPNS), which tells the lockstep watchdog whether BeamNG
// sent a message before it could have had the reply to the previous one.
func enableRxTimes(conn *net.UDPConn) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return false
	}
	return true
}

// rxTimestamp finds the arrival time in a datagram's control messages,
// without allocating; 0 when there is none.
func rxTimestamp(oob []byte) int64 {
	for off := 0; off+syscall.SizeofCmsghdr <= len(oob); {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[off]))
		data := off + syscall.CmsgLen(0)
		if int(h.Len) < syscall.CmsgLen(0) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && data+int(unsafe.Sizeof(syscall.Timespec{})) <= len(oob) {
			return (*syscall.Timespec)(unsafe.Pointer(&oob[data])).Nano()
		}
		off += syscall.CmsgSpace(int(h.Len) - syscall.CmsgLen(0))
	}
	return 0
}

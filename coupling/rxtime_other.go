//go:build !linux

package coupling

import "net"

// enableRxTimes: arrival times are read on Linux only; elsewhere the
// lockstep watchdog cannot see BeamNG running ahead.
func enableRxTimes(*net.UDPConn) bool { return false }

func rxTimestamp([]byte) int64 { return 0 }

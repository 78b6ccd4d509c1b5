//go:build unix

package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// selfPeakRSS is this process's peak resident set, in KiB.
func selfPeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss)
}

// livePeakRSS reads a running process's peak resident set (VmHWM) from
// /proc, in KiB; 0 where there is no /proc. Unlike the rusage of an ended
// child, it does not count the forked parent's memory before exec.
func livePeakRSS(pid int) int64 { return procStatus("/proc/"+strconv.Itoa(pid)+"/status", "VmHWM:") }

// currentRSS is this process's resident set now (VmRSS), in KiB; 0 where
// there is no /proc.
func currentRSS() int64 { return procStatus("/proc/self/status", "VmRSS:") }

// procStatus reads one "kB" field of a /proc status file.
func procStatus(file, field string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// childPeakRSS is an ended child's peak resident set, in KiB.
func childPeakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

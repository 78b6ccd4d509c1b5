package main

import (
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// processMemoryCounters is PROCESS_MEMORY_COUNTERS (psapi.h).
type processMemoryCounters struct {
	cb                         uint32
	pageFaultCount             uint32
	peakWorkingSetSize         uintptr
	workingSetSize             uintptr
	quotaPeakPagedPoolUsage    uintptr
	quotaPagedPoolUsage        uintptr
	quotaPeakNonPagedPoolUsage uintptr
	quotaNonPagedPoolUsage     uintptr
	pagefileUsage              uintptr
	peakPagefileUsage          uintptr
}

// K32GetProcessMemoryInfo is kernel32's since Windows 7 (psapi's
// GetProcessMemoryInfo forwards to it).
var getProcessMemoryInfo = windows.NewLazySystemDLL("kernel32.dll").NewProc("K32GetProcessMemoryInfo")

// memory reads a process's working set (Windows' resident set), now and
// at its peak, in KiB; zeros when it cannot.
func memory(h windows.Handle) (now, peak int64) {
	var c processMemoryCounters
	c.cb = uint32(unsafe.Sizeof(c))
	if r, _, _ := getProcessMemoryInfo.Call(uintptr(h), uintptr(unsafe.Pointer(&c)), uintptr(c.cb)); r == 0 {
		return 0, 0
	}
	return int64(c.workingSetSize / 1024), int64(c.peakWorkingSetSize / 1024)
}

// selfPeakRSS is this process's peak working set, in KiB.
func selfPeakRSS() int64 {
	_, peak := memory(windows.CurrentProcess())
	return peak
}

// livePeakRSS is a running process's peak working set, in KiB.
func livePeakRSS(pid int) int64 {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0
	}
	defer windows.CloseHandle(h)
	_, peak := memory(h)
	return peak
}

// currentRSS is this process's working set now, in KiB.
func currentRSS() int64 {
	now, _ := memory(windows.CurrentProcess())
	return now
}

// childPeakRSS: Windows keeps no memory figures of an ended process.
func childPeakRSS(*os.ProcessState) int64 { return 0 }

// cpuTime is the CPU time this process has used, user and kernel.
func cpuTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// Filetime counts 100 ns.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100
}

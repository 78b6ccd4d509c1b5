package main

import (
	"testing"

	"golang.org/x/sys/windows"
)

var (
	ntdll            = windows.NewLazySystemDLL("ntdll.dll")
	ntSuspendProcess = ntdll.NewProc("NtSuspendProcess")
	ntResumeProcess  = ntdll.NewProc("NtResumeProcess")
)

// suspend suspends every thread of process pid, as a debugger does
// (NtSuspendProcess); the function it returns lets it go on.
func suspend(t *testing.T, pid int) func() {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_SUSPEND_RESUME, false, uint32(pid))
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _ := ntSuspendProcess.Call(uintptr(h)); st != 0 {
		windows.CloseHandle(h)
		t.Fatalf("NtSuspendProcess: status %#x", st)
	}
	return func() {
		ntResumeProcess.Call(uintptr(h))
		windows.CloseHandle(h)
	}
}

// alive reports whether process pid runs.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, _ := windows.WaitForSingleObject(h, 0)
	return ev == uint32(windows.WAIT_TIMEOUT)
}

// killedSays is what the master's log says of the coupling's process
// killed (TerminateProcess, exit status 1).
const killedSays = "fmi2DoStep: beamconnect's coupling process ended with status 1"

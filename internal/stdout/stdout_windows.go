package stdout

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"
)

// keep duplicates the standard output handle. os.Stdout must not keep the
// original: a C runtime's _dup2 (below) closes it.
func keep() *os.File {
	h, err := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
	if err != nil || h == 0 || h == windows.InvalidHandle {
		return nil
	}
	self := windows.CurrentProcess()
	var dup windows.Handle
	if windows.DuplicateHandle(self, h, self, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS) != nil {
		return nil
	}
	return os.NewFile(uintptr(dup), "/dev/stdout")
}

var diverted struct {
	once sync.Once
	err  error
}

// crts are the shared C runtimes an FMU's binary may print through. One
// that a DLL links statically, or one loaded after Divert, reads the
// standard output handle when it starts, which then is stderr's.
var crts = []string{"msvcrt.dll", "ucrtbase.dll"}

// crt is a C runtime running in the process: its _dup2 and _close, and
// the handle its fd 1 had before Divert.
type crt struct {
	dup2, close uintptr
	fd1         windows.Handle
}

func divert() error {
	diverted.once.Do(func() {
		errh, err := windows.GetStdHandle(windows.STD_ERROR_HANDLE)
		if err != nil {
			diverted.err = &os.SyscallError{Syscall: "GetStdHandle", Err: err}
			return
		}
		// The C runtimes already running took the standard output handle
		// for their fd 1 when they started. Read it now, while it is still
		// that handle: one that reads it only when its fd 1 is first used
		// would otherwise read stderr's, and its _dup2 below would close
		// stderr.
		var running []crt
		for _, name := range crts {
			var mod windows.Handle
			const unchangedRefcount = 2 // GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT
			if windows.GetModuleHandleEx(unchangedRefcount, windows.StringToUTF16Ptr(name), &mod) != nil {
				continue // not loaded
			}
			dup2, err1 := windows.GetProcAddress(mod, "_dup2")
			closeFd, err2 := windows.GetProcAddress(mod, "_close")
			osf, err3 := windows.GetProcAddress(mod, "_get_osfhandle")
			if err1 != nil || err2 != nil || err3 != nil {
				continue
			}
			h, _, _ := syscall.SyscallN(osf, 1)
			running = append(running, crt{dup2: dup2, close: closeFd, fd1: windows.Handle(h)})
		}
		if err := windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, errh); err != nil {
			diverted.err = &os.SyscallError{Syscall: "SetStdHandle", Err: err}
			return
		}
		// Make each runtime's fd 1 a copy of its fd 2. First close every
		// fd 1, then copy: two runtimes that took the same handle would
		// otherwise close it twice, and the second close, after the first
		// runtime's copy had been given the freed handle's number, would
		// close that copy. A handle made at once after each close holds
		// the freed number meanwhile (the second close then closes the
		// hold, which is made again). A runtime whose fd 1 is stderr's
		// handle already is left as it is.
		held := map[windows.Handle]windows.Handle{} // fd 1's number → the hold made after it was closed
		var redirect []crt
		for _, c := range running {
			if c.fd1 == errh {
				continue
			}
			syscall.SyscallN(c.close, 1)
			if h, ok := held[c.fd1]; ok && h == c.fd1 {
				delete(held, c.fd1) // the hold had the number: closed just now
			}
			if h, err := windows.CreateEvent(nil, 0, 0, nil); err == nil {
				if old, ok := held[c.fd1]; ok {
					windows.CloseHandle(old)
				}
				held[c.fd1] = h
			}
			redirect = append(redirect, c)
		}
		for _, c := range redirect {
			syscall.SyscallN(c.dup2, 2, 1)
		}
		for _, h := range held {
			windows.CloseHandle(h)
		}
	})
	return diverted.err
}

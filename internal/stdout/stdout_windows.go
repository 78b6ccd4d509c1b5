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

func divert() error {
	diverted.once.Do(func() {
		errh, err := windows.GetStdHandle(windows.STD_ERROR_HANDLE)
		if err == nil {
			err = windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, errh)
		}
		if err != nil {
			diverted.err = &os.SyscallError{Syscall: "SetStdHandle", Err: err}
			return
		}
		// A C runtime already running took fd 1's handle at its start:
		// make its fd 1 a copy of its fd 2.
		for _, name := range crts {
			var mod windows.Handle
			const unchangedRefcount = 2 // GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT
			if windows.GetModuleHandleEx(unchangedRefcount, windows.StringToUTF16Ptr(name), &mod) != nil {
				continue // not loaded
			}
			if dup2, err := windows.GetProcAddress(mod, "_dup2"); err == nil {
				syscall.SyscallN(dup2, 2, 1)
			}
		}
	})
	return diverted.err
}

package stdout

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// foreignWrites are what writeForeign writes: to the standard output
// handle, and to fd 1 of two C runtimes, one started before Divert
// (msvcrt, whose fd 1 Divert redirects) and one after (ucrtbase, which
// reads the handle Divert set when it starts).
var foreignWrites = []string{"handle", "msvcrt", "ucrtbase"}

func loadForeign() any {
	d, err := syscall.LoadDLL("msvcrt.dll")
	if err != nil {
		panic(err)
	}
	return d
}

func writeForeign(before any) {
	h, _ := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
	var n uint32
	windows.WriteFile(h, []byte("handle\n"), &n, nil)
	crtWrite(before.(*syscall.DLL), "msvcrt\n")
	after, err := syscall.LoadDLL("ucrtbase.dll")
	if err != nil {
		panic(err)
	}
	crtWrite(after, "ucrtbase\n")
}

// crtWrite is the C runtime's _write(1, s, len(s)).
func crtWrite(d *syscall.DLL, s string) {
	p := d.MustFindProc("_write")
	b := []byte(s)
	p.Call(1, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
}

package stdout

import (
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// foreignWrites are what writeForeign writes: to the standard output
// handle, and to fd 1 of two C runtimes, msvcrt and ucrtbase, each
// started before Divert (whose fd 1 Divert redirects) or after it (which
// reads the handle Divert set when it starts).
var foreignWrites = []string{"handle", "msvcrt", "ucrtbase"}

// loadOrders are the C runtimes running when Divert comes, in the order
// they were loaded: one, or both (which then took the same standard
// output handle when they started), and none.
var loadOrders = []string{"msvcrt", "msvcrt,ucrtbase", "ucrtbase,msvcrt", "none"}

// loadForeign loads the C runtimes named in before, in order.
func loadForeign(before string) any {
	for _, name := range strings.Split(before, ",") {
		if name != "none" {
			if _, err := syscall.LoadDLL(name + ".dll"); err != nil {
				panic(err)
			}
		}
	}
	return nil
}

func writeForeign(any) {
	h, _ := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
	var n uint32
	windows.WriteFile(h, []byte("handle\n"), &n, nil)
	for _, name := range []string{"msvcrt", "ucrtbase"} {
		d, err := syscall.LoadDLL(name + ".dll") // loaded already, or now
		if err != nil {
			panic(err)
		}
		crtWrite(d, name+"\n")
	}
}

// crtWrite is the C runtime's _write(1, s, len(s)).
func crtWrite(d *syscall.DLL, s string) {
	p := d.MustFindProc("_write")
	b := []byte(s)
	p.Call(1, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
}

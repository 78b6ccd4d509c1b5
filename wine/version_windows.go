package wine

import (
	"sync"
	"syscall"
	"unsafe"
)

// Version is the version of Wine this process runs under, "" on Windows
// itself. Wine's ntdll exports wine_get_version; Microsoft's does not.
var Version = sync.OnceValue(func() string {
	p := syscall.NewLazyDLL("ntdll.dll").NewProc("wine_get_version")
	if p.Find() != nil {
		return ""
	}
	r, _, _ := p.Call()
	if r == 0 {
		return "?"
	}
	// r points into ntdll's static data: a NUL-terminated ASCII string.
	s := *(*unsafe.Pointer)(unsafe.Pointer(&r))
	n := 0
	for n < 64 && *(*byte)(unsafe.Add(s, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(s), n))
})

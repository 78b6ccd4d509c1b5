package fmi

import (
	"net/url"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"
)

var kernel32 = syscall.NewLazyDLL("kernel32.dll")

func open(path string) (uintptr, error) {
	if err := loadLibc(); err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, err
	}
	p, err := syscall.UTF16PtrFromString(abs)
	if err != nil {
		return 0, err
	}
	// LOAD_WITH_ALTERED_SEARCH_PATH: DLLs the FMU's binary needs are found
	// beside it, in its binaries folder, as FMI lets FMUs ship them.
	const loadWithAlteredSearchPath = 0x00000008
	h, _, callErr := kernel32.NewProc("LoadLibraryExW").Call(uintptr(unsafe.Pointer(p)), 0, loadWithAlteredSearchPath)
	if h == 0 {
		return 0, callErr
	}
	return h, nil
}

// unload frees the library, so that its file can be deleted: Windows
// keeps a loaded DLL's file open.
func unload(h uintptr) error { return syscall.FreeLibrary(syscall.Handle(h)) }

func symbol(h uintptr, name string) (uintptr, error) {
	p, err := syscall.GetProcAddress(syscall.Handle(h), name)
	return p, err
}

var libc struct {
	once         sync.Once
	err          error
	calloc, free uintptr
}

func loadLibc() error {
	libc.once.Do(func() {
		d, err := syscall.LoadDLL("msvcrt.dll")
		if err != nil {
			libc.err = err
			return
		}
		c, err := d.FindProc("calloc")
		if err != nil {
			libc.err = err
			return
		}
		f, err := d.FindProc("free")
		if err != nil {
			libc.err = err
			return
		}
		libc.calloc, libc.free = c.Addr(), f.Addr()
	})
	return libc.err
}

// fileURI is FMI 2.0's fmuResourceLocation: file:///C:/path/resources/.
func fileURI(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return (&url.URL{Scheme: "file", Path: "/" + filepath.ToSlash(abs) + "/"}).String()
}

func dirPath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return abs + `\`
}

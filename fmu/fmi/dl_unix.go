//go:build !windows

package fmi

import (
	"net/url"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/ebitengine/purego"
)

func open(path string) (uintptr, error) {
	if err := loadLibc(); err != nil {
		return 0, err
	}
	// RTLD_LOCAL: two FMUs export the same fmi2 names; each library's
	// functions are looked up in its own handle.
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func symbol(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

func unload(h uintptr) error { return purego.Dlclose(h) }

// libc holds the C allocator, which FMI 2.0 FMUs are handed to allocate
// with and which holds the strings and structs they may keep pointers to.
var libc struct {
	once         sync.Once
	err          error
	calloc, free uintptr
}

func loadLibc() error {
	libc.once.Do(func() {
		name := "libc.so.6"
		if runtime.GOOS == "darwin" {
			name = "/usr/lib/libSystem.B.dylib"
		}
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			libc.calloc, err = purego.Dlsym(h, "calloc")
		}
		if err == nil {
			libc.free, err = purego.Dlsym(h, "free")
		}
		if err == nil {
			catchExit(h)
		}
		libc.err = err
	})
	return libc.err
}

// fileURI is FMI 2.0's fmuResourceLocation: a file URI of the folder.
func fileURI(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs) + "/"}).String()
}

// dirPath is FMI 3.0's resourcePath: the absolute path, with a trailing
// separator.
func dirPath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return abs + string(filepath.Separator)
}

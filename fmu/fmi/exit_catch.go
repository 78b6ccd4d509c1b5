//go:build linux && !race

package fmi

import "github.com/ebitengine/purego"

// catchExit registers exited with the C library (the FMU's, which is the
// process's) to run when exit() is called: glibc's on_exit, which passes
// the status. Go's own exit never calls the C library's, so it runs only
// when C code calls exit(). A call of _exit() or quick_exit() skips it.
// Not under the race detector, whose runtime ends every program through
// the C library's exit.
func catchExit(libcHandle uintptr) {
	onExit, err := purego.Dlsym(libcHandle, "on_exit")
	if err != nil {
		return // not glibc
	}
	cb := purego.NewCallback(func(status, _ uintptr) uintptr {
		exited(int(int32(status)))
		return 0
	})
	purego.SyscallN(onExit, cb, 0)
}

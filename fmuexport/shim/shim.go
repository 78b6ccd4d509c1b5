// Package shim carries the exported FMU's binary: a small C library
// (c/shim.c, c/fmi2.c, c/fmi3.c, c/interrupt.c, written here from the FMI 2.0 and 3.0
// standards) that implements both standards' co-simulation functions by
// running the coupling in a beamconnect child process, and keeps nothing
// of Go in the master's process. It is built by the script beside it, for
// x86-64 Linux with gcc and x86-64 Windows with mingw-w64, and the two
// binaries are embedded here, so that a beamconnect built with Go alone
// exports FMUs for both.
package shim

import (
	"embed"
	"fmt"
)

// The binaries, and what they were built from.
//
//go:embed bin/shim.so bin/shim.dll bin/SOURCES.sha256 bin/COMPILERS
var bin embed.FS

// Sources are the files the binaries are built from, for the test that
// checks bin/SOURCES.sha256 against them.
//
//go:embed build c/fmi.h c/mailbox.h c/protocol.h c/shim.h c/shim.c c/fmi2.c c/fmi3.c c/interrupt.c
var Sources embed.FS

// Binary is the shim's library for x86-64 goos: "linux" (a .so) or
// "windows" (a .dll). One library serves FMI 2.0 and 3.0: their
// functions have different names.
func Binary(goos string) ([]byte, error) {
	name := map[string]string{"linux": "bin/shim.so", "windows": "bin/shim.dll"}[goos]
	if name == "" {
		return nil, fmt.Errorf("the FMU's library is built for linux and windows, not %s", goos)
	}
	return bin.ReadFile(name)
}

// Built is bin/SOURCES.sha256: each source's SHA-256 as sha256sum writes
// it, when the binaries were built.
func Built() []byte {
	b, _ := bin.ReadFile("bin/SOURCES.sha256")
	return b
}

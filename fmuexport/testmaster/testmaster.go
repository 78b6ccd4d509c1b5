// Package testmaster builds, for tests, a small FMI master written in C
// (c/master.c, from the FMI 2.0 and 3.0 standards): it loads an unpacked
// co-simulation FMU, steps it with one input stepped from 0, writes the
// outputs as CSV, and with -twice unloads the library and does it all
// again. With -probe it probes the FMU's lifecycle instead (c/probe.c):
// cycles of instantiate and free, a free after every state, two threads
// on one instance, an interrupt while a call waits. Compiled with the
// machine's C compiler, or for Windows with mingw-w64 beforehand (the
// tests under Wine have no compiler).
package testmaster

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"beamconnect/internal/testprog"
)

// The sources, compiled together.
//
//go:embed c/master.h c/master.c c/probe.c
var sources embed.FS

// Name is the master's program name among prebuilt test programs
// (testprog.Prebuilt): fmumaster, fmumaster.exe on Windows.
const Name = "fmumaster"

// Compile compiles the master with the C compiler cc for x86-64 goos
// ("linux" or "windows", such as x86_64-w64-mingw32-gcc for it) into out.
func Compile(cc, goos, out string) error {
	dir, err := os.MkdirTemp("", "testmaster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := []string{"-std=c99", "-O2", "-o", out}
	for _, name := range []string{"master.h", "master.c", "probe.c"} {
		data, err := sources.ReadFile("c/" + name)
		if err != nil {
			return err
		}
		src := filepath.Join(dir, name)
		if err := os.WriteFile(src, data, 0o644); err != nil {
			return err
		}
		if filepath.Ext(name) == ".c" {
			args = append(args, src)
		}
	}
	if goos == "windows" {
		args = append(args, "-lws2_32")
	} else {
		args = append([]string{"-D_POSIX_C_SOURCE=200809L", "-pthread"}, append(args, "-ldl", "-lm")...)
	}
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("testmaster: %s: %v\n%s", cc, err, msg)
	}
	return nil
}

// Path is the master for this machine: prebuilt (testprog.Prebuilt's
// folder), or compiled with $CC or cc into the test's temporary folder;
// the test is skipped where neither can be had.
func Path(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(testprog.Prebuilt); dir != "" {
		p := filepath.Join(dir, Name)
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no prebuilt FMI master: %v", err)
		}
		return p
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	cc, err := exec.LookPath(cc)
	if err != nil {
		t.Skipf("building the test's FMI master needs a C compiler (cc, or $CC): %v", err)
	}
	p := filepath.Join(t.TempDir(), Name)
	if err := Compile(cc, runtime.GOOS, p); err != nil {
		t.Fatal(err)
	}
	return p
}

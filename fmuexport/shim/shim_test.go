package shim

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"debug/pe"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"beamconnect/fmu"
)

// The binaries beamconnect embeds were built from the sources beside them:
// bin/SOURCES.sha256 (written by the build script) names each source's
// digest, and they must be today's. After editing a source, run
// `bash fmuexport/shim/build` and commit what it writes; .ci/run builds
// them again and compares them byte for byte.
func TestBinariesBuiltFromTheseSources(t *testing.T) {
	var want bytes.Buffer
	for _, name := range []string{"build", "c/fmi.h", "c/mailbox.h", "c/protocol.h", "c/shim.h", "c/shim.c", "c/fmi2.c", "c/fmi3.c", "c/interrupt.c"} {
		data, err := Sources.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		listed := strings.TrimPrefix(name, "c/")
		if name == "build" {
			listed = "../build" // the script runs sha256sum from c/
		}
		fmt.Fprintf(&want, "%x  %s\n", sha256.Sum256(data), listed)
	}
	if got := Built(); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("the shim's binaries were not built from these sources: run `bash fmuexport/shim/build` and commit bin/\nbin/SOURCES.sha256:\n%s\nthe sources:\n%s", got, want.Bytes())
	}
}

// Every function of FMI 2.0's and 3.0's co-simulation interfaces, and of
// the rest of each standard: an importer may look each one up, and
// fmusim refuses a library without one.
var functions = append(fmu.RequiredFunctions(2, []string{fmu.CoSim, fmu.ME}),
	fmu.RequiredFunctions(3, []string{fmu.CoSim, fmu.ME, "ScheduledExecution"})...)

// The Linux library exports every function, loads on a glibc as old as
// 2.17 (CentOS 7, RHEL 7) and needs nothing but the C library.
func TestLinuxLibrary(t *testing.T) {
	data, err := Binary("linux")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_DYN {
		t.Fatalf("machine %v, type %v: want an x86-64 shared library", f.Machine, f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			exported = append(exported, s.Name)
		}
		if s.Section == elf.SHN_UNDEF && s.Version != "" {
			if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && newer(v, "2.17") {
				t.Errorf("%s needs %s: the library would not load on glibc 2.17", s.Name, s.Version)
			}
		}
	}
	for _, fn := range functions {
		if !slices.Contains(exported, fn) {
			t.Errorf("the Linux library does not export %s", fn)
		}
	}
	if extra := len(exported) - len(functions); extra != 0 {
		t.Errorf("the Linux library exports %d functions besides FMI's", extra)
	}
	libs, _ := f.ImportedLibraries()
	if !slices.Equal(libs, []string{"libc.so.6"}) {
		t.Errorf("the Linux library needs %v, want libc.so.6 only", libs)
	}
}

// newer reports whether version a (2.34) is newer than b (2.17).
func newer(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x > y
		}
	}
	return false
}

// The Windows library exports every function and needs only what every
// Windows has (kernel32, msvcrt): no mingw-w64 runtime DLL beside it.
func TestWindowsLibrary(t *testing.T) {
	data, err := Binary("windows")
	if err != nil {
		t.Fatal(err)
	}
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 || f.Characteristics&pe.IMAGE_FILE_DLL == 0 {
		t.Fatalf("machine %#x, characteristics %#x: want an x86-64 DLL", f.Machine, f.Characteristics)
	}
	lib, err := fmu.ReadLibrary(data)
	if err != nil {
		t.Fatal(err)
	}
	exported := lib.Exports
	for _, fn := range functions {
		if !slices.Contains(exported, fn) {
			t.Errorf("the Windows library does not export %s", fn)
		}
	}
	if extra := len(exported) - len(functions); extra != 0 {
		t.Errorf("the Windows library exports %d functions besides FMI's", extra)
	}
	libs, _ := f.ImportedLibraries()
	for _, l := range libs {
		if !slices.Contains([]string{"kernel32.dll", "msvcrt.dll"}, strings.ToLower(l)) {
			t.Errorf("the Windows library needs %s", l)
		}
	}
}

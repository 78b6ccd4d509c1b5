package shim

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The binaries beamconnect embeds were built from the sources beside them:
// bin/SOURCES.sha256 (written by the build script) names each source's
// digest, and they must be today's. After editing a source, run
// `bash fmuexport/shim/build` and commit what it writes; .ci/run builds
// them again and compares them byte for byte.
func TestBinariesBuiltFromTheseSources(t *testing.T) {
	var want bytes.Buffer
	for _, name := range []string{"build", "c/fmi.h", "c/mailbox.h", "c/protocol.h", "c/shim.h", "c/shim.c", "c/fmi2.c", "c/fmi3.c"} {
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
var functions = strings.Fields(`
fmi2GetTypesPlatform fmi2GetVersion fmi2SetDebugLogging fmi2Instantiate fmi2FreeInstance
fmi2SetupExperiment fmi2EnterInitializationMode fmi2ExitInitializationMode fmi2Terminate fmi2Reset
fmi2GetReal fmi2GetInteger fmi2GetBoolean fmi2GetString fmi2SetReal fmi2SetInteger fmi2SetBoolean fmi2SetString
fmi2GetFMUstate fmi2SetFMUstate fmi2FreeFMUstate fmi2SerializedFMUstateSize fmi2SerializeFMUstate
fmi2DeSerializeFMUstate fmi2GetDirectionalDerivative
fmi2EnterEventMode fmi2NewDiscreteStates fmi2EnterContinuousTimeMode fmi2CompletedIntegratorStep fmi2SetTime
fmi2SetContinuousStates fmi2GetDerivatives fmi2GetEventIndicators fmi2GetContinuousStates fmi2GetNominalsOfContinuousStates
fmi2SetRealInputDerivatives fmi2GetRealOutputDerivatives fmi2DoStep fmi2CancelStep fmi2GetStatus fmi2GetRealStatus
fmi2GetIntegerStatus fmi2GetBooleanStatus fmi2GetStringStatus
fmi3GetVersion fmi3SetDebugLogging fmi3InstantiateModelExchange fmi3InstantiateCoSimulation
fmi3InstantiateScheduledExecution fmi3FreeInstance fmi3EnterInitializationMode fmi3ExitInitializationMode
fmi3EnterEventMode fmi3Terminate fmi3Reset
fmi3GetFloat32 fmi3GetFloat64 fmi3GetInt8 fmi3GetUInt8 fmi3GetInt16 fmi3GetUInt16 fmi3GetInt32 fmi3GetUInt32
fmi3GetInt64 fmi3GetUInt64 fmi3GetBoolean fmi3GetString fmi3GetBinary fmi3GetClock
fmi3SetFloat32 fmi3SetFloat64 fmi3SetInt8 fmi3SetUInt8 fmi3SetInt16 fmi3SetUInt16 fmi3SetInt32 fmi3SetUInt32
fmi3SetInt64 fmi3SetUInt64 fmi3SetBoolean fmi3SetString fmi3SetBinary fmi3SetClock
fmi3GetNumberOfVariableDependencies fmi3GetVariableDependencies
fmi3GetFMUState fmi3SetFMUState fmi3FreeFMUState fmi3SerializedFMUStateSize fmi3SerializeFMUState fmi3DeserializeFMUState
fmi3GetDirectionalDerivative fmi3GetAdjointDerivative fmi3EnterConfigurationMode fmi3ExitConfigurationMode
fmi3GetIntervalDecimal fmi3GetIntervalFraction fmi3GetShiftDecimal fmi3GetShiftFraction
fmi3SetIntervalDecimal fmi3SetIntervalFraction fmi3SetShiftDecimal fmi3SetShiftFraction
fmi3EvaluateDiscreteStates fmi3UpdateDiscreteStates
fmi3EnterContinuousTimeMode fmi3CompletedIntegratorStep fmi3SetTime fmi3SetContinuousStates
fmi3GetContinuousStateDerivatives fmi3GetEventIndicators fmi3GetContinuousStates fmi3GetNominalsOfContinuousStates
fmi3GetNumberOfEventIndicators fmi3GetNumberOfContinuousStates
fmi3EnterStepMode fmi3GetOutputDerivatives fmi3DoStep fmi3ActivateModelPartition`)

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
	exported, err := exports(f)
	if err != nil {
		t.Fatal(err)
	}
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

// exports lists the names a PE file exports (its export directory: the
// first data directory of the optional header).
func exports(f *pe.File) ([]string, error) {
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok || len(oh.DataDirectory) == 0 {
		return nil, fmt.Errorf("no 64-bit optional header")
	}
	dir := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
	read := func(rva, n uint32) ([]byte, error) {
		for _, s := range f.Sections {
			if rva >= s.VirtualAddress && rva+n <= s.VirtualAddress+max(s.VirtualSize, s.Size) {
				data, err := s.Data()
				if err != nil {
					return nil, err
				}
				off := rva - s.VirtualAddress
				if int(off+n) > len(data) {
					return nil, fmt.Errorf("rva %#x beyond its section", rva)
				}
				return data[off : off+n], nil
			}
		}
		return nil, fmt.Errorf("rva %#x in no section", rva)
	}
	head, err := read(dir.VirtualAddress, 40)
	if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(head[24:])
	namesRVA := binary.LittleEndian.Uint32(head[32:])
	table, err := read(namesRVA, 4*n)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range n {
		rva := binary.LittleEndian.Uint32(table[4*i:])
		b, err := read(rva, 1)
		if err != nil {
			return nil, err
		}
		for k := uint32(1); b[len(b)-1] != 0; k++ {
			if b, err = read(rva, k+1); err != nil {
				return nil, err
			}
		}
		names = append(names, string(b[:len(b)-1]))
	}
	return names, nil
}

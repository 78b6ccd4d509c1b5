package fmu

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The functions of the FMI 2.0 and 3.0 C APIs, as the standards define
// them. A binary exports every function of the common API and of each
// interface its description claims, whether the FMU supports the
// capability or not (a function it does not support returns an error):
// masters look every one of them up when they load the binary and refuse
// one that lacks any (FMPy: "undefined symbol").
var (
	fmi2Common = []string{
		"fmi2GetTypesPlatform", "fmi2GetVersion", "fmi2SetDebugLogging", "fmi2Instantiate", "fmi2FreeInstance",
		"fmi2SetupExperiment", "fmi2EnterInitializationMode", "fmi2ExitInitializationMode", "fmi2Terminate", "fmi2Reset",
		"fmi2GetReal", "fmi2GetInteger", "fmi2GetBoolean", "fmi2GetString",
		"fmi2SetReal", "fmi2SetInteger", "fmi2SetBoolean", "fmi2SetString",
		"fmi2GetFMUstate", "fmi2SetFMUstate", "fmi2FreeFMUstate",
		"fmi2SerializedFMUstateSize", "fmi2SerializeFMUstate", "fmi2DeSerializeFMUstate",
		"fmi2GetDirectionalDerivative",
	}
	fmi2ME = []string{
		"fmi2EnterEventMode", "fmi2NewDiscreteStates", "fmi2EnterContinuousTimeMode", "fmi2CompletedIntegratorStep",
		"fmi2SetTime", "fmi2SetContinuousStates", "fmi2GetDerivatives", "fmi2GetEventIndicators",
		"fmi2GetContinuousStates", "fmi2GetNominalsOfContinuousStates",
	}
	fmi2CS = []string{
		"fmi2SetRealInputDerivatives", "fmi2GetRealOutputDerivatives", "fmi2DoStep", "fmi2CancelStep",
		"fmi2GetStatus", "fmi2GetRealStatus", "fmi2GetIntegerStatus", "fmi2GetBooleanStatus", "fmi2GetStringStatus",
	}
	fmi3Common = fmi3CommonFunctions()
	fmi3ME     = []string{
		"fmi3EnterContinuousTimeMode", "fmi3CompletedIntegratorStep", "fmi3SetTime", "fmi3SetContinuousStates",
		"fmi3GetContinuousStateDerivatives", "fmi3GetEventIndicators", "fmi3GetContinuousStates",
		"fmi3GetNominalsOfContinuousStates", "fmi3GetNumberOfEventIndicators", "fmi3GetNumberOfContinuousStates",
	}
	fmi3CS = []string{"fmi3EnterStepMode", "fmi3GetOutputDerivatives", "fmi3DoStep"}
	fmi3SE = []string{"fmi3ActivateModelPartition"}
)

func fmi3CommonFunctions() []string {
	fs := []string{
		"fmi3GetVersion", "fmi3SetDebugLogging",
		"fmi3InstantiateModelExchange", "fmi3InstantiateCoSimulation", "fmi3InstantiateScheduledExecution",
		"fmi3FreeInstance", "fmi3EnterInitializationMode", "fmi3ExitInitializationMode", "fmi3EnterEventMode",
		"fmi3Terminate", "fmi3Reset",
	}
	for _, dir := range []string{"Get", "Set"} {
		for _, t := range []string{"Float32", "Float64", "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32",
			"Int64", "UInt64", "Boolean", "String", "Binary", "Clock"} {
			fs = append(fs, "fmi3"+dir+t)
		}
	}
	return append(fs,
		"fmi3GetNumberOfVariableDependencies", "fmi3GetVariableDependencies",
		"fmi3GetFMUState", "fmi3SetFMUState", "fmi3FreeFMUState",
		"fmi3SerializedFMUStateSize", "fmi3SerializeFMUState", "fmi3DeserializeFMUState",
		"fmi3GetDirectionalDerivative", "fmi3GetAdjointDerivative",
		"fmi3EnterConfigurationMode", "fmi3ExitConfigurationMode",
		"fmi3GetIntervalDecimal", "fmi3GetIntervalFraction", "fmi3GetShiftDecimal", "fmi3GetShiftFraction",
		"fmi3SetIntervalDecimal", "fmi3SetIntervalFraction", "fmi3SetShiftDecimal", "fmi3SetShiftFraction",
		"fmi3EvaluateDiscreteStates", "fmi3UpdateDiscreteStates")
}

// RequiredFunctions are the functions a binary of FMI major exports for
// the interfaces given (CoSimulation, ModelExchange, ScheduledExecution).
func RequiredFunctions(major int, interfaces []string) []string {
	var out []string
	add := func(iface string, fs []string) {
		if iface == "" || slices.Contains(interfaces, iface) {
			out = append(out, fs...)
		}
	}
	if major == 2 {
		add("", fmi2Common)
		add(ME, fmi2ME)
		add(CoSim, fmi2CS)
		return out
	}
	add("", fmi3Common)
	add(ME, fmi3ME)
	add(CoSim, fmi3CS)
	add("ScheduledExecution", fmi3SE)
	return out
}

// Library says what a shared library is: its format and machine, as a
// platform folder of FMI names them, and the functions it exports.
type Library struct {
	Format  string // ELF, PE or Mach-O
	Machine string // x86-64, x86, arm64…
	Exports []string
}

// ReadLibrary reads a shared library's exported functions: an ELF's
// dynamic symbols, a PE's export directory, a Mach-O's external symbols.
func ReadLibrary(data []byte) (*Library, error) {
	r := bytes.NewReader(data)
	switch {
	case bytes.HasPrefix(data, []byte("\x7fELF")):
		f, err := elf.NewFile(r)
		if err != nil {
			return nil, fmt.Errorf("not a readable ELF file: %w", err)
		}
		defer f.Close()
		lib := &Library{Format: "ELF", Machine: elfMachine(f.Machine)}
		syms, err := f.DynamicSymbols()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return nil, fmt.Errorf("its dynamic symbols cannot be read: %w", err)
		}
		for _, s := range syms {
			bind, vis := elf.ST_BIND(s.Info), elf.ST_VISIBILITY(s.Other)
			if s.Section != elf.SHN_UNDEF && (bind == elf.STB_GLOBAL || bind == elf.STB_WEAK) &&
				(vis == elf.STV_DEFAULT || vis == elf.STV_PROTECTED) {
				lib.Exports = append(lib.Exports, s.Name)
			}
		}
		return lib, nil
	case bytes.HasPrefix(data, []byte("MZ")):
		f, err := pe.NewFile(r)
		if err != nil {
			return nil, fmt.Errorf("not a readable PE file: %w", err)
		}
		defer f.Close()
		lib := &Library{Format: "PE", Machine: peMachine(f.Machine)}
		lib.Exports, err = peExports(f, data)
		return lib, err
	default:
		f, err := macho.NewFile(r)
		if err != nil {
			return nil, errors.New("neither an ELF, a PE nor a Mach-O file")
		}
		defer f.Close()
		lib := &Library{Format: "Mach-O", Machine: machoMachine(f.Cpu)}
		if f.Symtab != nil {
			for _, s := range f.Symtab.Syms {
				const external, typeMask, defined = 0x01, 0x0e, 0x0e // N_EXT; N_TYPE; N_SECT
				if s.Type&external != 0 && s.Type&typeMask == defined {
					lib.Exports = append(lib.Exports, strings.TrimPrefix(s.Name, "_"))
				}
			}
		}
		return lib, nil
	}
}

func elfMachine(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86-64"
	case elf.EM_386:
		return "x86"
	case elf.EM_AARCH64:
		return "arm64"
	}
	return m.String()
}

func peMachine(m uint16) string {
	switch m {
	case pe.IMAGE_FILE_MACHINE_AMD64:
		return "x86-64"
	case pe.IMAGE_FILE_MACHINE_I386:
		return "x86"
	case pe.IMAGE_FILE_MACHINE_ARM64:
		return "arm64"
	}
	return fmt.Sprintf("machine %#x", m)
}

func machoMachine(c macho.Cpu) string {
	switch c {
	case macho.CpuAmd64:
		return "x86-64"
	case macho.CpuArm64:
		return "arm64"
	}
	return c.String()
}

// peExports reads the names of a PE's export directory (the first entry
// of the optional header's data directories): its table of name
// addresses, each the address of a NUL-terminated name.
func peExports(f *pe.File, data []byte) ([]string, error) {
	var dir pe.DataDirectory
	switch h := f.OptionalHeader.(type) {
	case *pe.OptionalHeader64:
		if h.NumberOfRvaAndSizes > 0 {
			dir = h.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
		}
	case *pe.OptionalHeader32:
		if h.NumberOfRvaAndSizes > 0 {
			dir = h.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
		}
	default:
		return nil, errors.New("a PE file without an optional header is no library")
	}
	if dir.VirtualAddress == 0 || dir.Size == 0 {
		return nil, nil // it exports nothing
	}
	// at maps an address of the loaded image to the file.
	at := func(rva, n uint32) ([]byte, bool) {
		for _, s := range f.Sections {
			if rva >= s.VirtualAddress && uint64(rva)+uint64(n) <= uint64(s.VirtualAddress)+uint64(s.Size) {
				off := uint64(s.Offset) + uint64(rva-s.VirtualAddress)
				if off+uint64(n) <= uint64(len(data)) {
					return data[off : off+uint64(n)], true
				}
			}
		}
		return nil, false
	}
	hdr, ok := at(dir.VirtualAddress, 40)
	if !ok {
		return nil, errors.New("its export directory lies outside its sections")
	}
	count := binary.LittleEndian.Uint32(hdr[24:]) // NumberOfNames
	names := binary.LittleEndian.Uint32(hdr[32:]) // AddressOfNames
	if count > 1<<20 {
		return nil, fmt.Errorf("its export directory claims %d names", count)
	}
	table, ok := at(names, count*4)
	if !ok {
		return nil, errors.New("its exported names lie outside its sections")
	}
	out := make([]string, 0, count)
	for i := range count {
		rva := binary.LittleEndian.Uint32(table[4*i:])
		name, ok := cString(f, data, rva)
		if !ok {
			return nil, fmt.Errorf("its exported name %d lies outside its sections", i)
		}
		out = append(out, name)
	}
	return out, nil
}

// cString reads a NUL-terminated name at an image address.
func cString(f *pe.File, data []byte, rva uint32) (string, bool) {
	for _, s := range f.Sections {
		if rva < s.VirtualAddress || rva >= s.VirtualAddress+s.Size {
			continue
		}
		off := uint64(s.Offset) + uint64(rva-s.VirtualAddress)
		end := min(uint64(s.Offset)+uint64(s.Size), uint64(len(data)))
		if off >= end {
			return "", false
		}
		n := bytes.IndexByte(data[off:end], 0)
		if n < 0 {
			return "", false
		}
		return string(data[off : off+uint64(n)]), true
	}
	return "", false
}

// platforms are the machines FMI's platform folders name: FMI 2.0's and
// FMI 3.0's.
var platforms = map[string]struct{ format, machine string }{
	"linux64": {"ELF", "x86-64"}, "linux32": {"ELF", "x86"}, "win64": {"PE", "x86-64"}, "win32": {"PE", "x86"},
	"darwin64": {"Mach-O", "x86-64"}, "x86_64-linux": {"ELF", "x86-64"}, "x86-linux": {"ELF", "x86"},
	"aarch64-linux": {"ELF", "arm64"}, "x86_64-windows": {"PE", "x86-64"}, "x86-windows": {"PE", "x86"},
	"aarch64-windows": {"PE", "arm64"}, "x86_64-darwin": {"Mach-O", "x86-64"}, "aarch64-darwin": {"Mach-O", "arm64"},
}

// CheckBinary checks one binary of an FMU: a library of the platform its
// folder names, exporting every function the standard requires of FMI
// major and the interfaces given. file names it in problems
// (binaries/linux64/x.so).
func CheckBinary(file, platform string, major int, interfaces []string, data []byte) []Problem {
	lib, err := ReadLibrary(data)
	if err != nil {
		return []Problem{{File: file, Text: "not a shared library: " + err.Error()}}
	}
	var out []Problem
	if want, ok := platforms[platform]; ok && (want.format != lib.Format || want.machine != lib.Machine) {
		out = append(out, Problem{File: file, Text: fmt.Sprintf("%s library for %s, but the folder %s is for %s libraries for %s",
			withArticle(lib.Format), lib.Machine, platform, want.format, want.machine)})
	}
	var missing []string
	for _, fn := range RequiredFunctions(major, interfaces) {
		if !slices.Contains(lib.Exports, fn) {
			missing = append(missing, fn)
		}
	}
	if len(missing) > 0 {
		version := "2.0"
		if major == 3 {
			version = "3.0"
		}
		out = append(out, Problem{File: file, Text: fmt.Sprintf("does not export %s: FMI %s requires every function of the common API and of each interface the FMU has (%s), even one the FMU does not support, which then returns an error",
			strings.Join(missing, ", "), version, strings.Join(interfaces, ", "))})
	}
	return out
}

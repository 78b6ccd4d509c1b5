// Package testfmu builds the small FMUs beamconnect's tests and its
// example use: a PI cruise controller written in C (c/cruise.h) with FMI
// 2.0 and 3.0 wrappers, compiled with the machine's C compiler and zipped
// with a modelDescription.xml made here. Variants misbehave on purpose
// (crash, hang, error status, NaN outputs) to test model faults.
package testfmu

import (
	"archive/zip"
	"bytes"
	"embed"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

//go:embed c/*.c c/*.h
var sources embed.FS

// Token is the cruise FMU's guid (2.0) and instantiationToken (3.0); its
// binary refuses any other.
const Token = "{8c4e810f-3df3-4a00-8276-176fa3c9f000}"

// Options choose the FMU to build.
type Options struct {
	FMI int // 2 or 3 (0: 2)
	// Fault is "", "crash", "hang", "error", "nan" or "stall" (one step
	// of 300 ms), "hang-2s" (one step of 2 s), "slow" (every step 2 ms),
	// "nan-once" (NaN outputs at one step), "terminate" (ends the
	// simulation at that step, halfway through it, saying why), "discard"
	// (discards that step without asking to stop), "jitter" (every step
	// from After on takes 0 to 9 ms, as drawn from a hash of the step's
	// number: the same every run), or a fault of the process it
	// runs in (c/process.h; not in a Windows build): "print" (to stdout,
	// when instantiated and at every step), "fork" (a helper process
	// started when instantiated; with After, a crash at that step), "exit"
	// (exit(0)) or "longline" (a 100 KB line on stderr, then a crash).
	Fault string
	After int // the step the fault begins at (from 1)
	// VariableStep sets canHandleVariableCommunicationStepSize.
	VariableStep bool
	// GetSetState sets canGetAndSetFMUstate (the binary can save and
	// restore its state either way).
	GetSetState bool
	// StepSize is the DefaultExperiment's stepSize; 0 writes none.
	StepSize float64
	// FixedStep is FMI 3.0's fixedInternalStepSize (0: none). The binary
	// steps by whatever step it is given; the attribute asks the importer
	// for communication steps that are whole numbers of it.
	FixedStep float64
	// TimeOutput lists the output fmuTime: the FMU's time after its step.
	TimeOutput bool
	// SpeedUsedOutput lists the output speedUsed: the groundspeed input its
	// last step computed from, which tells which request an answer is for.
	SpeedUsedOutput bool
	// Extra are more variable elements for modelDescription.xml, as
	// written (the binary ignores them): for tests of validation. Types
	// are type definitions they may refer to, as written.
	Extra []string
	Types string
	// Locals adds that many local variables to modelDescription.xml (the
	// binary ignores them): a model description as large as a big
	// physical model's, for tests of the bounds on reading one.
	Locals int
}

var faults = map[string]int{"": 0, "crash": 1, "hang": 2, "error": 3, "nan": 4, "stall": 5,
	"print": 6, "fork": 7, "exit": 8, "longline": 9, "hang-2s": 10, "slow": 11, "nan-once": 12,
	"terminate": 13, "discard": 14, "jitter": 15}

// Description is the FMU's modelDescription.xml.
func Description(o Options) string {
	var b strings.Builder
	major := o.FMI
	if major == 0 {
		major = 2
	}
	vs := strconv.FormatBool(o.VariableStep)
	de := ""
	if o.StepSize > 0 {
		de = fmt.Sprintf("\n  <DefaultExperiment startTime=\"0\" stepSize=\"%g\"/>", o.StepSize)
	}
	type v struct {
		name, causality, variability, start, unit, desc string
		vr                                              int
	}
	vars := []v{
		{"setSpeed", "parameter", "tunable", "20", "m/s", "the speed to hold", 0},
		{"kp", "parameter", "tunable", "0.3", "", "proportional gain, per m/s", 1},
		{"ki", "parameter", "tunable", "0.05", "", "integral gain, per m", 2},
		{"maxThrottle", "parameter", "fixed", "1", "", "the throttle's upper limit", 3},
		{"groundspeed", "input", "continuous", "0", "m/s", "the vehicle's speed", 4},
		{"throttle", "output", "continuous", "", "", "throttle pedal 0..1", 5},
		{"brake", "output", "continuous", "", "", "brake pedal 0..1", 6},
	}
	if o.TimeOutput {
		vars = append(vars, v{"fmuTime", "output", "continuous", "", "s", "the FMU's time after its step", 7})
	}
	if o.SpeedUsedOutput {
		vars = append(vars, v{"speedUsed", "output", "continuous", "", "m/s", "the groundspeed its last step computed from", 8})
	}
	if major == 2 {
		fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="cruise" guid="%s" generationTool="beamconnect testfmu" variableNamingConvention="flat">
  <CoSimulation modelIdentifier="cruise" canHandleVariableCommunicationStepSize="%s"%s/>
  <UnitDefinitions><Unit name="m/s"/><Unit name="s"/></UnitDefinitions>%s%s
  <ModelVariables>
`, Token, vs, getSet(o, "canGetAndSetFMUstate"), types(o), de)
		for _, x := range vars {
			start := ""
			if x.start != "" {
				start = ` start="` + x.start + `"`
			}
			if x.unit != "" {
				start += ` unit="` + x.unit + `"`
			}
			initial := ""
			if x.causality == "output" {
				initial = ` initial="calculated"`
			}
			fmt.Fprintf(&b, "    <ScalarVariable name=%q valueReference=\"%d\" causality=%q variability=%q%s description=%q><Real%s/></ScalarVariable>\n",
				x.name, x.vr, x.causality, x.variability, initial, x.desc, start)
		}
		for _, e := range o.Extra {
			b.WriteString("    " + e + "\n")
		}
		for i := range o.Locals {
			fmt.Fprintf(&b, "    <ScalarVariable name=\"state.x%d\" valueReference=\"%d\" causality=\"local\"><Real/></ScalarVariable>\n", i, 1000+i)
		}
		// The outputs are calculated (initial="calculated"): they are the
		// unknowns of initialization too.
		b.WriteString("  </ModelVariables>\n  <ModelStructure>\n")
		for _, list := range []string{"Outputs", "InitialUnknowns"} {
			b.WriteString("    <" + list + ">\n")
			for i, x := range vars {
				if x.causality == "output" {
					fmt.Fprintf(&b, "      <Unknown index=\"%d\"/>\n", i+1)
				}
			}
			b.WriteString("    </" + list + ">\n")
		}
		b.WriteString("  </ModelStructure>\n</fmiModelDescription>\n")
		return b.String()
	}
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="cruise" instantiationToken="%s" generationTool="beamconnect testfmu">
  <CoSimulation modelIdentifier="cruise" canHandleVariableCommunicationStepSize="%s"%s%s/>
  <UnitDefinitions><Unit name="m/s"/><Unit name="s"/></UnitDefinitions>%s%s
  <ModelVariables>
`, Token, vs, fixedStep(o), getSet(o, "canGetAndSetFMUState"), types(o), de)
	for _, x := range vars {
		attrs := ""
		if x.start != "" {
			attrs = ` start="` + x.start + `"`
		}
		if x.unit != "" {
			attrs += ` unit="` + x.unit + `"`
		}
		fmt.Fprintf(&b, "    <Float64 name=%q valueReference=\"%d\" causality=%q variability=%q description=%q%s/>\n",
			x.name, x.vr, x.causality, x.variability, x.desc, attrs)
	}
	// FMI 3.0's independent variable (c/cruise.h's VR_INDEPENDENT).
	b.WriteString("    <Float64 name=\"time\" valueReference=\"9\" causality=\"independent\" variability=\"continuous\" unit=\"s\" description=\"the FMU's time\"/>\n")
	for _, e := range o.Extra {
		b.WriteString("    " + e + "\n")
	}
	for i := range o.Locals {
		fmt.Fprintf(&b, "    <Float64 name=\"state.x%d\" valueReference=\"%d\" causality=\"local\"/>\n", i, 1000+i)
	}
	b.WriteString("  </ModelVariables>\n  <ModelStructure>\n")
	for _, element := range []string{"Output", "InitialUnknown"} { // the outputs are calculated
		for _, x := range vars {
			if x.causality == "output" {
				fmt.Fprintf(&b, "    <%s valueReference=\"%d\"/>\n", element, x.vr)
			}
		}
	}
	b.WriteString("  </ModelStructure>\n</fmiModelDescription>\n")
	return b.String()
}

func getSet(o Options, attr string) string {
	if !o.GetSetState {
		return ""
	}
	return " " + attr + `="true"`
}

func fixedStep(o Options) string {
	if o.FixedStep <= 0 {
		return ""
	}
	return fmt.Sprintf(` fixedInternalStepSize="%g"`, o.FixedStep)
}

func types(o Options) string {
	if o.Types == "" {
		return ""
	}
	return "\n  <TypeDefinitions>" + o.Types + "</TypeDefinitions>"
}

// Platform is the binaries/ folder of this machine for FMI major, or ""
// where the tests cannot build FMUs.
func Platform(major int) string {
	if runtime.GOARCH != "amd64" {
		return ""
	}
	folder, _ := platformOf(major, runtime.GOOS)
	return folder
}

// platformOf is FMI's binaries/ folder and the library's extension for
// major on x86-64 goos, or "" for an OS the FMUs are not built for.
func platformOf(major int, goos string) (folder, ext string) {
	switch {
	case goos == "linux" && major == 2:
		return "linux64", ".so"
	case goos == "linux":
		return "x86_64-linux", ".so"
	case goos == "windows" && major == 2:
		return "win64", ".dll"
	case goos == "windows":
		return "x86_64-windows", ".dll"
	}
	return "", ""
}

// Compiler finds the C compiler: $CC, or cc.
func Compiler() (string, error) {
	name := os.Getenv("CC")
	if name == "" {
		name = "cc"
	}
	return exec.LookPath(name)
}

// Prebuilt names a folder holding cruise2.fmu and cruise3.fmu built for
// this machine (by examples/fmu-cruise), whose binaries the tests' FMUs
// take instead of compiling: for test binaries run where no C compiler is,
// as the Windows build's tests under Wine, whose FMUs are cross-compiled
// with mingw-w64 beforehand.
const Prebuilt = "BEAMCONNECT_TESTFMU_PREBUILT"

// Build compiles the FMU o describes for this machine and writes it to out
// (a .fmu file). The library is compiled once per FMI version and process
// (or taken from Prebuilt); o's fault is written into a copy of it.
func Build(out string, o Options) error {
	major := o.FMI
	if major == 0 {
		major = 2
	}
	if Platform(major) == "" {
		return fmt.Errorf("testfmu: building FMUs needs x86-64 Linux or Windows, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	lib, err := library(major)
	if err != nil {
		return err
	}
	return write(out, o, runtime.GOOS, lib)
}

// BuildFor compiles the FMU o describes for x86-64 goos ("linux" or
// "windows") with the C compiler cc, such as x86_64-w64-mingw32-gcc for
// Windows, and writes it to out.
func BuildFor(out string, o Options, cc, goos string) error {
	lib, err := Compile(cc, goos, o.FMI)
	if err != nil {
		return err
	}
	return write(out, o, goos, lib)
}

// write zips the FMU o describes, with lib (its fault unset) as its binary.
func write(out string, o Options, goos string, lib []byte) error {
	major := o.FMI
	if major == 0 {
		major = 2
	}
	kind, ok := faults[o.Fault]
	if !ok {
		return fmt.Errorf("testfmu: no fault %q", o.Fault)
	}
	bin, err := withFault(lib, kind, o.After)
	if err != nil {
		return err
	}
	plat, ext := platformOf(major, goos)
	return Zip(out, map[string][]byte{
		"modelDescription.xml":                        []byte(Description(o)),
		"binaries/" + plat + "/cruise" + ext:          bin,
		"resources/README.txt":                        []byte("The cruise FMU needs no resources; FMI lets an FMU ship files here.\n"),
		"sources/cruise.h":                            mustRead("c/cruise.h"),
		"sources/process.h":                           mustRead("c/process.h"),
		"sources/cruise" + strconv.Itoa(major) + ".c": mustRead("c/cruise" + strconv.Itoa(major) + ".c"),
		"sources/" + fmiHeader(major):                 mustRead("c/" + fmiHeader(major)),
		"sources/" + restHeader(major):                mustRead("c/" + restHeader(major)),
	})
}

// fmiHeader and restHeader are the C headers of FMI major's declarations
// and of the functions a test FMU does not define itself.
func fmiHeader(major int) string  { return "fmi" + strconv.Itoa(major) + ".h" }
func restHeader(major int) string { return "fmi" + strconv.Itoa(major) + "rest.h" }

var libraries struct {
	sync.Mutex
	built map[int][]byte
}

// library is this machine's library for FMI major, fault unset: compiled
// the first time, or read from the Prebuilt folder's FMU.
func library(major int) ([]byte, error) {
	libraries.Lock()
	defer libraries.Unlock()
	if lib, ok := libraries.built[major]; ok {
		return lib, nil
	}
	var lib []byte
	var err error
	if dir := os.Getenv(Prebuilt); dir != "" {
		lib, err = prebuilt(filepath.Join(dir, "cruise"+strconv.Itoa(major)+".fmu"), major)
	} else {
		var cc string
		if cc, err = Compiler(); err != nil {
			return nil, fmt.Errorf("testfmu: no C compiler: %w", err)
		}
		lib, err = Compile(cc, runtime.GOOS, major)
	}
	if err != nil {
		return nil, err
	}
	if libraries.built == nil {
		libraries.built = map[int][]byte{}
	}
	libraries.built[major] = lib
	return lib, nil
}

// prebuilt reads the library for this machine out of the FMU at path.
func prebuilt(path string, major int) ([]byte, error) { return prebuiltBinary(path, major, "cruise") }

// prebuiltBinary reads the library name for this machine out of the FMU
// at path.
func prebuiltBinary(path string, major int, name string) ([]byte, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("testfmu: %s: %w", Prebuilt, err)
	}
	defer zr.Close()
	plat, ext := platformOf(major, runtime.GOOS)
	f, err := zr.Open("binaries/" + plat + "/" + name + ext)
	if err != nil {
		return nil, fmt.Errorf("testfmu: %s: %s: %w", Prebuilt, path, err)
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Compile compiles the cruise library for FMI major (2 or 3) and x86-64
// goos with the C compiler cc, and returns it, its fault unset.
func Compile(cc, goos string, major int) ([]byte, error) {
	if major == 0 {
		major = 2
	}
	return compileC(cc, goos, major, "cruise", "cruise"+strconv.Itoa(major)+".c")
}

// compileC compiles the library name from src (a file of c/) with the C
// compiler cc for FMI major on x86-64 goos, with more compiler arguments
// (defines), and returns it.
func compileC(cc, goos string, major int, name, src string, defines ...string) ([]byte, error) {
	_, ext := platformOf(major, goos)
	if ext == "" {
		return nil, fmt.Errorf("testfmu: no FMU binaries for %s", goos)
	}
	dir, err := os.MkdirTemp("", "testfmu-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	files, _ := sources.ReadDir("c")
	for _, f := range files {
		data, _ := sources.ReadFile("c/" + f.Name())
		if err := os.WriteFile(filepath.Join(dir, f.Name()), data, 0o644); err != nil {
			return nil, err
		}
	}
	lib := filepath.Join(dir, name+ext)
	args := append([]string{"-std=c99", "-O2", "-shared", "-o", lib}, defines...)
	if goos == "windows" {
		// A DLL that needs no mingw-w64 runtime DLL beside it.
		args = append(args, "-static-libgcc")
	} else {
		args = append(args, "-D_POSIX_C_SOURCE=200809L", "-fPIC")
	}
	args = append(args, filepath.Join(dir, src), "-lm")
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testfmu: %s %s: %v\n%s", cc, strings.Join(args, " "), err, msg)
	}
	return os.ReadFile(lib)
}

// faultMark precedes the fault's digits in the library (c/cruise.h's
// fault_spec): the kind in two digits, a colon, the step it begins at in
// ten digits.
var faultMark = []byte("beamconnect-testfmu-fault:")

// withFault is a copy of lib acting out fault kind from step after on.
func withFault(lib []byte, kind, after int) ([]byte, error) {
	i := bytes.Index(lib, faultMark)
	if i < 0 || bytes.Count(lib, faultMark) != 1 {
		return nil, fmt.Errorf("testfmu: the library does not hold its fault's digits once")
	}
	if after < 0 || after > 9999999999 {
		return nil, fmt.Errorf("testfmu: fault after step %d: expected 0 to 9999999999", after)
	}
	out := bytes.Clone(lib)
	copy(out[i+len(faultMark):], fmt.Sprintf("%02d:%010d", kind, after))
	return out, nil
}

func mustRead(name string) []byte {
	b, err := sources.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}

// Zip writes an archive of files (slash-separated names) to out.
func Zip(out string, files map[string][]byte) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		w, err := zw.Create(name)
		if err != nil {
			return err
		}
		if _, err := w.Write(files[name]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// ForTest builds the FMU into the test's temporary directory as name, or
// skips the test where that cannot be done (no C compiler, not x86-64
// Linux), saying why.
func ForTest(t testing.TB, name string, o Options) string {
	t.Helper()
	major := o.FMI
	if major == 0 {
		major = 2
	}
	if Platform(major) == "" {
		t.Skipf("building test FMUs needs x86-64 Linux or Windows; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := Compiler(); err != nil && os.Getenv(Prebuilt) == "" {
		t.Skipf("building test FMUs needs a C compiler (cc, or $CC) or %s: none found", Prebuilt)
	}
	out := filepath.Join(t.TempDir(), name)
	if err := Build(out, o); err != nil {
		t.Fatal(err)
	}
	return out
}

// Fake writes an FMU whose binary is not a library: enough for what reads
// only modelDescription.xml (inspect, validate), on any machine. major 2 or
// 3; platforms name binaries/ folders.
func Fake(out string, o Options, platforms ...string) error {
	files := map[string][]byte{"modelDescription.xml": []byte(Description(o))}
	for _, p := range platforms {
		ext := ".so"
		if strings.Contains(p, "win") {
			ext = ".dll"
		}
		files["binaries/"+p+"/cruise"+ext] = []byte("not a library")
	}
	return Zip(out, files)
}

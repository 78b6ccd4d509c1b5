package fmu

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"beamconnect/fmu/testfmu"
)

var updateCheck = flag.Bool("update-check", false, "rewrite testdata/check/*.bad.err from what Check says (review the diff)")

func problemLines(ps []Problem) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

// Every bad description gets exactly the problems its .err file lists;
// every good one none.
func TestCheckDescription(t *testing.T) {
	files, _ := filepath.Glob("testdata/check/*.xml")
	if len(files) < 10 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".xml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := problemLines(CheckDescription(data))
			if strings.HasSuffix(f, ".good.xml") {
				if got != "" {
					t.Errorf("a good description has problems:\n%s", got)
				}
				return
			}
			errFile := strings.TrimSuffix(f, ".xml") + ".err"
			if *updateCheck {
				os.WriteFile(errFile, []byte(got+"\n"), 0o644)
			}
			want, err := os.ReadFile(errFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != strings.TrimSpace(string(want)) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// The functions Check requires are the standards' own: those the FMI 2.0
// and 3.0 headers (vendored with fmusim, the Modelica Association's
// reference master) declare, no more, no fewer.
func TestRequiredFunctionsAreTheStandards(t *testing.T) {
	for _, c := range []struct {
		major  int
		header string
	}{{2, "fmi2Functions.h"}, {3, "fmi3Functions.h"}} {
		t.Run(c.header, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/oracle/fmusim-src/include", c.header))
			if err != nil {
				t.Fatal(err)
			}
			prefix := fmt.Sprintf("#define fmi%d", c.major)
			var declared []string
			for _, line := range strings.Split(string(data), "\n") {
				// #define fmi3DoStep fmi3FullName(fmi3DoStep), but not the
				// header's guard (fmi3Functions_h) nor its version
				// (fmi3Version).
				f := strings.Fields(line)
				if len(f) >= 3 && strings.HasPrefix(line, prefix) && f[1] != fmt.Sprintf("fmi%dVersion", c.major) {
					declared = append(declared, f[1])
				}
			}
			all := RequiredFunctions(c.major, []string{CoSim, ME, "ScheduledExecution"})
			slices.Sort(declared)
			slices.Sort(all)
			if !slices.Equal(all, declared) {
				t.Errorf("required:\n%v\nthe header declares:\n%v", all, declared)
			}
		})
	}
}

// Every FMU the project makes for its tests and its example, which a user
// can copy (fmu/testfmu: the cruise controller, the Model Exchange models,
// the types FMU, FMI 2.0 and 3.0), passes Check: each description, and
// each C wrapper's binary built for Linux and, with mingw-w64, for
// Windows (the models of one wrapper share its functions).
func TestTestFMUsPass(t *testing.T) {
	descriptions := map[string]string{"types3": testfmu.TypesDescription(0), "types3-fixed": testfmu.TypesDescription(0.001)}
	for _, major := range []int{2, 3} {
		for name, o := range map[string]testfmu.Options{
			"cruise":         {FMI: major, StepSize: 0.005},
			"cruise-outputs": {FMI: major, TimeOutput: true, SpeedUsedOutput: true, VariableStep: true, GetSetState: true},
			"cruise-fixed":   {FMI: major, FixedStep: 0.001},
		} {
			descriptions[fmt.Sprintf("%s%d", name, major)] = testfmu.Description(o)
		}
		for _, model := range testfmu.MEModels() {
			d, err := testfmu.MEDescription(testfmu.MEOptions{FMI: major, Model: model})
			if err != nil {
				t.Fatal(err)
			}
			descriptions[fmt.Sprintf("%s%d", model, major)] = d
		}
	}
	for _, name := range slices.Sorted(maps.Keys(descriptions)) {
		t.Run(name, func(t *testing.T) {
			if p := problemLines(CheckDescription([]byte(descriptions[name]))); p != "" {
				t.Errorf("%s", p)
			}
		})
	}
	builds := map[string]func(out, cc, goos string) error{
		"types3": func(out, cc, goos string) error { return testfmu.BuildTypesFor(out, 0, cc, goos) },
	}
	for _, major := range []int{2, 3} {
		builds[fmt.Sprintf("cruise%d", major)] = func(out, cc, goos string) error {
			return testfmu.BuildFor(out, testfmu.Options{FMI: major, StepSize: 0.005}, cc, goos)
		}
		builds[fmt.Sprintf("ball%d", major)] = func(out, cc, goos string) error {
			return testfmu.BuildMEFor(out, testfmu.MEOptions{FMI: major, Model: "ball"}, cc, goos)
		}
	}
	for _, goos := range []string{"linux", "windows"} {
		cc, err := exec.LookPath(map[string]string{"linux": "cc", "windows": "x86_64-w64-mingw32-gcc"}[goos])
		if err != nil {
			t.Logf("no C compiler for %s: its binaries are not checked", goos)
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(builds)) {
			t.Run(goos+"/"+name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), name+".fmu")
				if err := builds[name](out, cc, goos); err != nil {
					t.Fatal(err)
				}
				problems, err := Check(out)
				if err != nil || len(problems) > 0 {
					t.Errorf("%v\n%s", err, problemLines(problems))
				}
			})
		}
	}
}

// The Modelica Association's Reference FMUs pass Check: what it requires
// is what the standard's own examples do.
func TestReferenceFMUsPass(t *testing.T) {
	dir := os.Getenv("BEAMCONNECT_REFERENCE_FMUS")
	if dir == "" {
		t.Skip("BEAMCONNECT_REFERENCE_FMUS is not set (bash fmu/testdata/oracle/build-fmus prints the folder)")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "fmi*", "*.fmu"))
	if len(files) < 10 {
		t.Fatalf("%d Reference FMUs in %s", len(files), dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			problems, err := Check(f)
			if err != nil || len(problems) > 0 {
				t.Errorf("%v\n%s", err, problemLines(problems))
			}
		})
	}
}

// A binary that lacks functions, is of another platform than its folder,
// or is no library at all is said to be, by its path in the archive.
func TestCheckBinaries(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "few.c")
	os.WriteFile(src, []byte(`__attribute__((visibility("default"))) const char *fmi2GetVersion(void) { return "2.0"; }
__attribute__((visibility("hidden"))) int fmi2DoStep(void) { return 0; }
`), 0o644)
	lib := filepath.Join(dir, "few.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	so, _ := os.ReadFile(lib)
	parsed, err := ReadLibrary(so)
	if err != nil || parsed.Format != "ELF" || parsed.Machine != "x86-64" || !slices.Contains(parsed.Exports, "fmi2GetVersion") || slices.Contains(parsed.Exports, "fmi2DoStep") {
		t.Fatalf("%+v %v: expected an x86-64 ELF exporting fmi2GetVersion and not the hidden fmi2DoStep", parsed, err)
	}
	md := `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="few" guid="{g}">
  <CoSimulation modelIdentifier="few"/>
  <ModelVariables/>
  <ModelStructure/>
</fmiModelDescription>
`
	file := filepath.Join(dir, "few.fmu")
	if err := testfmu.Zip(file, map[string][]byte{
		"modelDescription.xml":      []byte(md),
		"binaries/linux64/few.so":   so,
		"binaries/win64/few.dll":    so,
		"binaries/linux32/few.so":   []byte("not a library"),
		"binaries/linux64/other.so": []byte("not the model's: not checked"),
		`documentation\index.html`:  []byte("<p>"),
	}); err != nil {
		t.Fatal(err)
	}
	problems, err := Check(file)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, fn := range RequiredFunctions(2, []string{CoSim}) {
		if fn != "fmi2GetVersion" {
			missing = append(missing, fn)
		}
	}
	lacks := "does not export " + strings.Join(missing, ", ") + ": FMI 2.0 requires every function of the common API and of each interface the FMU has (CoSimulation), even one the FMU does not support, which then returns an error"
	want := strings.Join([]string{
		`the archive: the entry "documentation\\index.html" holds a backslash: a zip archive separates folders with /`,
		"binaries/linux32/few.so: not a shared library: neither an ELF, a PE nor a Mach-O file",
		"binaries/linux64/few.so: " + lacks,
		"binaries/win64/few.dll: an ELF library for x86-64, but the folder win64 is for PE libraries for x86-64",
		"binaries/win64/few.dll: " + lacks,
	}, "\n")
	if got := problemLines(problems); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func FuzzCheckDescription(f *testing.F) {
	files, _ := filepath.Glob("testdata/check/*.xml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range CheckDescription(data) {
			if p.Text == "" || p.File != descFile || p.Line < 0 {
				t.Fatalf("problem %+v", p)
			}
		}
	})
}

// ReadLibrary reads any bytes without a panic, and what it reads of a
// library it built from is what it exports.
func FuzzReadLibrary(f *testing.F) {
	f.Add([]byte("MZ"))
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	for _, cc := range []string{"cc", "x86_64-w64-mingw32-gcc"} {
		if path, err := exec.LookPath(cc); err == nil {
			dir := f.TempDir()
			src := filepath.Join(dir, "x.c")
			os.WriteFile(src, []byte("int fmi2DoStep(void) { return 0; }\n"), 0o644)
			if exec.Command(path, "-shared", "-o", filepath.Join(dir, "x.lib"), src).Run() == nil {
				data, _ := os.ReadFile(filepath.Join(dir, "x.lib"))
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lib, err := ReadLibrary(data)
		if err == nil && lib.Format == "" {
			t.Fatal("a library of no format")
		}
	})
}

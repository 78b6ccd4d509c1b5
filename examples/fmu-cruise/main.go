// Command fmu-cruise builds the example FMU of examples/fmu-cruise/cruise.json: a
// PI cruise controller written in C (fmu/testfmu/c: cruise.h, and the FMI
// 2.0 and 3.0 wrappers cruise2.c and cruise3.c), compiled for x86-64 Linux
// with the machine's C compiler (cc, or $CC), or for 64-bit Windows with
// mingw-w64 (-os windows: x86_64-w64-mingw32-gcc, or $CC), and zipped with
// its modelDescription.xml. From the repository's root:
//
//	go run ./examples/fmu-cruise
//	go run ./cmd/beamconnect run examples/fmu-cruise/cruise.json --emulate
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"

	"beamconnect/fmu/testfmu"
)

func main() {
	out := flag.String("o", "examples/fmu-cruise/cruise.fmu", "where to write the FMU")
	major := flag.Int("fmi", 2, "the FMI version: 2 or 3")
	goos := flag.String("os", "linux", "the binary's OS: linux or windows (x86-64 both)")
	step := flag.Float64("step", 0.005, "the FMU's step size, seconds (cruise.json's period; 0.0005 for a rig at BeamNG's fastest)")
	flag.Parse()
	cc := os.Getenv("CC")
	switch {
	case cc != "":
	case *goos == "windows":
		cc = "x86_64-w64-mingw32-gcc"
	default:
		cc = "cc"
	}
	path, err := exec.LookPath(cc)
	if err == nil {
		err = testfmu.BuildFor(*out, testfmu.Options{FMI: *major, StepSize: *step}, path, *goos)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fmu-cruise:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote %s (FMI %d.0, binary for x86-64 %s)\n", *out, *major, *goos)
}

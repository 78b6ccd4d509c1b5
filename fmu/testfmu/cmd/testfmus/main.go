// Command testfmus builds the test FMUs other than the cruise ones (the
// Model Exchange models in FMI 2.0 and 3.0, the FMI 3.0 types FMU, the
// example system's controller and actuator) for
// x86-64 Linux or Windows into a folder, named as testfmu's Prebuilt
// folder wants them (ball2.fmu, ball3.fmu, … types3.fmu): for test
// binaries run where no C compiler is, as the Windows build's tests under
// Wine. From the repository's root:
//
//	go run ./fmu/testfmu/cmd/testfmus -os windows -o DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"beamconnect/fmu/testfmu"
)

func main() {
	out := flag.String("o", ".", "the folder to write the FMUs to")
	goos := flag.String("os", "linux", "the binaries' OS: linux or windows (x86-64 both)")
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
	if err != nil {
		fail(err)
	}
	for _, model := range []string{"ball", "decay", "vdp", "chain", "nan", "stiff", "stair"} {
		for _, major := range []int{2, 3} {
			file := filepath.Join(*out, model+strconv.Itoa(major)+".fmu")
			if err := testfmu.BuildMEFor(file, testfmu.MEOptions{FMI: major, Model: model}, path, *goos); err != nil {
				fail(err)
			}
		}
	}
	if err := testfmu.BuildTypesFor(filepath.Join(*out, "types3.fmu"), 0, path, *goos); err != nil {
		fail(err)
	}
	// The example system's FMUs (docs/systems.md).
	if err := testfmu.BuildControllerFor(filepath.Join(*out, "speedctl3.fmu"), path, *goos); err != nil {
		fail(err)
	}
	if err := testfmu.BuildActuatorFor(filepath.Join(*out, "actuator2.fmu"), path, *goos); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "wrote the test FMUs for x86-64 %s to %s\n", *goos, *out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testfmus:", err)
	os.Exit(1)
}

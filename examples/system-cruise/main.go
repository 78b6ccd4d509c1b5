// Command system-cruise builds the example system of docs/systems.md:
// BeamNG's vehicle, a PI speed controller FMU and a pedal actuator FMU,
// wired by SystemStructure.ssd. It compiles the two FMUs from their C
// sources (fmu/testfmu/c: speedctl3.c, FMI 3.0; actuator2.c, FMI 2.0)
// with the machine's C compiler (cc, or $CC) for x86-64 Linux, or with
// mingw-w64 for 64-bit Windows (-os windows: x86_64-w64-mingw32-gcc, or
// $CC), into resources/, and packs the folder as cruise.ssp. From the
// repository's root:
//
//	go run ./examples/system-cruise
//	go run ./cmd/beamconnect run examples/system-cruise/cruise.ssp --emulate
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"beamconnect/fmu/testfmu"
)

func main() {
	dir := flag.String("dir", "examples/system-cruise", "the example's folder: the FMUs go to its resources/")
	out := flag.String("o", "", "where to write the .ssp (default: the folder's cruise.ssp)")
	goos := flag.String("os", "linux", "the FMUs' binaries' OS: linux or windows (x86-64 both)")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join(*dir, "cruise.ssp")
	}
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
		err = testfmu.BuildControllerFor(filepath.Join(*dir, "resources", "controller.fmu"), path, *goos)
	}
	if err == nil {
		err = testfmu.BuildActuatorFor(filepath.Join(*dir, "resources", "actuator.fmu"), path, *goos)
	}
	if err == nil {
		err = pack(*out, *dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "system-cruise:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote %s (the controller and actuator FMUs for x86-64 %s in %s)\n", *out, *goos, filepath.Join(*dir, "resources"))
}

// pack zips the system: SystemStructure.ssd and resources/, as SSP lays
// an archive out.
func pack(out, dir string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	add := func(name string) error {
		src, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		defer src.Close()
		w, err := zw.Create(name)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, src)
		return err
	}
	err = add("SystemStructure.ssd")
	for _, name := range []string{"vehicle.json", "tuning.ssv", "controller.fmu", "actuator.fmu"} {
		if err == nil {
			err = add("resources/" + name)
		}
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

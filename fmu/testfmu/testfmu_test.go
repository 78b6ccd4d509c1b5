package testfmu

import (
	"bytes"
	"os/exec"
	"testing"
)

// Every test FMU's C compiles for Windows too (with mingw-w64, where the
// machine has it): a DLL, as the Windows build's tests load.
func TestCompilesForWindows(t *testing.T) {
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		t.Skip("no x86_64-w64-mingw32-gcc")
	}
	for _, c := range []struct {
		name, src string
		major     int
		defines   []string
	}{
		{"cruise", "cruise2.c", 2, nil},
		{"cruise", "cruise3.c", 3, nil},
		{"types", "types3.c", 3, []string{`-DTYPES_TOKEN="` + TypesToken + `"`}},
		{"ball", "me2.c", 2, []string{"-DMODEL_BALL", `-DMODEL_TOKEN="` + METoken + `"`}},
		{"decay", "me3.c", 3, []string{"-DMODEL_DECAY", `-DMODEL_TOKEN="` + METoken + `"`}},
		{"chain", "me3.c", 3, []string{"-DMODEL_CHAIN", `-DMODEL_TOKEN="` + METoken + `"`}},
	} {
		lib, err := compileC(cc, "windows", c.major, c.name, c.src, c.defines...)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if !bytes.HasPrefix(lib, []byte("MZ")) {
			t.Errorf("%s: not a Windows DLL", c.src)
		}
	}
}

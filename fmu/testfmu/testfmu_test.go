package testfmu

import (
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Every test FMU's C compiles for Windows too (with mingw-w64, where the
// machine has it): a DLL, as the Windows build's tests load.
func TestCompilesForWindows(t *testing.T) {
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		t.Skip("no x86_64-w64-mingw32-gcc")
	}
	type lib struct {
		name, src string
		major     int
		defines   []string
	}
	// Every Model Exchange model, in both wrappers (the Windows tests take
	// them prebuilt by cmd/testfmus).
	var me []lib
	for _, model := range slices.Sorted(maps.Keys(meModels)) {
		for _, major := range []int{2, 3} {
			me = append(me, lib{model, fmt.Sprintf("me%d.c", major), major,
				[]string{"-DMODEL_" + strings.ToUpper(model), `-DMODEL_TOKEN="` + METoken + `"`}})
		}
	}
	for _, c := range append([]lib{
		{"cruise", "cruise2.c", 2, nil},
		{"cruise", "cruise3.c", 3, nil},
		{"types", "types3.c", 3, []string{`-DTYPES_TOKEN="` + TypesToken + `"`}},
	}, me...) {
		lib, err := compileC(cc, "windows", c.major, c.name, c.src, c.defines...)
		if err != nil {
			t.Errorf("%s %s: %v", c.name, c.src, err)
			continue
		}
		if !bytes.HasPrefix(lib, []byte("MZ")) {
			t.Errorf("%s: not a Windows DLL", c.src)
		}
	}
}

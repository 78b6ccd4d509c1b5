package wine

import (
	"os"
	"runtime"
	"testing"
)

// CI's Wine runs set BEAMCONNECT_WINE, so there the detection is checked
// both ways: it must find Wine, and never claim Wine elsewhere.
func TestVersion(t *testing.T) {
	v := Version()
	t.Logf("Wine version %q", v)
	if os.Getenv("BEAMCONNECT_WINE") != "" && v == "" {
		t.Error("run under Wine, but Version finds none")
	}
	if runtime.GOOS != "windows" && v != "" {
		t.Errorf("Version %q off Windows", v)
	}
	if Running() != (v != "") {
		t.Error("Running disagrees with Version")
	}
}

//go:build unix

package main

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"beamconnect/internal/eventually"
	"beamconnect/recording/mdf/mdftest"
)

// A run killed with SIGKILL leaves an MDF recording the readers open, with
// every row written up to the last flush: unfinalized, as its ID block
// says.
func TestRecordMDFKilled(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "killed.mf4")
	cmd := osexec.Command(binary(t), "run", "../../examples/cruise-pedals.json", "--emulate", "--record", rec)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	eventually.True(time.Minute, func() bool { seen = mdfRows(rec); return seen >= 100 })
	cmd.Process.Kill() // SIGKILL: no deferred code, no finalizing
	cmd.Wait()
	if seen < 100 {
		t.Fatalf("the recording had %d rows before the kill", seen)
	}
	b, _ := os.ReadFile(rec)
	if !strings.HasPrefix(string(b), "UnFinMF ") {
		t.Fatalf("the killed run's file starts %q", b[:8])
	}
	if n := mdfRows(rec); n < seen {
		t.Errorf("%d rows read after the kill, %d before it", n, seen)
	}
	dump := mdftest.Agree(t, rec)
	if dump != "" && samples(t, dump, "from BeamNG") < seen {
		t.Errorf("the readers read fewer rows than were on disk before the kill:\n%s", dump)
	}
}

// Package mdftest checks MDF 4 files with readers independent of package
// mdf: mdflib-dump (mdflib, C++, built from recording/mdf/testdata/oracle; its path
// in BEAMCONNECT_MDF_ORACLE) and mdfcheck.py (a strict reader written from
// the standard in Python, in recording/mdf/testdata). Both print what they read in
// the same lines, so a file is read alike when their outputs are equal.
// BEAMCONNECT_REQUIRE_MDF_READERS=1 (CI) makes a missing reader fail the
// test instead of skipping the check.
package mdftest

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Reader is one independent reader: a command run with the file's path.
type Reader struct {
	Name string
	Cmd  []string
}

// Readers lists the readers this machine has.
func Readers(t testing.TB) []Reader {
	t.Helper()
	var rs []Reader
	require := os.Getenv("BEAMCONNECT_REQUIRE_MDF_READERS") != ""
	if p := os.Getenv("BEAMCONNECT_MDF_ORACLE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("BEAMCONNECT_MDF_ORACLE: %v", err)
		}
		rs = append(rs, Reader{"mdflib", []string{p}})
	} else if require {
		t.Fatal("BEAMCONNECT_MDF_ORACLE is not set: build mdflib-dump with recording/mdf/testdata/oracle/build")
	}
	if py, err := osexec.LookPath("python3"); err == nil {
		_, here, _, _ := runtime.Caller(0)
		rs = append(rs, Reader{"mdfcheck.py", []string{py, filepath.Join(filepath.Dir(here), "..", "testdata", "mdfcheck.py")}})
	} else if require {
		t.Fatal("python3 is not installed: mdfcheck.py cannot run")
	}
	return rs
}

// Dump is what r reads in file: its lines, without comments. A reader
// that refuses the file is an error with what it said.
func Dump(r Reader, file string) (string, error) {
	cmd := osexec.Command(r.Cmd[0], append(r.Cmd[1:], file)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", &ReadError{r.Name, err, strings.TrimSpace(errOut.String())}
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// ReadError is a reader's refusal.
type ReadError struct {
	Reader string
	Err    error
	Said   string
}

func (e *ReadError) Error() string { return e.Reader + ": " + e.Err.Error() + ": " + e.Said }

// Agree reads file with every reader, fails the test unless each reads
// it and all read the same, and returns what they read ("" when this
// machine has no reader).
func Agree(t testing.TB, file string) string {
	t.Helper()
	var first string
	var firstName string
	for _, r := range Readers(t) {
		d, err := Dump(r, file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if firstName == "" {
			first, firstName = d, r.Name
			continue
		}
		if d != first {
			t.Fatalf("%s: %s and %s read it differently:\n%s\n%s", file, firstName, r.Name, diff(first, d), "")
		}
	}
	return first
}

// diff shows the first lines two dumps differ in.
func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)) && len(out) < 6; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
	}
	return strings.Join(out, "\n")
}

// Lines are the dump's lines starting with prefix.
func Lines(dump, prefix string) []string {
	var out []string
	for _, l := range strings.Split(dump, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

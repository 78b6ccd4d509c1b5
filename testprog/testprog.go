// Package testprog builds a program once per test binary, for tests that
// need it as a real process: signals, pipes, a page's commands as a user
// types them.
package testprog

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Program is a Go main package, built on first use. The zero value is
// ready; Remove deletes the build when the tests are done.
type Program struct {
	// Package is the main package's path as `go build` takes it, relative
	// to the test's folder ("." or "../cmd/beamconnect").
	Package string

	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// Prebuilt names a folder of programs built beforehand, for test binaries
// run where no Go toolchain is (the Windows build's tests under Wine): the
// program of package path/to/name is name, or name.exe on Windows, there.
const Prebuilt = "BEAMCONNECT_TEST_PROGRAMS"

// Path builds the program the first time and returns the executable's
// path; a build failure fails the test with the compiler's output. Under
// -short the test is skipped: building takes seconds.
func (p *Program) Path(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(Prebuilt); dir != "" {
		abs, err := filepath.Abs(p.Package)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Base(abs))
		if runtime.GOOS == "windows" {
			path += ".exe"
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v", Prebuilt, err)
		}
		return path
	}
	if testing.Short() {
		t.Skip("builds the program")
	}
	p.once.Do(func() {
		p.dir, p.err = os.MkdirTemp("", "beamconnect-test-")
		if p.err != nil {
			return
		}
		p.path = filepath.Join(p.dir, "beamconnect")
		p.out, p.err = exec.Command("go", "build", "-o", p.path, p.Package).CombinedOutput()
	})
	if p.err != nil {
		t.Fatalf("build %s: %v\n%s", p.Package, p.err, p.out)
	}
	return p.path
}

// Remove deletes the build, if there is one. Call it from TestMain after
// m.Run.
func (p *Program) Remove() {
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

package main

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// binary builds the beamconnect program once per test run, for tests that
// need a real process (signals, a responder of its own).
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "beamconnect-test-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "beamconnect")
		built.out, built.err = osexec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build: %v\n%s", built.err, built.out)
	}
	return built.path
}

func TestMain(m *testing.M) {
	// The fmu model runs its FMU with os.Executable fmu-host: in the tests
	// that is this binary, which then is the host, as beamconnect is.
	if len(os.Args) > 1 && os.Args[1] == "fmu-host" {
		os.Exit(run(os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv}))
	}
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// Package configtest gives tests a compiled plan from a config file.
package configtest

import (
	"testing"

	"beamconnect/config"
	"beamconnect/ports"
)

// Plan reads, checks and compiles the config at path, failing the test on
// any error: a test's fixture that does not load is the test's bug.
func Plan(t testing.TB, path string) *ports.Plan {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

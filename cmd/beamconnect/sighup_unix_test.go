//go:build unix

package main

import (
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
)

// SIGHUP's default action ends the process, so every moment before
// beamconnect catches it is a moment a hangup kills a run without its
// summary. Go initialises every imported package before main's variables;
// the catch must come as soon as os/signal can take it, not after a JSON
// Schema library has compiled its meta-schemas. GODEBUG=inittrace=1 makes
// the runtime list the packages' initialisations in order.
func TestSIGHUPCaughtBeforeOtherInitialisation(t *testing.T) {
	bin := binary(t)
	list := func(pkg string) []string {
		out, err := osexec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(out))
	}
	// It needs nothing but os/signal: nothing else can hold it up.
	needed, signal := list("beamconnect/internal/sighup"), list("os/signal")
	if extra := slices.DeleteFunc(slices.Clone(needed), func(p string) bool { return slices.Contains(signal, p) || p == "beamconnect/internal/sighup" }); len(extra) > 0 {
		t.Errorf("package sighup needs more than os/signal: %v", extra)
	}
	cmd := osexec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Initialised after the last package it needs and before it: work that
	// delays the catch for nothing.
	var between []string
	caught := false
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		switch {
		case f[1] == "beamconnect/internal/sighup":
			caught = true
		case slices.Contains(needed, f[1]):
			between = between[:0]
		default:
			between = append(between, f[1])
		}
		if caught {
			break
		}
	}
	if !caught {
		t.Fatalf("beamconnect/sighup was never initialised:\n%s", out)
	}
	if len(between) > 0 {
		t.Errorf("initialised after os/signal and before SIGHUP is caught: %v", between)
	}
}

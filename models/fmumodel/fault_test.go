package fmumodel

import (
	"errors"
	"log/slog"
	"testing"
)

// A fault is seen before it ends: an older message's answer with a NaN,
// taken in the same step as a good answer (a loaded machine delivered it
// late), stays a fault until the coupling has read it, then the next good
// answer ends it. Before, it began and ended inside one step, and the run
// showed no fault at all.
func TestFMUFaultSeenBeforeItEnds(t *testing.T) {
	m := &FMU{log: slog.New(slog.DiscardHandler)}
	m.setFault(errors.New("the FMU's output throttle is NaN"))
	m.healthy() // the good answer of the same step
	if err := m.Fault(); err == nil {
		t.Fatal("the fault ended before the coupling saw it")
	}
	m.healthy()
	if err := m.Fault(); err != nil {
		t.Errorf("seen, the fault did not end at the next good answer: %v", err)
	}
	// The same fault again is seen again.
	m.setFault(errors.New("the FMU's output throttle is NaN"))
	m.healthy()
	if m.Fault() == nil {
		t.Error("a repeated fault ended unseen")
	}
}

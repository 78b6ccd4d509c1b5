package models

// Bounded is a Model whose Step always returns within a bound of its own:
// pure computation, or a wait with its own deadline. The coupling runs no
// hung-step watchdog for it (nothing of it is woken while the coupling
// runs). A model that calls into code it does not control (a C library)
// must not claim it.
type Bounded interface {
	Bounded()
}

// Tally is what a model that runs a program of its own counts.
type Tally struct {
	Missed    int64 // requests the program did not answer in time
	Discarded int64 // answers that were discarded as unusable
	Skipped   int64 // requests not sent while the program was busy
	Restarts  int64 // times the program was started again
}

// Tallier is a Model that keeps a Tally; the coupling reports it in the
// summary, /metrics and the exit status, whatever the number of vehicles.
type Tallier interface {
	Tally() Tally
}

func (Hold) Bounded()          {}
func (*CruisePedals) Bounded() {}
func (*CruiseTorque) Bounded() {}
func (*HeadingHold) Bounded()  {}
func (*Follow) Bounded()       {}

// Bounded: an exec model's step waits for its program's answer at most
// deadlineMs.
func (*Exec) Bounded() {}

// Tally counts what the program did.
func (m *Exec) Tally() Tally {
	return Tally{Missed: m.Missed(), Discarded: m.Bad(), Skipped: m.Skipped(), Restarts: m.Restarts()}
}

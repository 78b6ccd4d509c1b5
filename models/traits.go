package models

// Bounded is a Model whose Step always returns within a bound of its own
// (Bounded reports true): pure computation, or a wait with its own
// deadline. The coupling runs no hung-step watchdog for it (nothing of it
// is woken while the coupling runs). A model that calls into code it does
// not control (a C library in process) must say false.
type Bounded interface {
	Bounded() bool
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

func (Hold) Bounded() bool          { return true }
func (*CruisePedals) Bounded() bool { return true }
func (*CruiseTorque) Bounded() bool { return true }
func (*HeadingHold) Bounded() bool  { return true }
func (*Follow) Bounded() bool       { return true }

// Bounded: an exec model's step waits for its program's answer at most
// deadlineMs.
func (*Exec) Bounded() bool { return true }

// Bounded: an FMU in its child process is waited for with a deadline; one
// loaded into beamconnect runs its C code on the loop, which may hang.
func (m *FMU) Bounded() bool { return !m.inProcess }

// Tally counts what the program did.
func (m *Exec) Tally() Tally {
	return Tally{Missed: m.Missed(), Discarded: m.Bad(), Skipped: m.Skipped(), Restarts: m.Restarts()}
}

// Tally counts what the FMU did: steps answered too late, requests not
// sent while it was busy, its failures (an error status, a crash) and
// restarts.
func (m *FMU) Tally() Tally {
	return Tally{Missed: m.Missed(), Discarded: m.Failures(), Skipped: m.Skipped(), Restarts: m.Restarts()}
}

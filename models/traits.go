package models

// Tally is what a model that runs a program of its own counts.
type Tally struct {
	Missed    int64 // requests the program did not answer in time
	Discarded int64 // answers of a program that were discarded as unusable
	Failed    int64 // steps of an FMU that failed or gave unusable outputs
	Skipped   int64 // requests not sent while the program was busy
	Restarts  int64 // times the program was started again
	// Old counts answers for another request than the one awaited (an
	// older one's, answered after its step gave up): dropped, never used
	// for another message.
	Old int64
	// Abandoned counts threads left running in a hung step (an FMU in
	// process): they run on until beamconnect ends.
	Abandoned int64
	// A model exchange FMU's integration: accepted and rejected steps of
	// its solver, events handled.
	SolverSteps, SolverRejected, Events int64
	// InputsClamped: values of BeamNG's an FMU's input could not hold
	// (beyond its type or its min and max, no item of its enumeration),
	// clamped to what it holds.
	InputsClamped int64
}

// Tallier is a Model that keeps a Tally; the coupling reports it in the
// summary, /metrics and the exit status, whatever the number of vehicles.
type Tallier interface {
	Tally() Tally
}

// Package timeslice asks the kernel to run a waiting thread as soon as it
// is woken, beside threads that keep every core busy.
//
// Linux's scheduler (EEVDF, since 6.6) lets a thread it has just picked
// run out its time slice (about a millisecond) before a thread that is
// woken meanwhile may take the core, unless the woken thread asked for a
// shorter slice than the running one's (Linux 6.12 and later). Beside
// busy threads, which is the PC beside BeamNG, every handoff on a
// message's way (BeamNG's datagram to the coupling, the coupling's request
// to the FMU's thread or process, the answer back) then waits for the
// slice of whatever runs there. A thread that asks for the shortest slice,
// 0.1 ms, takes the core when woken: it gets no more of the processor
// than before (its share is its weight's), only sooner.
//
// Windows needs nothing of the kind: a thread woken from a wait on an
// event gets a priority boost above the normal threads beside it, which it
// preempts. Elsewhere Shorten does nothing.
package timeslice

// Slice is the time slice asked for (ns): the shortest Linux grants.
const Slice = 100_000

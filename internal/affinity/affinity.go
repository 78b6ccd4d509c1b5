// Package affinity moves a thread onto the processor another thread runs
// on, so that a handoff between the two on a machine whose cores are all
// busy costs a switch on one core, not a wake-up sent to another.
//
// Waking a thread that sleeps on another core sends that core an
// interrupt; when the core is busy (the PC beside BeamNG), the woken thread
// then waits there for the scheduler to let it in, behind whatever runs:
// tens of microseconds per handoff on a virtual machine, milliseconds at
// times. Two threads that hand a message back and forth on one core pass
// it in about a microsecond, busy cores or not: the one that waits sleeps,
// the other runs. On an idle machine the reverse holds (a spin on another
// core sees the message at once), so a thread follows another only while
// the cores are busy, and goes back to where it may run otherwise when
// they are not.
//
// Linux and Windows move the calling thread (sched_setaffinity,
// SetThreadGroupAffinity); elsewhere nothing moves and Current is 0.
package affinity

// Processor names a processor: 0 none (or not known), else 1 + its
// number (Linux), 1 + 64 × its group + its number in the group (Windows).
// A thread names its processor to a thread of another process in shared
// memory, so the number is the kernel's, not this process's.
type Processor uint32

package mailbox

import (
	"runtime"
	"unsafe"
)

// InProcess makes the two ends of a box between two threads of this
// process (an FMU stepped on a thread of its own): the same handoff as
// between processes, its waits spinning while that pays, then asleep on a
// private futex or an event. Its requests and answers carry no bytes: the
// two threads share memory, and Ask and Reply order what each wrote
// before them. Nothing needs releasing: the kernel's objects go with the
// box's memory.
func InProcess() (asker, answerer *Box, err error) {
	w, release, err := newLocalWaker()
	if err != nil {
		return nil, nil, err
	}
	// Each side's words on cache lines of their own, as in shared memory
	// (a mapping starts on a page).
	mem := make([]byte, layout(0, 0)+63)
	mem = mem[(64-uintptr(unsafe.Pointer(&mem[0]))%64)%64:][:layout(0, 0)]
	runtime.AddCleanup(&mem[0], func(release func()) { release() }, release)
	asker, answerer = &Box{wake: w}, &Box{wake: w}
	asker.init(mem, 0, 0, true)
	answerer.init(mem, 0, 0, false)
	return asker, answerer, nil
}

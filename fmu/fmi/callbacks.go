package fmi

import (
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// loggers maps the environment pointer an FMU hands back to its callbacks
// (a number, never a Go pointer) to the instance's Logger.
var loggers = &registry{m: map[uintptr]Logger{}}

type registry struct {
	mu   sync.Mutex
	next uintptr
	m    map[uintptr]Logger
}

func (r *registry) add(l Logger) uintptr {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.m[r.next] = l
	return r.next
}

func (r *registry) remove(k uintptr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

func (r *registry) log(env uintptr, s Status, category, msg uintptr) {
	r.mu.Lock()
	l := r.m[env]
	r.mu.Unlock()
	if l != nil {
		l(s, goString(category), goString(msg))
	}
}

// The callbacks are made once per process: purego can make only a limited
// number of them.
var (
	cbOnce   sync.Once
	cb2, cb3 uintptr
)

func makeCallbacks() {
	cbOnce.Do(func() {
		// FMI 2.0's logger is variadic: the message is a printf format
		// whose arguments beamconnect cannot read, so it is logged as
		// written.
		cb2 = purego.NewCallback(func(env, instance, status, category, msg uintptr) uintptr {
			loggers.log(env, Status(int32(status)), category, msg)
			return 0
		})
		cb3 = purego.NewCallback(func(env, status, category, msg uintptr) uintptr {
			loggers.log(env, Status(int32(status)), category, msg)
			return 0
		})
	})
}

func logger2() uintptr { makeCallbacks(); return cb2 }
func logger3() uintptr { makeCallbacks(); return cb3 }

// goString copies a NUL-terminated C string (at most 64 KiB of it).
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	const limit = 64 << 10
	b := unsafe.Slice((*byte)(cptr(p)), limit)
	for i := range b {
		if b[i] == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// cString copies s into C memory, NUL-terminated.
func cString(s string) uintptr {
	p := cAlloc(uintptr(len(s) + 1))
	copy(unsafe.Slice((*byte)(cptr(p)), len(s)+1), s)
	return p
}

// cAlloc is calloc: zeroed C memory the FMU may keep a pointer to.
func cAlloc(n uintptr) uintptr {
	p, _, _ := purego.SyscallN(libc.calloc, 1, n)
	if p == 0 {
		panic("fmi: out of C memory")
	}
	return p
}

func cFree(p uintptr) { purego.SyscallN(libc.free, p) }

// cptr turns an address of C memory into a pointer. The detour through
// memory keeps vet from taking it for a Go pointer hidden in an integer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

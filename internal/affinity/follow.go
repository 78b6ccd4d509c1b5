//go:build windows || (linux && (amd64 || arm64))

package affinity

import "runtime"

// Follower moves the thread that calls Follow: its zero value is a thread
// where it may run as it was started.
type Follower struct {
	at   Processor // what the last Follow asked for
	held bool      // the thread is locked to its goroutine and held on one processor
	own  mask      // where the thread may run otherwise (taken when first held)
}

// Follow holds the calling goroutine's thread on p, the processor the
// other thread runs on, or, for 0, lets it run where it could before. The
// goroutine stays locked to its thread while held (runtime.LockOSThread):
// an affinity belongs to a thread, not to a goroutine. A processor the
// thread may not use (taskset, a cgroup's cpuset, `start /affinity`,
// another processor group) is not followed: the thread then runs where it
// may. Follow reports whether the thread is held on p; it costs nothing
// while p does not change.
func (f *Follower) Follow(p Processor) bool {
	if p == f.at {
		return f.held
	}
	f.at = p
	if p == 0 {
		f.release()
		return false
	}
	if !f.held {
		runtime.LockOSThread()
		if !f.own.get() {
			runtime.UnlockOSThread()
			return false
		}
		f.held = true // from here on, release puts it back
	}
	if !f.own.allows(p) || !holdOn(p) {
		f.release()
		return false
	}
	return true
}

// release lets a held thread run where it could before, and unlocks it.
func (f *Follower) release() {
	if !f.held {
		return
	}
	f.own.set()
	f.held = false
	runtime.UnlockOSThread()
}

//go:build unix

package stdout

import (
	"os"
	"sync"
	"syscall"
)

// keep duplicates fd 1 (close-on-exec, as Go's own files are).
func keep() *os.File {
	fd, err := dupCloexec(1)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "/dev/stdout")
}

func dupCloexec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(nfd)
	}
	return nfd, err
}

var diverted struct {
	once sync.Once
	err  error
}

func divert() error {
	diverted.once.Do(func() {
		// dup2 replaces fd 1 in one step: C code's printf, which writes
		// to fd 1 whatever it is, goes to stderr from now on.
		diverted.err = dup2(2, 1)
		if diverted.err != nil {
			diverted.err = &os.SyscallError{Syscall: "dup2", Err: diverted.err}
		}
	})
	return diverted.err
}

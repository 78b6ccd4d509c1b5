package child

import (
	"os"
	"os/signal"

	"golang.org/x/sys/windows"
)

// ignoreTerminal drops the console's Ctrl-C and Ctrl-Break (the shim
// starts the child in a process group of its own, without a console):
// the master's end ends the child.
func ignoreTerminal() {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
}

// watchParent calls gone when the master's process ends, however it ends;
// the pipe's end says so too.
func watchParent(gone func()) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(os.Getppid()))
	if err != nil {
		return // the pipe still tells
	}
	go func() {
		windows.WaitForSingleObject(h, windows.INFINITE)
		windows.CloseHandle(h)
		gone()
	}()
}

package testprog

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

var generateConsoleCtrlEvent = syscall.NewLazyDLL("kernel32.dll").NewProc("GenerateConsoleCtrlEvent")

// Interrupt interrupts the program as Ctrl-C in its console does: Windows
// has no signal to send one process, so the console's CTRL_C_EVENT goes to
// every process attached to it, this one too, which catches it here. The
// event arrives as os.Interrupt in a Go program. It fails where this
// process has no console (run with its output redirected and no terminal,
// as under Wine without one).
func Interrupt(*os.Process) error {
	self := make(chan os.Signal, 1)
	signal.Notify(self, os.Interrupt)
	defer signal.Stop(self)
	const ctrlC = 0
	if r, _, err := generateConsoleCtrlEvent.Call(ctrlC, 0); r == 0 {
		return fmt.Errorf("Ctrl-C through the console: %w", err)
	}
	// The event is delivered to each process on its own thread; once this
	// one has it, the others have been sent theirs.
	select {
	case <-self:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("Ctrl-C through the console: it never reached this process")
	}
}

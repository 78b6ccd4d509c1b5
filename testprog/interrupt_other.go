//go:build !windows

package testprog

import "os"

// Interrupt interrupts the program as Ctrl-C in its terminal does.
func Interrupt(p *os.Process) error { return p.Signal(os.Interrupt) }

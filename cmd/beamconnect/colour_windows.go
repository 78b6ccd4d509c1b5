package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// takesColour reports whether f is a console that shows ANSI colours,
// turning them on: Windows counts NUL and serial ports as character
// devices too, and a console shows escape sequences as text unless told
// to process them (ENABLE_VIRTUAL_TERMINAL_PROCESSING, Windows 10 and
// later).
func takesColour(f *os.File) bool {
	h := windows.Handle(f.Fd())
	var mode uint32
	if windows.GetConsoleMode(h, &mode) != nil {
		return false // not a console
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}

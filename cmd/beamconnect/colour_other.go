//go:build !windows

package main

import "os"

// takesColour: a terminal here shows ANSI colours.
func takesColour(*os.File) bool { return true }

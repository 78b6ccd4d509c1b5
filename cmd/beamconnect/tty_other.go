//go:build !linux && !darwin

package main

import "os"

// ttyColumns cannot ask the terminal here: $COLUMNS or 80.
func ttyColumns(*os.File) int { return 0 }

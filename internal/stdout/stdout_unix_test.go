//go:build unix

package stdout

import "syscall"

// foreignWrites are what writeForeign writes: C code's printf ends in a
// write to fd 1.
var foreignWrites = []string{"fd 1"}

// loadOrders: on unix foreign code writes to fd 1 however it was loaded.
var loadOrders = []string{"none"}

func loadForeign(string) any { return nil }

func writeForeign(any) { syscall.Write(1, []byte("fd 1\n")) }

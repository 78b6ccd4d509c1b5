package stdout

import "syscall"

// dup2 is dup3 (linux/arm64 has no dup2).
func dup2(from, to int) error { return syscall.Dup3(from, to, 0) }

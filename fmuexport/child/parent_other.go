//go:build !unix && !windows

package child

func ignoreTerminal()         {}
func watchParent(gone func()) {}

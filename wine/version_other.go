//go:build !windows

package wine

// Version is "" here: Wine runs Windows programs only.
func Version() string { return "" }

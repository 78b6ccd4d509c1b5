//go:build !unix && !windows

package stdout

import "os"

func keep() *os.File { return nil }

func divert() error { return nil }

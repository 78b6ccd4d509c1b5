package fmi

import (
	"fmt"
	"os"
)

// ExitStatus is the status a process ends with when an FMU it loaded
// calls the C library's exit(). Go cannot refuse a C exit, nor go on after
// one (the C library is shutting down), but it can say so: an FMU that
// calls exit(0) would otherwise end beamconnect with status 0 and no word.
const ExitStatus = 3

// exited runs inside the C library's exit, before the process ends: what
// the FMU did is said on stderr, in the form of a crash report (the FMU
// host's client reports it as the reason its host ended), and the process
// ends with ExitStatus.
func exited(status int) {
	fmt.Fprintf(os.Stderr, "fatal error: the FMU called exit(%d), which ends the process it runs in: ended with status %d, its work unfinished\n", status, ExitStatus)
	os.Exit(ExitStatus)
}

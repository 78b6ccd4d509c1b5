package fmu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"beamconnect/internal/proctree"
)

// unpackPrefix begins the name of every folder an FMU is unpacked to, in
// the system's temporary folder; the pid of the beamconnect that made it
// follows.
const unpackPrefix = "beamconnect-fmu-"

// UnpackDir makes a folder to unpack an FMU (or a system's .ssp) to: beamconnect-fmu-PID-…
// in the system's temporary folder, PID this process's. Its maker removes
// it when the model closes; a run killed outright (SIGKILL, a power cut)
// cannot, so first the folders of runs that are no longer running are
// removed: those whose PID no process has. A folder whose PID a process
// has again (a reused pid) is kept, as is one that cannot be removed
// (another user's).
func UnpackDir() (string, error) {
	removeStale(os.TempDir())
	dir, err := os.MkdirTemp("", unpackPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("a folder to unpack to: %w", err)
	}
	return dir, nil
}

// removeStale removes the unpack folders in tmp whose maker has ended.
func removeStale(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, unpackPrefix+"*"))
	for _, dir := range dirs {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(dir), unpackPrefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n == os.Getpid() || proctree.Alive(n) {
			continue // not one of ours, or its run goes on
		}
		os.RemoveAll(dir)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"beamconnect/internal/eventually"
)

// The coupling does not outlive the master: killed outright (SIGKILL, no
// terminate, no free), the master's process leaves the FMU's child
// process to see it gone (its pipe closes), which leaves BeamNG with
// neutral controls, not the master's last inputs, and ends.
func TestExportedFMUEndsWithItsMaster(t *testing.T) {
	t.Parallel()
	e := exportFMU(t, "../../examples/cruise-pedals.json", 2)
	listen := freePort(t)
	rec := filepath.Join(t.TempDir(), "rig.csv")
	m := startMaster(t, e, 1000, 0.005, 0, 0.5, map[string]string{
		"localPort": "0", "remotePort": strconv.Itoa(int(listen.Port())), "recordFile": rec})
	bound := m.out.waitLine(t, waiting, 1, m.done)[1]
	em := emulate(t, e, bound, listen.String(), 1000, "--client-gone", "1s") // it stops once nobody answers
	// Coupled a while: the recording (flushed every 250 ms) has rows.
	if !eventually.True(time.Minute, func() bool {
		data, _ := os.ReadFile(rec)
		return bytes.Count(data, []byte("\n")) > 100
	}) {
		t.Fatalf("no rows recorded within a minute:\n%s", m.out)
	}
	child := filepath.Join(m.dir, "binaries", "linux64", "beamconnect")
	if len(processesOf(t, child)) != 1 {
		t.Fatalf("not one process of %s", child)
	}
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
	// (Not this process's child: nothing tells of its end.)
	if !eventually.True(time.Minute, func() bool { return len(processesOf(t, child)) == 0 }) {
		t.Fatal("the FMU's child process outlived its master by a minute")
	}
	em.summary(t)
	got := byID(readTable(t, filepath.Join(em.logs, "simulinkReceiveLog.csv")))
	// The replies: the master's 0.5 while it ran (a step it had asked
	// for runs to its end), then neutral controls only.
	last, neutral := int64(0), int64(0)
	for id := range got {
		last = max(last, id)
	}
	for id := int64(1); id <= last; id++ {
		switch v := got[id]["A1"]; {
		case v == 0 && neutral == 0:
			neutral = id
		case v != 0 && neutral != 0:
			t.Errorf("reply %d carried throttle %v after reply %d was neutral", id, v, neutral)
		case v != 0 && v != 0.5:
			t.Errorf("reply %d carried throttle %v, want the master's 0.5", id, v)
		}
	}
	if neutral < 10 {
		t.Errorf("replies carried the master's throttle until reply %d of %d: want many, then neutral controls once it was killed", neutral, last)
	}
}

// processesOf lists the pids of the running processes of executable exe.
func processesOf(t *testing.T, exe string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc here")
	}
	var pids []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); err == nil && target == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

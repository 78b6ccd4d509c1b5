//go:build unix

package mailbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Create makes a box for requests and answers of at most reqCap and ansCap
// bytes, in memory only this process and the child it is attached to can
// reach: a file in /dev/shm (memory, where there is one) unlinked at once.
func Create(reqCap, ansCap int) (*Box, error) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "beamconnect-mailbox-")
	if err != nil {
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	os.Remove(f.Name()) // nothing to clean up, however the processes end
	size := layout(reqCap, ansCap)
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	b, err := mapFile(f, size, reqCap, ansCap, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	b.file = f
	return b, nil
}

func mapFile(f *os.File, size, reqCap, ansCap int, asker bool) (*Box, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mailbox: mapping it: %w", err)
	}
	b := &Box{}
	b.init(mem, reqCap, ansCap, asker)
	b.release = func() error {
		if b.file != nil {
			b.file.Close()
		}
		return syscall.Munmap(mem)
	}
	return b, nil
}

// Attach hands the box to cmd, which must not have started: the child
// inherits it and finds it with FromEnv.
func (b *Box) Attach(cmd *exec.Cmd) {
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, b.file)
	setEnv(cmd, fmt.Sprintf("fd:%d,req:%d,ans:%d", fd, b.reqCap, b.ansCap))
}

// FromEnv takes the box this process was handed (ErrNoBox if none).
func FromEnv() (*Box, error) {
	got, err := fromEnv()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(got["fd"]), "mailbox")
	if f == nil {
		return nil, fmt.Errorf("mailbox: %s: no descriptor %d", envName, got["fd"])
	}
	req, ans := int(got["req"]), int(got["ans"])
	b, err := mapFile(f, layout(req, ans), req, ans, false)
	if err != nil {
		return nil, err
	}
	b.file = f
	return b, nil
}

package mailbox

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
	"unsafe"
)

var (
	kernel32     = syscall.NewLazyDLL("kernel32.dll")
	procCreateEv = kernel32.NewProc("CreateEventW")
	procSetEvent = kernel32.NewProc("SetEvent")
)

// waker sleeps and wakes on two auto-reset event objects, one per
// direction, which the child inherits.
type waker struct{ req, ans syscall.Handle }

func (w waker) event(off int) syscall.Handle {
	if off == offReqSeq {
		return w.req
	}
	return w.ans
}

func (w waker) wait(b *Box, off int, _ uint32, left time.Duration) {
	ms := uint32(syscall.INFINITE)
	if left >= 0 {
		ms = uint32((left + time.Millisecond - 1) / time.Millisecond)
	}
	syscall.WaitForSingleObject(w.event(off), ms)
}

// wake calls SetEvent through SyscallN, not LazyProc.Call: Call boxes the
// thread's last error into an error, which allocates whenever that number
// is above 255, and makes its arguments escape, so a handoff would
// allocate now and then depending on what the thread last failed at.
func (w waker) wake(b *Box, off int) { syscall.SyscallN(procSetEvent.Addr(), uintptr(w.event(off))) }

// newLocalWaker makes the events of a box in this process, not
// inheritable; close closes them.
func newLocalWaker() (waker, func(), error) {
	w := waker{}
	var err error
	if w.req, err = newEvent(nil); err == nil {
		if w.ans, err = newEvent(nil); err != nil {
			syscall.CloseHandle(w.req)
		}
	}
	return w, func() { syscall.CloseHandle(w.req); syscall.CloseHandle(w.ans) }, err
}

func newEvent(sa *syscall.SecurityAttributes) (syscall.Handle, error) {
	h, _, err := procCreateEv.Call(uintptr(unsafe.Pointer(sa)), 0, 0, 0)
	if h == 0 {
		return 0, fmt.Errorf("mailbox: CreateEvent: %w", err)
	}
	return syscall.Handle(h), nil
}

// Create makes a box for requests and answers of at most reqCap and ansCap
// bytes: a mapping of the paging file and two events, inheritable.
func Create(reqCap, ansCap int) (*Box, error) {
	sa := &syscall.SecurityAttributes{InheritHandle: 1}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	size := layout(reqCap, ansCap)
	m, err := syscall.CreateFileMapping(syscall.InvalidHandle, sa, syscall.PAGE_READWRITE, 0, uint32(size), nil)
	if err != nil {
		return nil, fmt.Errorf("mailbox: CreateFileMapping: %w", err)
	}
	w := waker{}
	if w.req, err = newEvent(sa); err == nil {
		w.ans, err = newEvent(sa)
	}
	if err != nil {
		syscall.CloseHandle(m)
		return nil, err
	}
	return mapView(m, w, size, reqCap, ansCap, true)
}

func mapView(m syscall.Handle, w waker, size, reqCap, ansCap int, asker bool) (*Box, error) {
	addr, err := syscall.MapViewOfFile(m, syscall.FILE_MAP_WRITE, 0, 0, uintptr(size))
	if err != nil {
		return nil, fmt.Errorf("mailbox: MapViewOfFile: %w", err)
	}
	b := &Box{wake: w, mapping: m}
	var base *byte // the view's address, as a pointer (vet rightly distrusts uintptr to Pointer conversions)
	*(*uintptr)(unsafe.Pointer(&base)) = addr
	b.init(unsafe.Slice(base, size), reqCap, ansCap, asker)
	b.release = func() error {
		err := syscall.UnmapViewOfFile(addr)
		syscall.CloseHandle(m)
		syscall.CloseHandle(w.req)
		syscall.CloseHandle(w.ans)
		return err
	}
	return b, nil
}

// Attach hands the box to cmd, which must not have started: the child
// inherits the mapping and the events and finds them with FromEnv.
func (b *Box) Attach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.AdditionalInheritedHandles = append(cmd.SysProcAttr.AdditionalInheritedHandles, b.mapping, b.wake.req, b.wake.ans)
	setEnv(cmd, fmt.Sprintf("map:%d,reqev:%d,ansev:%d,req:%d,ans:%d", b.mapping, b.wake.req, b.wake.ans, b.reqCap, b.ansCap))
}

// FromEnv takes the box this process was handed (ErrNoBox if none).
func FromEnv() (*Box, error) {
	got, err := fromEnv()
	if err != nil {
		return nil, err
	}
	wk := waker{req: syscall.Handle(got["reqev"]), ans: syscall.Handle(got["ansev"])}
	req, ans := int(got["req"]), int(got["ans"])
	return mapView(syscall.Handle(got["map"]), wk, layout(req, ans), req, ans, false)
}

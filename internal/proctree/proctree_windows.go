package proctree

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysTree holds the job object the program and its descendants run in; 0
// when none could be made (then Kill falls back to taskkill's tree kill,
// which finds descendants only while the program runs).
type sysTree struct {
	job windows.Handle
}

func (t *Tree) start(bool) error {
	if t.cmd.SysProcAttr == nil {
		t.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A new process group has Ctrl-C disabled: the console's Ctrl-C
	// passes it by. Suspended: it joins its job before it can run, so
	// nothing it starts escapes the job.
	t.cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED
	job, jobErr := newJob()
	if err := t.cmd.Start(); err != nil {
		if jobErr == nil {
			windows.CloseHandle(job)
		}
		return err
	}
	pid := uint32(t.cmd.Process.Pid)
	if jobErr == nil {
		if assign(job, pid) == nil {
			t.sys.job = job
		} else {
			windows.CloseHandle(job)
		}
	}
	if err := resume(pid); err != nil {
		t.kill()
		t.cmd.Wait()
		t.release()
		return &os.SyscallError{Syscall: "ResumeThread", Err: err}
	}
	return nil
}

// newJob makes a job object that kills every process in it when its last
// handle closes: beamconnect's, when it ends however it ends.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

func assign(job windows.Handle, pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// resume starts the threads of a process created suspended (its main
// thread: os/exec closes the handle CreateProcess gave for it).
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	e := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := false
	for err = windows.Thread32First(snap, &e); err == nil; err = windows.Thread32Next(snap, &e) {
		if e.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, e.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed = true
	}
	if !resumed {
		return windows.ERROR_NOT_FOUND
	}
	return nil
}

func (t *Tree) kill() {
	if t.sys.job != 0 {
		windows.TerminateJobObject(t.sys.job, 1)
		return
	}
	if t.waited || t.cmd.ProcessState != nil {
		return // without a job, what it left running cannot be told from other processes
	}
	// taskkill's tree kill (part of every Windows) finds descendants by
	// their parent, while the program runs.
	if exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(t.cmd.Process.Pid)).Run() != nil {
		t.cmd.Process.Kill()
	}
}

func (t *Tree) release() {
	if t.sys.job != 0 {
		windows.CloseHandle(t.sys.job)
		t.sys.job = 0
	}
}

// EndWithParent is for a program started by Start that runs foreign code
// (the FMU host): Ctrl-C and Ctrl-Break are taken and dropped (a new
// process group has Ctrl-C disabled already; this covers a program started
// otherwise), and when its parent ends, the program ends too. The job
// object ends what it started; the watch on the parent covers a program
// that could not be put in a job.
func EndWithParent() {
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	parent, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(os.Getppid()))
	if err != nil {
		os.Exit(1) // the parent is gone already
	}
	go func() {
		windows.WaitForSingleObject(parent, windows.INFINITE)
		os.Exit(1)
	}()
}

func prepare() {}

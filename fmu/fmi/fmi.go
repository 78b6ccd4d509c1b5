// Package fmi calls into an FMU's binary: it loads the shared library of an
// unpacked co-simulation FMU (FMI 2.0 or 3.0), instantiates it, sets and
// reads its variables and steps it. It needs no C compiler: the library is
// opened and called through github.com/ebitengine/purego.
//
// The C declarations used here are written from the FMI 2.0 and 3.0
// standards: function names, argument order and types, status codes.
package fmi

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"github.com/ebitengine/purego"

	"beamconnect/stdout"
)

// Status is what an FMI function returns. Both versions number it alike.
type Status int32

const (
	OK Status = iota
	Warning
	Discard
	Error
	Fatal
	Pending // FMI 2.0 only: an asynchronous doStep, which beamconnect never asks for
)

// Name is the status as the FMU's FMI version spells it (fmi2Error).
func (s Status) Name(major int) string {
	names := []string{"OK", "Warning", "Discard", "Error", "Fatal", "Pending"}
	if s < 0 || int(s) >= len(names) {
		return "status " + strconv.Itoa(int(s))
	}
	return "fmi" + strconv.Itoa(major) + names[s]
}

// Failed reports whether the status ends the step's usefulness: Discard,
// Error, Fatal, or something no version defines.
func (s Status) Failed() bool { return s != OK && s != Warning }

// CallError is an FMI function that did not return OK or Warning.
type CallError struct {
	Func   string // e.g. fmi2DoStep
	Status Status
	Major  int
	Time   float64 // the communication point, for doStep
}

func (e *CallError) Error() string {
	if e.Func == "fmi2DoStep" || e.Func == "fmi3DoStep" {
		return fmt.Sprintf("%s returned %s at t = %g s", e.Func, e.Status.Name(e.Major), e.Time)
	}
	return fmt.Sprintf("%s returned %s", e.Func, e.Status.Name(e.Major))
}

// Logger hears what the FMU logs.
type Logger func(status Status, category, message string)

// Library is an FMU's loaded binary.
type Library struct {
	Major int
	path  string
	h     uintptr
	f     funcs
}

// Close unloads the library; its instances must have been freed. (FMI
// lets an importer unload the binary once every instance is freed; on
// Windows the unpacked FMU's folder cannot be deleted until then.)
func (l *Library) Close() error {
	if l.h == 0 {
		return nil
	}
	h := l.h
	l.h = 0
	return unload(h)
}

// funcs holds the library's entry points. Functions with floating-point
// arguments go through purego.RegisterFunc, which places them in the right
// registers; the rest are called with purego.SyscallN, which allocates less.
type funcs struct {
	instantiate, free, enterInit, exitInit, terminate, reset         uintptr
	getF64, setF64, getF32, setF32, getI32, setI32, getBool, setBool uintptr

	setup2  func(c uintptr, tolDefined int32, tol, start float64, stopDefined int32, stop float64) int32
	doStep2 func(c uintptr, t, h float64, noSetPrior int32) int32
	enter3  func(c uintptr, tolDefined bool, tol, start float64, stopDefined bool, stop float64) int32
	doStep3 func(c uintptr, t, h float64, noSetPrior bool, eventNeeded, terminate, early *bool, last *float64) int32
}

// Load opens the binary of an FMU of FMI version major (2 or 3) and finds
// every function beamconnect calls.
func Load(path string, major int) (*Library, error) {
	if major != 2 && major != 3 {
		return nil, fmt.Errorf("FMI %d is not supported: expected 2 or 3", major)
	}
	// What the FMU prints (a debugging printf) goes to stderr, the log,
	// not into the program's own output: the FMU host's frames, run
	// --json's summary. Before loading: a library's initialisers may
	// print too.
	if err := stdout.Divert(); err != nil {
		return nil, fmt.Errorf("loading %s: keeping its output off the standard output: %w", path, err)
	}
	h, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	l := &Library{Major: major, path: path, h: h}
	var missing []string
	sym := func(name string) uintptr {
		p, err := symbol(h, name)
		if err != nil || p == 0 {
			missing = append(missing, name)
		}
		return p
	}
	p := "fmi" + strconv.Itoa(major)
	f := &l.f
	f.free, f.enterInit, f.exitInit = sym(p+"FreeInstance"), sym(p+"EnterInitializationMode"), sym(p+"ExitInitializationMode")
	f.terminate, f.reset = sym(p+"Terminate"), sym(p+"Reset")
	var doStep, setup uintptr
	if major == 2 {
		f.instantiate, setup = sym("fmi2Instantiate"), sym("fmi2SetupExperiment")
		f.getF64, f.setF64 = sym("fmi2GetReal"), sym("fmi2SetReal")
		f.getI32, f.setI32 = sym("fmi2GetInteger"), sym("fmi2SetInteger")
		f.getBool, f.setBool = sym("fmi2GetBoolean"), sym("fmi2SetBoolean")
	} else {
		f.instantiate = sym("fmi3InstantiateCoSimulation")
		f.getF64, f.setF64 = sym("fmi3GetFloat64"), sym("fmi3SetFloat64")
		f.getF32, f.setF32 = sym("fmi3GetFloat32"), sym("fmi3SetFloat32")
		f.getI32, f.setI32 = sym("fmi3GetInt32"), sym("fmi3SetInt32")
		f.getBool, f.setBool = sym("fmi3GetBoolean"), sym("fmi3SetBoolean")
	}
	doStep = sym(p + "DoStep")
	if len(missing) > 0 {
		l.Close()
		return nil, fmt.Errorf("%s lacks FMI %d.0 co-simulation functions: %v", path, major, missing)
	}
	if major == 2 {
		purego.RegisterFunc(&f.setup2, setup)
		purego.RegisterFunc(&f.doStep2, doStep)
	} else {
		purego.RegisterFunc(&f.enter3, f.enterInit)
		purego.RegisterFunc(&f.doStep3, doStep)
	}
	return l, nil
}

// Instance is one instantiated FMU.
type Instance struct {
	lib    *Library
	c      uintptr
	env    uintptr   // the logger's key
	cmem   []uintptr // C memory to free after the instance
	stepTo struct {  // fmi3DoStep's results, kept off the stack
		event, terminate, early bool
		last                    float64
	}
}

// Instantiate creates an instance for co-simulation. resources is the
// unpacked FMU's resources folder.
func (l *Library) Instantiate(name, token, resources string, log Logger) (*Instance, error) {
	in := &Instance{lib: l, env: loggers.add(log)}
	cstr := func(s string) uintptr {
		p := cString(s)
		in.cmem = append(in.cmem, p)
		return p
	}
	var c uintptr
	if l.Major == 2 {
		cb := cAlloc(5 * unsafe.Sizeof(uintptr(0)))
		in.cmem = append(in.cmem, cb)
		fields := unsafe.Slice((*uintptr)(cptr(cb)), 5)
		fields[0], fields[1], fields[2], fields[3], fields[4] = logger2(), libc.calloc, libc.free, 0, in.env
		c, _, _ = purego.SyscallN(l.f.instantiate, cstr(name), 1 /* fmi2CoSimulation */, cstr(token),
			cstr(fileURI(resources)), cb, 0 /* visible */, 0 /* loggingOn */)
	} else {
		res := uintptr(0) // NULL: the FMU has no resources folder
		if st, err := os.Stat(resources); err == nil && st.IsDir() {
			res = cstr(dirPath(resources))
		}
		c, _, _ = purego.SyscallN(l.f.instantiate, cstr(name), cstr(token), res,
			0 /* visible */, 0 /* loggingOn */, 0 /* eventModeUsed */, 0 /* earlyReturnAllowed */, 0, 0,
			in.env, logger3(), 0 /* intermediateUpdate */)
	}
	if c == 0 {
		in.release()
		return nil, fmt.Errorf("%s: fmi%dInstantiate failed (it returned NULL; the FMU's log may say why)", l.path, l.Major)
	}
	in.c = c
	return in, nil
}

func (in *Instance) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	return in.status(name, Status(int32(r)), 0)
}

func (in *Instance) status(fn string, s Status, t float64) error {
	if !s.Failed() {
		return nil
	}
	return &CallError{Func: "fmi" + strconv.Itoa(in.lib.Major) + fn, Status: s, Major: in.lib.Major, Time: t}
}

// EnterInit starts initialization with the experiment's start time (FMI
// 2.0: fmi2SetupExperiment then fmi2EnterInitializationMode).
func (in *Instance) EnterInit(start float64) error {
	if in.lib.Major == 2 {
		if err := in.status("SetupExperiment", Status(in.lib.f.setup2(in.c, 0, 0, start, 0, 0)), 0); err != nil {
			return err
		}
		return in.call("EnterInitializationMode", in.lib.f.enterInit, in.c)
	}
	return in.status("EnterInitializationMode", Status(in.lib.f.enter3(in.c, false, 0, start, false, 0)), 0)
}

// ExitInit ends initialization: the FMU is ready to step.
func (in *Instance) ExitInit() error {
	return in.call("ExitInitializationMode", in.lib.f.exitInit, in.c)
}

// DoStep computes the FMU from t to t+h.
func (in *Instance) DoStep(t, h float64) error {
	var s int32
	if in.lib.Major == 2 {
		s = in.lib.f.doStep2(in.c, t, h, 1)
	} else {
		r := &in.stepTo
		s = in.lib.f.doStep3(in.c, t, h, true, &r.event, &r.terminate, &r.early, &r.last)
	}
	return in.status("DoStep", Status(s), t)
}

// Reset brings the instance back to just after instantiation.
func (in *Instance) Reset() error { return in.call("Reset", in.lib.f.reset, in.c) }

// Terminate ends the simulation run; Free releases the instance.
func (in *Instance) Terminate() error { return in.call("Terminate", in.lib.f.terminate, in.c) }

// Free releases the instance and what beamconnect allocated for it.
func (in *Instance) Free() {
	if in.c != 0 {
		purego.SyscallN(in.lib.f.free, in.c)
		in.c = 0
	}
	in.release()
}

func (in *Instance) release() {
	for _, p := range in.cmem {
		cFree(p)
	}
	in.cmem = nil
	loggers.remove(in.env)
}

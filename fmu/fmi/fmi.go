// Package fmi calls into an FMU's binary: it loads the shared library of an
// unpacked FMU (FMI 2.0 or 3.0, for co-simulation or model exchange),
// instantiates it, sets and reads its variables and steps it: a
// co-simulation FMU with its own doStep, a model exchange FMU by
// integrating its equations (package fmu/ode) with the event handling FMI
// asks of a master. It needs no C compiler: the library is opened and
// called through github.com/ebitengine/purego.
//
// The C declarations used here are written from the FMI 2.0 and 3.0
// standards: function names, argument order and types, status codes.
package fmi

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"beamconnect/internal/stdout"
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
	Why    string  // what beamconnect adds, "" when nothing
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("%s returned %s", e.Func, e.Status.Name(e.Major))
	if e.Func == "fmi2DoStep" || e.Func == "fmi3DoStep" {
		s += fmt.Sprintf(" at t = %g s", e.Time)
	}
	if e.Why != "" {
		s += ": " + e.Why
	}
	return s
}

// Logger hears what the FMU logs.
type Logger func(status Status, category, message string)

// Library is an FMU's loaded binary.
type Library struct {
	Major int
	path  string
	h     uintptr

	mu   sync.Mutex
	syms map[string]uintptr

	// Functions with floating-point arguments go through
	// purego.RegisterFunc, which places them in the right registers; the
	// rest are called with purego.SyscallN, which allocates less.
	setup2   func(c uintptr, tolDefined int32, tol, start float64, stopDefined int32, stop float64) int32
	doStep2  func(c uintptr, t, h float64, noSetPrior int32) int32
	setTime2 func(c uintptr, t float64) int32
	enter3   func(c uintptr, tolDefined bool, tol, start float64, stopDefined bool, stop float64) int32
	doStep3  func(c uintptr, t, h float64, noSetPrior bool, eventNeeded, terminate, early *bool, last *float64) int32
	setTime3 func(c uintptr, t float64) int32
	update3  func(c uintptr, needUpdate, terminate, nominalsChanged, valuesChanged, nextDefined *bool, next *float64) int32
	done3    func(c uintptr, noSetPrior bool, enterEvent, terminate *bool) int32
	status2  func(c uintptr, kind int32, value *float64) int32
}

// Load opens the binary of an FMU of FMI version major (2 or 3) and finds
// the functions every FMU has; the others are found when first needed.
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
	l := &Library{Major: major, path: path, h: h, syms: map[string]uintptr{}}
	var missing []string
	p := "fmi" + strconv.Itoa(major)
	for _, name := range []string{"FreeInstance", "EnterInitializationMode", "ExitInitializationMode", "Terminate", "Reset"} {
		if _, err := l.sym(p + name); err != nil {
			missing = append(missing, p+name)
		}
	}
	if len(missing) > 0 {
		l.Close()
		return nil, fmt.Errorf("%s lacks FMI %d.0 functions every FMU has: %v", path, major, missing)
	}
	return l, nil
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

// sym finds a function of the library by name, once.
func (l *Library) sym(name string) (uintptr, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.syms[name]; ok {
		return p, nil
	}
	p, err := symbol(l.h, name)
	if err != nil || p == 0 || name == "" {
		return 0, fmt.Errorf("the FMU's binary lacks %s (FMI %d.0), which beamconnect needs for it", name, l.Major)
	}
	l.syms[name] = p
	return p, nil
}

// register binds fn (a pointer to a func variable) to the library's
// function name, once.
func (l *Library) register(fn any, bound func() bool, name string) error {
	if bound() {
		return nil
	}
	p, err := l.sym(name)
	if err != nil {
		return err
	}
	purego.RegisterFunc(fn, p)
	return nil
}

// Instance is one instantiated FMU.
type Instance struct {
	lib  *Library
	c    uintptr
	me   bool      // instantiated for model exchange
	env  uintptr   // the logger's key
	cmem []uintptr // C memory to free after the instance
	out  struct {  // the results of calls that return several, kept off the stack
		event, terminate, early, b4, b5 bool
		last                            float64
		term2                           int32
		info2                           eventInfo2
		state                           uintptr
		n                               uintptr
	}
}

// eventInfo2 is FMI 2.0's fmi2EventInfo: five fmi2Booleans (ints) and a
// double.
type eventInfo2 struct {
	newDiscreteStatesNeeded, terminateSimulation, nominalsChanged, valuesChanged, nextEventTimeDefined int32
	_                                                                                                  int32
	nextEventTime                                                                                      float64
}

// Instantiate creates an instance for co-simulation, or for model
// exchange when me is true. resources is the unpacked FMU's resources
// folder.
func (l *Library) Instantiate(name, token, resources string, me bool, log Logger) (*Instance, error) {
	in := &Instance{lib: l, me: me, env: loggers.add(log)}
	cstr := func(s string) uintptr {
		p := cString(s)
		in.cmem = append(in.cmem, p)
		return p
	}
	var c uintptr
	if l.Major == 2 {
		fn, err := l.sym("fmi2Instantiate")
		if err != nil {
			in.release()
			return nil, err
		}
		cb := cAlloc(5 * unsafe.Sizeof(uintptr(0)))
		in.cmem = append(in.cmem, cb)
		fields := unsafe.Slice((*uintptr)(cptr(cb)), 5)
		fields[0], fields[1], fields[2], fields[3], fields[4] = logger2(), libc.calloc, libc.free, 0, in.env
		kind := uintptr(1) // fmi2CoSimulation
		if me {
			kind = 0 // fmi2ModelExchange
		}
		c, _, _ = purego.SyscallN(fn, cstr(name), kind, cstr(token), cstr(fileURI(resources)), cb, 0 /* visible */, 0 /* loggingOn */)
	} else {
		res := uintptr(0) // NULL: the FMU has no resources folder
		if st, err := os.Stat(resources); err == nil && st.IsDir() {
			res = cstr(dirPath(resources))
		}
		fname := "fmi3InstantiateCoSimulation"
		if me {
			fname = "fmi3InstantiateModelExchange"
		}
		fn, err := l.sym(fname)
		if err != nil {
			in.release()
			return nil, err
		}
		if me {
			c, _, _ = purego.SyscallN(fn, cstr(name), cstr(token), res, 0 /* visible */, 0 /* loggingOn */, in.env, logger3())
		} else {
			c, _, _ = purego.SyscallN(fn, cstr(name), cstr(token), res,
				0 /* visible */, 0 /* loggingOn */, 0 /* eventModeUsed */, 0 /* earlyReturnAllowed */, 0, 0,
				in.env, logger3(), 0 /* intermediateUpdate */)
		}
	}
	if c == 0 {
		in.release()
		return nil, fmt.Errorf("%s: fmi%dInstantiate failed (it returned NULL; the FMU's log may say why)", l.path, l.Major)
	}
	in.c = c
	return in, nil
}

// call calls fn, which returns a status, with integer and pointer
// arguments.
func (in *Instance) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	return in.status(name, Status(int32(r)), 0)
}

// callNamed looks fn up by its name without the fmiX prefix and calls it.
func (in *Instance) callNamed(name string, args ...uintptr) error {
	full := "fmi" + strconv.Itoa(in.lib.Major) + name
	fn, err := in.lib.sym(full)
	if err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(fn, append([]uintptr{in.c}, args...)...)
	return in.status(name, Status(int32(r)), 0)
}

func (in *Instance) status(fn string, s Status, t float64) error {
	if !s.Failed() {
		return nil
	}
	return &CallError{Func: "fmi" + strconv.Itoa(in.lib.Major) + fn, Status: s, Major: in.lib.Major, Time: t}
}

// EnterInit starts initialization with the experiment's start time and,
// when tol > 0, the relative tolerance the master integrates with (FMI
// 2.0: fmi2SetupExperiment then fmi2EnterInitializationMode).
func (in *Instance) EnterInit(start, tol float64) error {
	l := in.lib
	if l.Major == 2 {
		if err := l.register(&l.setup2, func() bool { return l.setup2 != nil }, "fmi2SetupExperiment"); err != nil {
			return err
		}
		if err := in.status("SetupExperiment", Status(l.setup2(in.c, b2i(tol > 0), tol, start, 0, 0)), 0); err != nil {
			return err
		}
		return in.callNamed("EnterInitializationMode")
	}
	if err := l.register(&l.enter3, func() bool { return l.enter3 != nil }, "fmi3EnterInitializationMode"); err != nil {
		return err
	}
	return in.status("EnterInitializationMode", Status(l.enter3(in.c, tol > 0, tol, start, false, 0)), 0)
}

// ExitInit ends initialization: a co-simulation FMU is ready to step, a
// model exchange FMU is in event mode.
func (in *Instance) ExitInit() error { return in.callNamed("ExitInitializationMode") }

// StepInfo is what a co-simulation step says besides its status.
type StepInfo struct {
	// Terminate: the FMU asks to end the simulation (FMI 2.0: a discarded
	// step and fmi2Terminated; FMI 3.0: terminateSimulation).
	Terminate bool
	// Last is how far the FMU got: t + h when it stepped whole.
	Last float64
}

// DoStep computes the FMU from t to t+h. A discarded step (FMI 2.0) says
// whether the FMU asked to terminate and how far it got.
func (in *Instance) DoStep(t, h float64) (StepInfo, error) {
	l := in.lib
	info := StepInfo{Last: t + h}
	var s Status
	if l.Major == 2 {
		if err := l.register(&l.doStep2, func() bool { return l.doStep2 != nil }, "fmi2DoStep"); err != nil {
			return info, err
		}
		s = Status(l.doStep2(in.c, t, h, 1))
		if s == Discard {
			// The FMU computed only part of the step: the standard has the
			// master ask whether it wants to stop, and where it got.
			in.out.term2 = 0
			if fn, err := l.sym("fmi2GetBooleanStatus"); err == nil {
				purego.SyscallN(fn, in.c, 3 /* fmi2Terminated */, uintptr(unsafe.Pointer(&in.out.term2)))
			}
			info.Terminate = in.out.term2 != 0
			if err := l.register(&l.status2, func() bool { return l.status2 != nil }, "fmi2GetRealStatus"); err == nil {
				if !Status(l.status2(in.c, 2 /* fmi2LastSuccessfulTime */, &in.out.last)).Failed() {
					info.Last = in.out.last
				}
			}
		}
	} else {
		if err := l.register(&l.doStep3, func() bool { return l.doStep3 != nil }, "fmi3DoStep"); err != nil {
			return info, err
		}
		r := &in.out
		r.terminate, r.last = false, t+h
		s = Status(l.doStep3(in.c, t, h, true, &r.event, &r.terminate, &r.early, &r.last))
		info.Terminate, info.Last = r.terminate, r.last
	}
	return info, in.status("DoStep", s, t)
}

// Reset brings the instance back to just after instantiation.
func (in *Instance) Reset() error { return in.callNamed("Reset") }

// Terminate ends the simulation run; Free releases the instance.
func (in *Instance) Terminate() error { return in.callNamed("Terminate") }

// Free releases the instance and what beamconnect allocated for it.
func (in *Instance) Free() {
	if in.c != 0 && in.out.state != 0 {
		// The state SaveState kept: the FMU's memory, freed by the FMU.
		in.callNamed(in.stateFn("Free"), uintptr(unsafe.Pointer(&in.out.state)))
		in.out.state = 0
	}
	if in.c != 0 {
		if fn, err := in.lib.sym("fmi" + strconv.Itoa(in.lib.Major) + "FreeInstance"); err == nil {
			purego.SyscallN(fn, in.c)
		}
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

// SaveState keeps the FMU's state (fmiXGetFMUstate, into the one it kept
// before, if any), so that a step can be redone.
func (in *Instance) SaveState() error {
	return in.callNamed(in.stateFn("Get"), uintptr(unsafe.Pointer(&in.out.state)))
}

// RestoreState brings the FMU back to the state SaveState kept.
func (in *Instance) RestoreState() error { return in.callNamed(in.stateFn("Set"), in.out.state) }

// stateFn names fmiXGetFMUstate or fmiXSetFMUstate without its prefix
// (FMI 3.0 spells it FMUState).
func (in *Instance) stateFn(dir string) string {
	if in.lib.Major == 2 {
		return dir + "FMUstate"
	}
	return dir + "FMUState"
}

// EnterConfigurationMode and ExitConfigurationMode bracket setting FMI
// 3.0 structural parameters before initialization.
func (in *Instance) EnterConfigurationMode() error { return in.callNamed("EnterConfigurationMode") }
func (in *Instance) ExitConfigurationMode() error  { return in.callNamed("ExitConfigurationMode") }

// Text is a String or Binary parameter's value.
type Text struct {
	VR     uint32
	Name   string
	Binary bool     // an FMI 3.0 Binary: the values are bytes
	Values []string // one per element
}

// SetText sets a String or Binary parameter (before initialization).
func (in *Instance) SetText(t Text) error {
	var keep []uintptr
	defer func() {
		for _, p := range keep {
			cFree(p)
		}
	}()
	vr := []uint32{t.VR}
	ptrs := make([]uintptr, len(t.Values))
	sizes := make([]uintptr, len(t.Values))
	for i, v := range t.Values {
		p := cAlloc(uintptr(len(v) + 1))
		copy(unsafe.Slice((*byte)(cptr(p)), len(v)+1), v)
		keep = append(keep, p)
		ptrs[i], sizes[i] = p, uintptr(len(v))
	}
	n := uintptr(len(t.Values))
	switch {
	case t.Binary:
		return in.callNamed("SetBinary", ptr(vr), 1, ptr(sizes), ptr(ptrs), n)
	case in.lib.Major == 3:
		return in.callNamed("SetString", ptr(vr), 1, ptr(ptrs), n)
	}
	return in.callNamed("SetString", ptr(vr), 1, ptr(ptrs))
}

package fmi

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"beamconnect/fmu"
)

// Var is a variable the master exchanges with the FMU.
type Var struct {
	VR   uint32
	Kind fmu.Kind
	Name string
	// N is an array's number of elements (0 or 1: a scalar); its values
	// are N consecutive values of the caller's list, in the FMU's order
	// (row-major).
	N int
	// Discrete: a Model Exchange FMU takes a new value of it in event mode
	// only (a discrete-time input).
	Discrete bool
	// Structural: an FMI 3.0 structural parameter, set in configuration
	// mode.
	Structural bool
}

// Elems is how many values the variable takes.
func (v Var) Elems() int { return max(v.N, 1) }

// Count is how many values a list of variables takes.
func Count(list []Var) int {
	n := 0
	for _, v := range list {
		n += v.Elems()
	}
	return n
}

// Vars is a list of variables grouped by kind, with the buffers one call
// per kind needs, so exchanging values allocates little: purego's call
// itself allocates once.
type Vars struct {
	List   []Var
	groups []group
}

// group is the variables of one kind: their value references, where each
// one's values sit in the caller's list and how many it has, and a buffer
// for the C values of all of them.
type group struct {
	kind     fmu.Kind
	vr       []uint32
	at, n    []int
	total    int
	buf      []uint64 // the C array, elemSize bytes an element
	set, get fnRef    // the functions, looked up at their first call
}

// fnRef is an FMI function, looked up once.
type fnRef struct {
	name string
	p    uintptr
}

// NewVars groups list by kind. Kinds that are not numbers are an error.
func NewVars(list []Var) (*Vars, error) {
	v := &Vars{List: list}
	byKind := map[fmu.Kind]int{}
	at := 0
	for _, x := range list {
		if !x.Kind.Numeric() {
			return nil, fmt.Errorf("variable %q: its type (%v) cannot be exchanged as a number", x.Name, x.Kind)
		}
		i, ok := byKind[x.Kind]
		if !ok {
			i = len(v.groups)
			byKind[x.Kind] = i
			v.groups = append(v.groups, group{kind: x.Kind})
		}
		g := &v.groups[i]
		g.vr, g.at, g.n = append(g.vr, x.VR), append(g.at, at), append(g.n, x.Elems())
		g.total += x.Elems()
		at += x.Elems()
	}
	for i := range v.groups {
		g := &v.groups[i]
		g.buf = make([]uint64, g.total) // 8 bytes an element: room for every kind
	}
	return v, nil
}

// Len is the number of variables.
func (v *Vars) Len() int { return len(v.List) }

func ptr[T any](s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

// fnName is the FMI function that sets or gets a kind ("Set" or "Get"),
// or "" where the version has none.
func fnName(major int, dir string, k fmu.Kind) string {
	if major == 2 {
		switch k {
		case fmu.Float64:
			return "fmi2" + dir + "Real"
		case fmu.Int32, fmu.Enum:
			return "fmi2" + dir + "Integer"
		case fmu.Bool:
			return "fmi2" + dir + "Boolean"
		}
		return ""
	}
	name := map[fmu.Kind]string{fmu.Float64: "Float64", fmu.Float32: "Float32", fmu.Int8: "Int8", fmu.UInt8: "UInt8",
		fmu.Int16: "Int16", fmu.UInt16: "UInt16", fmu.Int32: "Int32", fmu.UInt32: "UInt32", fmu.Int64: "Int64",
		fmu.UInt64: "UInt64", fmu.Bool: "Boolean", fmu.Enum: "Int64"}[k]
	if name == "" {
		return ""
	}
	return "fmi3" + dir + name
}

// Set gives the variables vals (one per element, in list order): integers
// rounded and held within their type, booleans true when not 0.
func (in *Instance) Set(v *Vars, vals []float64) error {
	var errs []error
	for i := range v.groups {
		g := &v.groups[i]
		k := 0
		for j, at := range g.at {
			for e := range g.n[j] {
				put(in.lib.Major, g.kind, g.buf, k, vals[at+e])
				k++
			}
		}
		errs = append(errs, in.transfer("Set", g))
	}
	return errors.Join(errs...)
}

// Get reads the variables into vals (one per element, in list order).
func (in *Instance) Get(v *Vars, vals []float64) error {
	var errs []error
	for i := range v.groups {
		g := &v.groups[i]
		errs = append(errs, in.transfer("Get", g))
		k := 0
		for j, at := range g.at {
			for e := range g.n[j] {
				vals[at+e] = take(in.lib.Major, g.kind, g.buf, k)
				k++
			}
		}
	}
	return errors.Join(errs...)
}

// transfer calls fmiXSet… or fmiXGet… for one group.
func (in *Instance) transfer(dir string, g *group) error {
	f := &g.get
	if dir == "Set" {
		f = &g.set
	}
	if f.p == 0 {
		f.name = fnName(in.lib.Major, dir, g.kind)
		p, err := in.lib.sym(f.name)
		if err != nil {
			return err
		}
		f.p = p
	}
	n := uintptr(len(g.vr))
	// in.call names the function without its prefix (fmi2, fmi3).
	if in.lib.Major == 3 {
		return in.call(f.name[len("fmiX"):], f.p, in.c, ptr(g.vr), n, ptr(g.buf), uintptr(g.total))
	}
	return in.call(f.name[len("fmiX"):], f.p, in.c, ptr(g.vr), n, ptr(g.buf))
}

// put writes x as element k of a C array of kind in buf.
func put(major int, kind fmu.Kind, buf []uint64, k int, x float64) {
	p := unsafe.Pointer(&buf[0])
	if kind == fmu.Bool {
		on := x != 0 && x == x
		if major == 2 {
			unsafe.Slice((*int32)(p), k+1)[k] = b2i(on)
		} else {
			unsafe.Slice((*bool)(p), k+1)[k] = on
		}
		return
	}
	if kind == fmu.Float64 {
		unsafe.Slice((*float64)(p), k+1)[k] = x
		return
	}
	if kind == fmu.Float32 {
		unsafe.Slice((*float32)(p), k+1)[k] = float32(x)
		return
	}
	if kind == fmu.Enum && major == 2 {
		kind = fmu.Int32
	}
	switch lo, hi := kind.Limits(); {
	case x != x:
		x = 0
	case x <= lo:
		x = lo
	case x >= hi:
		x = hi
	default:
		x = math.Round(x)
	}
	switch kind {
	case fmu.Int8:
		unsafe.Slice((*int8)(p), k+1)[k] = int8(x)
	case fmu.UInt8:
		unsafe.Slice((*uint8)(p), k+1)[k] = uint8(x)
	case fmu.Int16:
		unsafe.Slice((*int16)(p), k+1)[k] = int16(x)
	case fmu.UInt16:
		unsafe.Slice((*uint16)(p), k+1)[k] = uint16(x)
	case fmu.Int32:
		unsafe.Slice((*int32)(p), k+1)[k] = int32(x)
	case fmu.UInt32:
		unsafe.Slice((*uint32)(p), k+1)[k] = uint32(x)
	case fmu.Int64, fmu.Enum:
		i := int64(math.MaxInt64) // 2^63 as a float64 is past the largest int64
		if x < 9.223372036854775e18 {
			i = int64(x)
		}
		unsafe.Slice((*int64)(p), k+1)[k] = i
	case fmu.UInt64:
		u := uint64(math.MaxUint64)
		if x < 1.8446744073709550e19 {
			u = uint64(x)
		}
		unsafe.Slice((*uint64)(p), k+1)[k] = u
	}
}

// take reads element k of a C array of kind in buf as a float64.
func take(major int, kind fmu.Kind, buf []uint64, k int) float64 {
	p := unsafe.Pointer(&buf[0])
	switch kind {
	case fmu.Float64:
		return unsafe.Slice((*float64)(p), k+1)[k]
	case fmu.Float32:
		return float64(unsafe.Slice((*float32)(p), k+1)[k])
	case fmu.Bool:
		if major == 2 {
			return float64(b2i(unsafe.Slice((*int32)(p), k+1)[k] != 0))
		}
		return float64(b2i(unsafe.Slice((*bool)(p), k+1)[k]))
	case fmu.Int8:
		return float64(unsafe.Slice((*int8)(p), k+1)[k])
	case fmu.UInt8:
		return float64(unsafe.Slice((*uint8)(p), k+1)[k])
	case fmu.Int16:
		return float64(unsafe.Slice((*int16)(p), k+1)[k])
	case fmu.UInt16:
		return float64(unsafe.Slice((*uint16)(p), k+1)[k])
	case fmu.Int32:
		return float64(unsafe.Slice((*int32)(p), k+1)[k])
	case fmu.UInt32:
		return float64(unsafe.Slice((*uint32)(p), k+1)[k])
	case fmu.Enum:
		if major == 2 {
			return float64(unsafe.Slice((*int32)(p), k+1)[k])
		}
		return float64(unsafe.Slice((*int64)(p), k+1)[k])
	case fmu.Int64:
		return float64(unsafe.Slice((*int64)(p), k+1)[k])
	case fmu.UInt64:
		return float64(unsafe.Slice((*uint64)(p), k+1)[k])
	}
	return math.NaN()
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

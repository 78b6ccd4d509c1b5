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
}

// Vars is a list of variables grouped by kind, with the buffers one call
// per kind needs, so exchanging values allocates little: purego's call
// itself allocates once.
type Vars struct {
	List             []Var
	f64, f32, i32, b group
	f64v             []float64
	f32v             []float32
	i32v, bool2      []int32 // FMI 2.0 booleans are ints
	bool3            []bool  // FMI 3.0 booleans are C bools
}

// group is the variables of one kind: their value references and where
// each one's value sits in the caller's list.
type group struct {
	vr []uint32
	at []int
}

func (g *group) add(vr uint32, at int) { g.vr, g.at = append(g.vr, vr), append(g.at, at) }

// NewVars groups list by kind. Unsupported kinds are an error.
func NewVars(list []Var) (*Vars, error) {
	v := &Vars{List: list}
	for i, x := range list {
		switch x.Kind {
		case fmu.Float64:
			v.f64.add(x.VR, i)
		case fmu.Float32:
			v.f32.add(x.VR, i)
		case fmu.Int32:
			v.i32.add(x.VR, i)
		case fmu.Bool:
			v.b.add(x.VR, i)
		default:
			return nil, fmt.Errorf("variable %q: its type cannot be exchanged", x.Name)
		}
	}
	v.f64v = make([]float64, len(v.f64.vr))
	v.f32v = make([]float32, len(v.f32.vr))
	v.i32v = make([]int32, len(v.i32.vr))
	v.bool2 = make([]int32, len(v.b.vr))
	v.bool3 = make([]bool, len(v.b.vr))
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

// Set gives the variables vals (one per variable, in list order): integers
// rounded, booleans true when not 0.
func (in *Instance) Set(v *Vars, vals []float64) error {
	f := &in.lib.f
	three := in.lib.Major == 3
	set := func(name string, fn uintptr, g *group, buf uintptr) error {
		n := uintptr(len(g.vr))
		if n == 0 {
			return nil
		}
		if three {
			return in.call(name, fn, in.c, ptr(g.vr), n, buf, n)
		}
		return in.call(name, fn, in.c, ptr(g.vr), n, buf)
	}
	for i, at := range v.f64.at {
		v.f64v[i] = vals[at]
	}
	for i, at := range v.f32.at {
		v.f32v[i] = float32(vals[at])
	}
	for i, at := range v.i32.at {
		v.i32v[i] = toInt32(vals[at])
	}
	for i, at := range v.b.at {
		on := vals[at] != 0 && !math.IsNaN(vals[at])
		v.bool3[i] = on
		v.bool2[i] = 0
		if on {
			v.bool2[i] = 1
		}
	}
	names := [4]string{"SetReal", "SetFloat32", "SetInteger", "SetBoolean"}
	bools := ptr(v.bool2)
	if three {
		names = [4]string{"SetFloat64", "SetFloat32", "SetInt32", "SetBoolean"}
		bools = ptr(v.bool3)
	}
	err := errors.Join(set(names[0], f.setF64, &v.f64, ptr(v.f64v)), set(names[2], f.setI32, &v.i32, ptr(v.i32v)),
		set(names[3], f.setBool, &v.b, bools))
	if err == nil && len(v.f32.vr) > 0 {
		err = set(names[1], f.setF32, &v.f32, ptr(v.f32v))
	}
	return err
}

// Get reads the variables into vals (one per variable, in list order).
func (in *Instance) Get(v *Vars, vals []float64) error {
	f := &in.lib.f
	three := in.lib.Major == 3
	get := func(name string, fn uintptr, g *group, buf uintptr) error {
		n := uintptr(len(g.vr))
		if n == 0 {
			return nil
		}
		if three {
			return in.call(name, fn, in.c, ptr(g.vr), n, buf, n)
		}
		return in.call(name, fn, in.c, ptr(g.vr), n, buf)
	}
	var err error
	if three {
		err = errors.Join(get("GetFloat64", f.getF64, &v.f64, ptr(v.f64v)), get("GetFloat32", f.getF32, &v.f32, ptr(v.f32v)),
			get("GetInt32", f.getI32, &v.i32, ptr(v.i32v)), get("GetBoolean", f.getBool, &v.b, ptr(v.bool3)))
	} else {
		err = errors.Join(get("GetReal", f.getF64, &v.f64, ptr(v.f64v)),
			get("GetInteger", f.getI32, &v.i32, ptr(v.i32v)), get("GetBoolean", f.getBool, &v.b, ptr(v.bool2)))
	}
	for i, at := range v.f64.at {
		vals[at] = v.f64v[i]
	}
	for i, at := range v.f32.at {
		vals[at] = float64(v.f32v[i])
	}
	for i, at := range v.i32.at {
		vals[at] = float64(v.i32v[i])
	}
	for i, at := range v.b.at {
		on := v.bool2[i] != 0
		if three {
			on = v.bool3[i]
		}
		vals[at] = 0
		if on {
			vals[at] = 1
		}
	}
	return err
}

func toInt32(x float64) int32 {
	switch {
	case math.IsNaN(x):
		return 0
	case x >= math.MaxInt32:
		return math.MaxInt32
	case x <= math.MinInt32:
		return math.MinInt32
	}
	return int32(math.Round(x))
}

package child

//go:generate go test -run ^TestCHeader$ -args -update

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Requests from the shim, each a type byte and its payload
// (little-endian; a string is a uint32 length and its bytes):
//
//	'O' open       protocol (u32), FMI major (u32), instance name, token,
//	               resources folder (strings), logging on (u8)
//	'L' list       the value reference (u32) to list the variables from
//	'I' initialize start time (f64), stop time defined (u8), stop time
//	               (f64), n (u32) values of the parameters and inputs, each
//	               a value reference (u32) and its value: a string for a
//	               String, else f64
//	'S' step       t (f64), h (f64), n (u32) inputs (f64), in the order of
//	               the inputs' value references
//	'C' continue   the last answer said more was to come
//	'T' terminate
//	'R' reset
//
// Every answer is a result (u8: an FMI status, 0xFF "more to come": the
// shim logs the lines and sends 'C'), n (u32) log lines, each a status
// (u8), a category and a message (strings), then the payload: to open,
// the value reference of the parameter processTimeout (u32), which bounds
// the shim's waits, then as to list; to list, a part of the variables: n
// (u32) of them in all, the
// first of the part (u32) and how many it holds (u32), each its value
// reference (u32), type (u8: 0 Real, 1 Integer, 2 String), causality
// (u8: 0 output, 1 input, 2 parameter, 3 independent), name (string) and
// start (a string for a String, else f64; the shim asks for the next part
// until it has all n);
// to initialize and to a step, the FMU's time (f64) and n (u32) outputs
// (f64), in the order of their value references.
const (
	reqOpen      = 'O'
	reqList      = 'L'
	reqInit      = 'I'
	reqStep      = 'S'
	reqContinue  = 'C'
	reqTerminate = 'T'
	reqReset     = 'R'

	resultPending = 0xFF
)

// Statuses, as FMI numbers them (the logger's and the functions').
const (
	statusOK      = 0
	statusWarning = 1
	statusError   = 3
)

// reader takes values off a request, remembering the first shortfall.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) f64() float64 {
	if b := r.take(8); b != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func (r *reader) str() string {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	return string(r.take(int(n)))
}

// done says whether the request was read whole, nothing left over.
func (r *reader) done(what string) error {
	if r.bad {
		return fmt.Errorf("the %s request is cut short", what)
	}
	if len(r.b) > 0 {
		return fmt.Errorf("the %s request has %d bytes more than expected", what, len(r.b))
	}
	return nil
}

type openRequest struct {
	Protocol, Major        uint32
	Name, Token, Resources string
	Logging                bool
}

func decodeOpen(p []byte) (openRequest, error) {
	r := reader{b: p}
	o := openRequest{Protocol: r.u32(), Major: r.u32(), Name: r.str(), Token: r.str(), Resources: r.str(), Logging: r.u8() != 0}
	return o, r.done("open")
}

// value is a parameter's or an input's value as the shim sends it.
type value struct {
	VR   uint32
	Num  float64
	Text string
}

type initRequest struct {
	Start       float64
	StopDefined bool
	Stop        float64
	Values      []value
}

// decodeInit reads an initialize request; isString says which value
// references carry text (the FMU's String variables); a value reference
// that is no variable is known as such.
func decodeInit(p []byte, isString func(vr uint32) (text, ok bool)) (initRequest, error) {
	r := reader{b: p}
	q := initRequest{Start: r.f64(), StopDefined: r.u8() != 0, Stop: r.f64()}
	n := r.u32()
	if uint64(n) > uint64(len(r.b))/8+1 {
		return q, errors.New("the initialize request lists more values than it holds")
	}
	for range n {
		v := value{VR: r.u32()}
		text, ok := isString(v.VR)
		if !ok {
			return q, fmt.Errorf("the initialize request sets value reference %d, which is no parameter or input", v.VR)
		}
		if text {
			v.Text = r.str()
		} else {
			v.Num = r.f64()
		}
		q.Values = append(q.Values, v)
		if r.bad {
			break
		}
	}
	return q, r.done("initialize")
}

type stepRequest struct {
	T, H   float64
	Inputs []float64
}

// decodeStep reads a step request with nIn inputs into q, reusing its
// slice.
func decodeStep(p []byte, nIn int, q *stepRequest) error {
	r := reader{b: p}
	q.T, q.H = r.f64(), r.f64()
	if n := r.u32(); int(n) != nIn && !r.bad {
		return fmt.Errorf("the step request carries %d inputs, the FMU has %d", n, nIn)
	}
	q.Inputs = q.Inputs[:0]
	for range nIn {
		q.Inputs = append(q.Inputs, r.f64())
	}
	return r.done("step")
}

// writer appends an answer's values.
type writer struct{ b []byte }

func (w *writer) u8(v uint8)    { w.b = append(w.b, v) }
func (w *writer) u32(v uint32)  { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) f64(v float64) { w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v)) }
func (w *writer) str(s string) {
	w.u32(uint32(len(s)))
	w.b = append(w.b, s...)
}

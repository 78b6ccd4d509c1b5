// Package host runs an FMU in a child process ("beamconnect fmu-host"),
// so that a crash or a hang of its C code cannot take the coupling with
// it. The coupling and the host talk over the child's stdin and stdout in
// frames: one request outstanding at a time, each carrying the newest
// data.
//
// A frame is a type byte, the payload's length (uint32, little-endian)
// and the payload. The coupling sends:
//
//	'O' open:  the fmi.Setup as JSON (once, first)
//	'S' step:  seq (uint64, the request's sequence number: a new one
//	           for every request); t (float64); flags (uint8: 1 reset
//	           the FMU first); n
//	           (uint32) parameter changes, each a value reference
//	           (uint32), a kind (uint8, fmu.Kind), a number of elements
//	           (uint32) and that many values (float64); then one float64
//	           per input element
//	'Q' quit:  terminate and free the FMU, then exit
//
// and the host answers 'R' ready (empty, or the error that stopped it)
// to open, and 'A' to every step: a result byte (see Result), the seq of
// the request it answers (uint64), the FMU's
// time (float64), catch-up steps, resets, and a Model Exchange FMU's
// solver steps, rejected steps and events so far (uint32 each), one
// float64 per output element and per observed one (fmi.Setup.Observed),
// then the error text when the result is not OK.
// Numbers are little-endian. What the FMU logs goes to the host's stderr,
// one line per message. An answer says which request it answers, so that
// the coupling uses it for that request only, whatever came in between
// (an answer that came after its step gave up on it is dropped).
//
// Where the platform has one (Linux, Windows), steps do not go through the
// pipes: the host inherits a shared-memory mailbox (package mailbox), and a
// step request and its answer (the same payloads, without the frame's
// header) pass through it with a spin and, when the other side sleeps, a
// wake-up, at the speed of memory. Open, ready and quit stay on the pipes,
// and a host whose pipes close ends.
package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
)

// Frame types.
const (
	frameOpen   = 'O'
	frameStep   = 'S'
	frameQuit   = 'Q'
	frameReady  = 'R'
	frameAnswer = 'A'
)

// maxFrame bounds a frame: an open carries the variable lists, a step a
// few thousand numbers at most.
const maxFrame = 16 << 20

// Result says how a step went.
type Result uint8

const (
	Stepped    Result = iota // the FMU stepped; the outputs are fresh
	NotStepped               // no new time: nothing changed
	Failed                   // an FMI call did not return OK: the instance is unusable, every later step fails too
	BadOutput                // an output is NaN or infinite; the FMU may recover
	TuneFailed               // setting the changed parameters failed; the step did not happen
	Terminated               // the FMU asked to end the simulation: it is not stepped again
	Unfit                    // the FMU cannot run faithfully as configured (a model exchange FMU's state event stepped over, its fixed step unstable): starting it again would not help
)

// Step request flags.
const flagReset = 1

func writeFrame(w io.Writer, buf []byte, typ byte, payload []byte) ([]byte, error) {
	buf = append(buf[:0], typ, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(buf[1:], uint32(len(payload)))
	buf = append(buf, payload...)
	_, err := w.Write(buf)
	return buf, err
}

// readFrame reads one frame into buf (grown as needed); head is the
// caller's, so that reading allocates nothing once buf is large enough.
func readFrame(r io.Reader, head *[5]byte, buf []byte) (byte, []byte, error) {
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, buf, err
	}
	n := binary.LittleEndian.Uint32(head[1:])
	if n > maxFrame {
		return 0, buf, fmt.Errorf("frame of %d bytes: more than %d", n, maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, buf, err
	}
	return head[0], buf, nil
}

func putF64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func putU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// reader takes numbers off a payload, remembering the first shortfall.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) f64() float64 {
	if len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) u8() uint8 {
	if len(r.b) < 1 {
		r.bad = true
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// appendStep appends a step request's payload to b: tuneValue holds one
// value per element of tune's variables.
func appendStep(b []byte, seq uint64, t float64, reset bool, tune []fmi.Var, tuneValue []float64, inputs []float64) []byte {
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = putF64(b, t)
	flags := byte(0)
	if reset {
		flags |= flagReset
	}
	b = append(b, flags)
	b = putU32(b, uint32(len(tune)))
	at := 0
	for _, v := range tune {
		b = putU32(append(putU32(b, v.VR), byte(v.Kind)), uint32(v.Elems()))
		for _, x := range tuneValue[at : at+v.Elems()] {
			b = putF64(b, x)
		}
		at += v.Elems()
	}
	for _, v := range inputs {
		b = putF64(b, v)
	}
	return b
}

// Progress is what an answer counts so far: catch-up steps and resets of
// the FMU, and a Model Exchange FMU's solver steps, rejected steps and
// events.
type Progress struct {
	CatchUps, Resets, Steps, Rejected, Events uint32
}

// appendAnswer appends the payload of the answer to request seq to b.
func appendAnswer(b []byte, res Result, seq uint64, tc float64, pr Progress, outputs []float64, msg string) []byte {
	b = append(b, byte(res))
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = putF64(b, tc)
	for _, n := range [...]uint32{pr.CatchUps, pr.Resets, pr.Steps, pr.Rejected, pr.Events} {
		b = putU32(b, n)
	}
	for _, v := range outputs {
		b = putF64(b, v)
	}
	return append(b, msg...)
}

// Step is a decoded step request.
type Step struct {
	Seq       uint64 // its sequence number, which the answer carries
	T         float64
	Reset     bool
	TuneVars  []fmi.Var
	TuneValue []float64
	Inputs    []float64
}

// decodeStep reads a step request with nIn inputs into s, reusing its
// slices.
func decodeStep(p []byte, nIn int, s *Step) error {
	r := reader{b: p}
	s.Seq = r.u64()
	s.T = r.f64()
	s.Reset = r.u8()&flagReset != 0
	n := int(r.u32())
	if n > len(p)/17 { // each change takes 17 bytes at least
		return fmt.Errorf("step request of %d bytes: %d parameter changes do not fit", len(p), n)
	}
	s.TuneVars, s.TuneValue = s.TuneVars[:0], s.TuneValue[:0]
	for range n {
		v := fmi.Var{VR: r.u32(), Kind: fmu.Kind(r.u8())}
		k := int(r.u32())
		if k > len(r.b)/8 {
			return fmt.Errorf("step request of %d bytes: a parameter change of %d values does not fit", len(p), k)
		}
		if k > 1 {
			v.N = k
		}
		s.TuneVars = append(s.TuneVars, v)
		for range max(k, 1) {
			s.TuneValue = append(s.TuneValue, r.f64())
		}
	}
	s.Inputs = s.Inputs[:0]
	for range nIn {
		s.Inputs = append(s.Inputs, r.f64())
	}
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("step request of %d bytes: expected %d inputs", len(p), nIn)
	}
	return nil
}

// Answer is a decoded step answer.
type Answer struct {
	Result  Result
	Seq     uint64 // the sequence number of the request it answers
	FMUTime float64
	Progress
	Err string // for a result other than Stepped and NotStepped
}

func decodeAnswer(p []byte, out []float64, a *Answer) error {
	r := reader{b: p}
	a.Result = Result(r.u8())
	a.Seq = r.u64()
	a.FMUTime = r.f64()
	a.CatchUps, a.Resets, a.Steps, a.Rejected, a.Events = r.u32(), r.u32(), r.u32(), r.u32(), r.u32()
	for i := range out {
		out[i] = r.f64()
	}
	if r.bad {
		return fmt.Errorf("answer of %d bytes: expected %d outputs", len(p), len(out))
	}
	a.Err = ""
	if len(r.b) > 0 {
		a.Err = string(r.b)
	}
	return nil
}

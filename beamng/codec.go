package beamng

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// MaxDatagram is the largest datagram BeamNG reads whole: LuaSocket's
// receive() without a size reads at most 8192 bytes and truncates the rest.
const MaxDatagram = 8192

// Frame faults, matched with errors.Is against a *FrameError.
var (
	ErrRagged = errors.New("length is not a multiple of 8 bytes")
	ErrShort  = errors.New("datagram too short")
	ErrLong   = errors.New("datagram too long")
	ErrBuffer = errors.New("buffer too small")
)

// FrameError reports a datagram or buffer of the wrong size. Fault is one of
// ErrRagged, ErrShort, ErrLong or ErrBuffer.
type FrameError struct {
	Fault error
	Len   int // bytes there
	Want  int // bytes expected (or, for ErrBuffer, needed)
}

func (e *FrameError) Error() string {
	switch e.Fault {
	case ErrRagged:
		return fmt.Sprintf("beamng: %d-byte datagram: %v", e.Len, e.Fault)
	case ErrBuffer:
		return fmt.Sprintf("beamng: %v: %d bytes, need %d", e.Fault, e.Len, e.Want)
	}
	return fmt.Sprintf("beamng: %v: %d bytes (%d doubles), want %d bytes (%d doubles)",
		e.Fault, e.Len, e.Len/8, e.Want, e.Want/8)
}

func (e *FrameError) Unwrap() error { return e.Fault }

// Decode reads a datagram of exactly len(msg) little-endian float64 values
// into msg; msg[0] is then the message id. It allocates nothing unless the
// datagram has the wrong size, which it reports as a *FrameError and leaves
// msg untouched.
func Decode(msg []float64, datagram []byte) error {
	want := 8 * len(msg)
	if len(datagram) != want {
		return frameError(len(datagram), want)
	}
	// One bounds check up front lets the compiler drop the ones in the loop.
	_ = datagram[:want]
	for i := range msg {
		msg[i] = math.Float64frombits(binary.LittleEndian.Uint64(datagram[8*i:]))
	}
	return nil
}

func frameError(got, want int) error {
	switch {
	case got%8 != 0:
		return &FrameError{Fault: ErrRagged, Len: got, Want: want}
	case got < want:
		return &FrameError{Fault: ErrShort, Len: got, Want: want}
	default:
		return &FrameError{Fault: ErrLong, Len: got, Want: want}
	}
}

// Encode writes msg as little-endian float64 values into buf and returns the
// datagram, buf[:8*len(msg)]. It allocates nothing; a buf too small for msg,
// or a message larger than BeamNG reads whole (MaxDatagram), is an error.
func Encode(buf []byte, msg []float64) ([]byte, error) {
	n := 8 * len(msg)
	if n > MaxDatagram {
		return nil, &FrameError{Fault: ErrLong, Len: n, Want: MaxDatagram}
	}
	if len(buf) < n {
		return nil, &FrameError{Fault: ErrBuffer, Len: len(buf), Want: n}
	}
	out := buf[:n]
	for i, v := range msg {
		binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(v))
	}
	return out, nil
}

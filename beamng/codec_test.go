package beamng

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestDecodeLayout(t *testing.T) {
	// Hand-built little-endian bytes: id 7, then 1.5 and -2 (spec §1).
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b[0:], math.Float64bits(7))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(1.5))
	binary.LittleEndian.PutUint64(b[16:], math.Float64bits(-2))
	msg := make([]float64, 3)
	if err := Decode(msg, b); err != nil {
		t.Fatal(err)
	}
	if msg[0] != 7 || msg[1] != 1.5 || msg[2] != -2 {
		t.Fatalf("Decode = %v", msg)
	}
	// 1.0 is 0x3FF0000000000000: the sign and exponent sit in the last byte.
	out, err := Encode(make([]byte, 8), []float64{1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 0, 0, 0, 0xF0, 0x3F}; string(out) != string(want) {
		t.Fatalf("Encode(1) = % x, want % x", out, want)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{StateLen, ControlLen, 1} {
		msg := make([]float64, n)
		for i := range msg {
			msg[i] = float64(i)*1.25 - 3
		}
		msg[n-1] = math.NaN()
		if n > 2 {
			msg[1] = math.Inf(-1)
			msg[2] = math.SmallestNonzeroFloat64 // subnormals survive Go's codec
		}
		buf := make([]byte, MaxDatagram)
		b, err := Encode(buf, msg)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 8*n {
			t.Fatalf("Encode(%d doubles) gave %d bytes", n, len(b))
		}
		got := make([]float64, n)
		if err := Decode(got, b); err != nil {
			t.Fatal(err)
		}
		for i := range msg {
			if math.Float64bits(got[i]) != math.Float64bits(msg[i]) {
				t.Fatalf("element %d: %v != %v", i, got[i], msg[i])
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		bytes int
		fault error
		text  string
	}{
		{"empty", 0, ErrShort, "beamng: datagram too short: 0 bytes (0 doubles), want 888 bytes (111 doubles)"},
		{"control message where state expected", 512, ErrShort, "beamng: datagram too short: 512 bytes (64 doubles), want 888 bytes (111 doubles)"},
		{"one double too many", 896, ErrLong, "beamng: datagram too long: 896 bytes (112 doubles), want 888 bytes (111 doubles)"},
		{"ragged", 887, ErrRagged, "beamng: 887-byte datagram: length is not a multiple of 8 bytes"},
		{"ragged long", 9001, ErrRagged, "beamng: 9001-byte datagram: length is not a multiple of 8 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg := make([]float64, StateLen)
			msg[5] = 42
			err := Decode(msg, make([]byte, tt.bytes))
			var fe *FrameError
			if !errors.As(err, &fe) || !errors.Is(err, tt.fault) {
				t.Fatalf("Decode(%d bytes) = %v, want a FrameError %v", tt.bytes, err, tt.fault)
			}
			if err.Error() != tt.text {
				t.Errorf("text %q\nwant %q", err.Error(), tt.text)
			}
			if msg[5] != 42 {
				t.Error("a rejected datagram changed the message")
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	_, err := Encode(make([]byte, 511), make([]float64, ControlLen))
	if !errors.Is(err, ErrBuffer) || err.Error() != "beamng: buffer too small: 511 bytes, need 512" {
		t.Errorf("short buffer: %v", err)
	}
	_, err = Encode(make([]byte, 2*MaxDatagram), make([]float64, MaxDatagram/8+1))
	if !errors.Is(err, ErrLong) {
		t.Errorf("oversize message: %v", err)
	}
}

func TestCodecAllocs(t *testing.T) {
	buf := make([]byte, MaxDatagram)
	for _, n := range []int{StateLen, ControlLen} {
		msg := make([]float64, n)
		b, _ := Encode(buf, msg)
		if a := testing.AllocsPerRun(1000, func() { _, _ = Encode(buf, msg) }); a != 0 {
			t.Errorf("Encode of %d doubles: %v allocs", n, a)
		}
		if a := testing.AllocsPerRun(1000, func() { _ = Decode(msg, b) }); a != 0 {
			t.Errorf("Decode of %d doubles: %v allocs", n, a)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(make([]byte, 8*StateLen), uint8(StateLen))
	f.Add(make([]byte, 8*ControlLen), uint8(ControlLen))
	f.Add([]byte{1, 2, 3}, uint8(1))
	f.Add([]byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		msg := make([]float64, n)
		err := Decode(msg, b)
		if (err == nil) != (len(b) == 8*int(n)) {
			t.Fatalf("Decode(%d bytes into %d) = %v", len(b), n, err)
		}
		if err != nil {
			var fe *FrameError
			if !errors.As(err, &fe) || fe.Len != len(b) || fe.Want != 8*int(n) {
				t.Fatalf("Decode error %#v", err)
			}
			return
		}
		// Whatever the bytes, encoding what was decoded gives them back.
		out, err := Encode(make([]byte, len(b)), msg)
		if err != nil || len(b) > 0 && string(out) != string(b) {
			t.Fatalf("round trip changed the bytes: %v", err)
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	for _, bm := range []struct {
		name string
		n    int
	}{{"state111", StateLen}, {"control64", ControlLen}} {
		b.Run(bm.name, func(b *testing.B) {
			msg := make([]float64, bm.n)
			for i := range msg {
				msg[i] = float64(i)
			}
			buf := make([]byte, MaxDatagram)
			b.SetBytes(int64(8 * bm.n))
			b.ReportAllocs()
			for b.Loop() {
				d, _ := Encode(buf, msg)
				_ = Decode(msg, d)
			}
		})
	}
}

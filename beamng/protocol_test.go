package beamng

import (
	"math"
	"slices"
	"testing"
)

func TestProtocolFits(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    *Protocol
		n    int
		want bool
	}{
		{"gen1 whole", Gen1, 8 * StateLen, true},
		{"gen1 short", Gen1, 8*StateLen - 8, false}, // Gen 1's message is always whole
		{"gen1 long", Gen1, 8*StateLen + 8, false},
		{"gen2 id only", Gen2, 8, true}, // a Gen 2 message may be cut short by a row BeamNG cannot resolve
		{"gen2 40 doubles", Gen2, 8 * 40, true},
		{"gen2 not whole doubles", Gen2, 8*40 + 3, false},
		{"gen2 empty", Gen2, 0, false},
		{"gen2 over largest datagram", Gen2, MaxDatagram + 8, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Fits(tt.n, StateLen); got != tt.want {
				t.Errorf("%s.Fits(%d, %d) = %v, want %v", tt.p, tt.n, StateLen, got, tt.want)
			}
		})
	}
}

func TestProtocolDecodeShortAndLong(t *testing.T) {
	msg := make([]float64, 4)
	b, _ := Encode(make([]byte, 16), []float64{7, 1.5})
	if n := Gen2.Decode(msg, b); n != 2 || msg[0] != 7 || msg[1] != 1.5 || !math.IsNaN(msg[2]) || !math.IsNaN(msg[3]) {
		t.Errorf("short message: present %d, decoded %v; want 2 present and NaN past the end", n, msg)
	}
	b, _ = Encode(make([]byte, 48), []float64{8, 1, 2, 3, 4, 5})
	if n := Gen2.Decode(msg, b); n != 6 || !slices.Equal(msg, []float64{8, 1, 2, 3}) {
		t.Errorf("long message: present %d, decoded %v; want 6 present and the first 4 kept", n, msg)
	}
}

func TestProtocolReplies(t *testing.T) {
	l := NewLayout("t.csv", nil, []Signal{
		{Group: "Driver", Name: "throttle", Kind: "value", Meaning: "throttle"},
		{Group: "Driver", Name: "throttle", Kind: "multiply", Meaning: "throttle"},
		{Group: "Driver", Name: "steeringWheelPosition", Kind: "value", Meaning: "steering"},
		{Group: "Driver", Name: "steeringWheelPosition", Kind: "freeze", Meaning: "steering"},
	})
	n := Gen2.Neutral(l)
	if n[1] != 0 || n[2] != 1 || !math.IsNaN(n[3]) || n[4] != 0 {
		t.Errorf("Gen 2 neutral = %v: want throttle 0, multiply 1, steering kept (NaN), freeze 0", n)
	}
	if Gen2.Unset(l.Signals(ToBeamNG)[2]) != 1 || Gen2.Unset(l.Signals(ToBeamNG)[3]) != 0 || !math.IsNaN(Gen1.Unset(Signal{})) {
		t.Error("unset slots: want multiply 1, value 0 on Gen 2 and NaN (keep) on Gen 1")
	}

	last := []float64{0, 0.3, 1, -0.2, 0}
	reply := slices.Clone(n)
	reply[0] = 9
	Gen2.Safe(reply, last)
	if !slices.Equal(reply, []float64{9, 0, 1, -0.2, 0}) || !slices.Equal(last, reply) {
		t.Errorf("Gen 2 safe reply = %v (last %v): want the kept steering resolved to the last value sent", reply, last)
	}
	g1 := []float64{3, math.NaN(), 0.5}
	Gen1.Safe(g1, make([]float64, 3))
	if !math.IsNaN(g1[1]) {
		t.Error("Gen 1 keeps NaN in a reply: BeamNG skips it")
	}
	if Gen2.Sendable(math.Inf(1)) || Gen2.Sendable(math.NaN()) || !Gen2.Sendable(0.4) || !Gen1.Sendable(math.NaN()) {
		t.Error("Sendable: Gen 2 takes only finite values, Gen 1 any")
	}
}

func TestProtocolNamed(t *testing.T) {
	for _, p := range Protocols {
		if q, ok := ProtocolNamed(p.String()); !ok || q != p {
			t.Errorf("ProtocolNamed(%q) = %v, %v", p, q, ok)
		}
	}
	if _, ok := ProtocolNamed("gen3"); ok {
		t.Error("an unknown protocol name was accepted")
	}
}

package beamng

import (
	"encoding/binary"
	"math"
	"slices"
)

// Protocol is one generation of BeamNG's tight coupling: what differs on
// the wire between them. Both frame a message the same way (little-endian
// doubles, the id first) and run the same per-step window; they differ in
// how long a message may be and in what a reply may carry. A runtime or an
// emulator asks the protocol instead of branching on the generation, so a
// third generation would be one more value here.
type Protocol struct {
	name       string // as a config names it
	gen        int
	controller string // BeamNG's Lua controller that speaks it
	// ragged: BeamNG may send messages of another length than the layout
	// says (Gen 2: a CSV row it cannot resolve shortens or pads them).
	ragged bool
	// skipsNaN: BeamNG's controller applies a reply slot only when it is a
	// number, so NaN means "keep the previous value" (Gen 1). Without it
	// (Gen 2) one NaN poisons every control for good, so a reply must never
	// carry one.
	skipsNaN bool
}

var (
	// Gen1 is vehicleSystemsCoupling's fixed layout: 111 doubles from
	// BeamNG, 64 to it, NaN in a reply keeps the previous value.
	Gen1 = &Protocol{name: "fixed", gen: 1, controller: "vehicleSystemsCoupling", skipsNaN: true}
	// Gen2 is cosimulationCoupling's CSV-defined layout: no NaN filter, and
	// messages that may be shorter or longer than the CSV says.
	Gen2 = &Protocol{name: "csv", gen: 2, controller: "cosimulationCoupling", ragged: true}
)

// Protocols lists every protocol, oldest first.
var Protocols = []*Protocol{Gen1, Gen2}

// ProtocolNamed returns the protocol a config names ("fixed" or "csv").
func ProtocolNamed(name string) (*Protocol, bool) {
	for _, p := range Protocols {
		if p.name == name {
			return p, true
		}
	}
	return nil, false
}

// String is the protocol's name in a config: "fixed" or "csv".
func (p *Protocol) String() string { return p.name }

// Generation is 1 or 2.
func (p *Protocol) Generation() int { return p.gen }

// Controller is the BeamNG Lua controller that speaks the protocol.
func (p *Protocol) Controller() string { return p.controller }

// MarshalText writes the protocol's config name (for JSON output).
func (p *Protocol) MarshalText() ([]byte, error) { return []byte(p.name), nil }

// Fits reports whether a datagram of n bytes can be a message of a layout
// whose messages are want doubles long: exactly that long, or, where BeamNG
// may send ragged messages, any whole number of doubles up to what BeamNG
// reads whole.
func (p *Protocol) Fits(n, want int) bool {
	if p.ragged {
		return n >= 8 && n%8 == 0 && n <= MaxDatagram
	}
	return n == 8*want
}

// Decode reads a datagram that Fits into msg and returns how many doubles
// the datagram holds. Slots past its end are NaN (they carry nothing);
// values past the end of msg are ignored. It allocates nothing.
func (p *Protocol) Decode(msg []float64, datagram []byte) (present int) {
	present = len(datagram) / 8
	n := min(present, len(msg))
	b := datagram[:8*n]
	for i := range n {
		msg[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	for i := n; i < len(msg); i++ {
		msg[i] = math.NaN()
	}
	return present
}

// Unset is what a reply carries in a slot that no field writes: NaN where
// BeamNG skips it (keeping its previous value), else the value that leaves
// the signal as it would be without the slot (a multiply row 1, every other
// row 0).
func (p *Protocol) Unset(s Signal) float64 {
	if p.skipsNaN {
		return math.NaN()
	}
	v, _ := modifierIdentity(s.Kind)
	return v
}

// modifierIdentity is the value of a modifier row (multiply, add, freeze)
// that leaves its signal as it would be without the row: 1 to multiply by,
// 0 to add, 0 not to freeze. ok is false for value rows (and Gen 1's
// slots), which have no such value (0 there is a control like any other).
func modifierIdentity(kind string) (v float64, ok bool) {
	switch kind {
	case "multiply":
		return 1, true
	case "add", "freeze":
		return 0, true
	}
	return 0, false
}

// neutralZero are the controls a neutral reply releases: pedals, wheel
// torques, and the drive mode back to pedals.
var neutralZero = func() []string {
	z := []string{"throttle", "brake", "driveMode"}
	for _, w := range Wheels {
		z = append(z, "wheel"+w+"_brakingTorque", "wheel"+w+"_propulsionTorque")
	}
	return z
}()

// Neutral is the reply sent instead of a model's controls when they cannot
// be trusted (a model fault, a message that is not whole) and when the
// coupling lets go: pedals released, wheel torques 0, drive mode back to
// pedals; a multiply row 1 and add and freeze rows 0, so a scaled or frozen
// pedal is released too. Every other slot (steering, gear, custom) is NaN,
// "keep": Safe resolves it where BeamNG has no NaN filter. Slot 0, the id,
// is the caller's.
func (p *Protocol) Neutral(l *Layout) []float64 {
	r := make([]float64, l.Len(ToBeamNG))
	for i, s := range l.Signals(ToBeamNG) {
		identity, modifier := modifierIdentity(s.Kind)
		switch {
		case i == 0:
		case modifier:
			r[i] = identity
		case slices.Contains(neutralZero, s.Name) || s.Meaning != "" && slices.Contains(neutralZero, s.Meaning):
			r[i] = 0
		default:
			r[i] = math.NaN()
		}
	}
	return r
}

// Sendable reports whether a model's value can go to BeamNG as it is: any
// value where BeamNG skips NaN (a NaN there means "keep"), only a finite
// one where it has no NaN filter.
func (p *Protocol) Sendable(v float64) bool { return p.skipsNaN || v-v == 0 }

// Safe makes a reply safe to send and remembers it in last (as long as
// reply): where a slot is not Sendable, NaN ("keep") or ±Inf, it carries
// what last holds there, the value BeamNG already has. It allocates
// nothing.
func (p *Protocol) Safe(reply, last []float64) {
	p.Resolve(reply, last)
	copy(last, reply)
}

// Resolve is Safe without remembering: for a reply that may not go out,
// whose values become BeamNG's only once it is sent.
func (p *Protocol) Resolve(reply, last []float64) {
	if !p.skipsNaN {
		for i := 1; i < len(reply); i++ {
			if v := reply[i]; v-v != 0 {
				reply[i] = last[i]
			}
		}
	}
}

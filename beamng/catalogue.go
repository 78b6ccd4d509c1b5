package beamng

import (
	"fmt"
	"strconv"
	"strings"

	"beamconnect/internal/suggest"
)

// Direction says which way a Gen 1 message travels.
type Direction uint8

const (
	// FromBeamNG is the state message BeamNG sends every send step: 111 doubles.
	// VS Connect calls the client's side of it "outputs" (incoming contracts).
	FromBeamNG Direction = iota
	// ToBeamNG is the control message the client replies with: 64 doubles.
	// VS Connect calls the client's side of it "inputs" (outgoing contracts).
	ToBeamNG
)

func (d Direction) String() string {
	switch d {
	case FromBeamNG:
		return "from BeamNG"
	case ToBeamNG:
		return "to BeamNG"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// Other is the opposite direction.
func (d Direction) Other() Direction { return 1 - d }

// Message lengths of the Gen 1 (vehicleSystemsCoupling) layout, in doubles,
// the message id at element 0 included.
const (
	StateLen   = 111 // BeamNG → client
	ControlLen = 64  // client → BeamNG
)

// Len is the Gen 1 message length in doubles for messages travelling in d.
func (d Direction) Len() int {
	if d == FromBeamNG {
		return StateLen
	}
	return ControlLen
}

// Signal is one slot of a Gen 1 message.
type Signal struct {
	Dir   Direction
	Index int    // element of the message; 0 is the message id
	Ref   string // bank reference such as "B7"; "" for the message id
	Bank  string // bank letter, "" for the message id
	Name  string // canonical propertyName
	Unit  string // SI unit, "" when dimensionless
	Desc  string // range or meaning, as BeamNG's controller defines it

	// Gen 2 (CSV-defined) signals only.
	Group   string // the CSV's Subsection: Kinematics, Driver, Wheels, Electrics, a sensor…
	Kind    string // a From row's kind: value, multiply, add or freeze
	Meaning string // the Gen 1 name of the same quantity, "" when none: what models bind to
	Line    int    // the row's line in the CSV
}

// Match says how a name was found in the catalogue.
type Match uint8

const (
	NoMatch   Match = iota
	Exact           // the canonical name, spelled exactly
	Folded          // the canonical name in another letter case: accepted, but warn
	Reference       // a bank reference such as "B7" or "H12"
)

// bank is one row of the bank tables: a letter, its first element and its size.
type bank struct {
	letter string
	first  int
	size   int
	title  string
}

var banks = [2][]bank{
	FromBeamNG: {
		{"A", 1, 10, "core driver controls"},
		{"B", 11, 14, "vehicle kinematics"},
		{"C", 25, 12, "secondary vehicle properties"},
		{"D", 37, 6, "wheel FL (front left)"},
		{"E", 43, 6, "wheel FR (front right)"},
		{"F", 49, 6, "wheel RL (rear left)"},
		{"G", 55, 6, "wheel RR (rear right)"},
		{"H", 61, 50, "custom user values"},
	},
	ToBeamNG: {
		{"A", 1, 13, "core vehicle inputs"},
		{"B", 14, 50, "custom user values"},
	},
}

// Wheels in the order BeamNG's controller walks them (wheelsOrder in
// vehicleSystemsCoupling.lua); banks D–G and the torque slots follow it.
var Wheels = [4]string{"FL", "FR", "RL", "RR"}

var catalogue = [2][]Signal{
	FromBeamNG: buildState(),
	ToBeamNG:   buildControl(),
}

type entry struct{ name, unit, desc string }

func buildState() []Signal {
	e := []entry{
		{"throttle", "", "[0,1] throttle after BeamNG's filters"},
		{"throttle_input", "", "[0,1] throttle as requested"},
		{"brake", "", "[0,1]"},
		{"brake_input", "", "[0,1]"},
		{"clutch", "", "[0,1]"},
		{"clutch_input", "", "[0,1]"},
		{"parkingbrake", "", "[0,1]"},
		{"parkingbrake_input", "", "[0,1]"},
		{"steering", "", "[-1,1]"},
		{"steering_input", "", "[-1,1]"},

		{"posX", "m", "position, world X"},
		{"posY", "m", "position, world Y"},
		{"posZ", "m", "position, world Z"},
		{"velX", "m/s", "velocity, world X"},
		{"velY", "m/s", "velocity, world Y"},
		{"velZ", "m/s", "velocity, world Z"},
		{"groundspeed", "m/s", "speed over ground"},
		{"accX", "m/s²", "acceleration sensor X"},
		{"accY", "m/s²", "acceleration sensor Y"},
		{"accZ", "m/s²", "acceleration sensor Z (non-inertial)"},
		{"roll", "rad", "roll angle"},
		{"pitch", "rad", "pitch angle"},
		{"yaw", "rad", "yaw angle"},
		{"altitude", "m", "altitude"},

		{"ignitionLevel", "", "0, 1, 2 or 3"},
		{"gear", "", "gear index (-1 reverse, 0 neutral, 1+ forward)"},
		{"fuel", "", "[0,1] tank level"},
		{"engineLoad", "", "[0,1]"},
		{"highbeam", "", "0 or 1"},
		{"lowbeam", "", "0 or 1"},
		{"maxrpm", "1/min", "engine speed limit"},
		{"reverse", "", "0 or 1"},
		{"rpm", "1/min", "engine speed"},
		{"signal_L", "", "0 or 1, left indicator"},
		{"signal_R", "", "0 or 1, right indicator"},
		{"wheelspeed", "m/s", "vehicle speed from the wheels"},
	}
	for _, w := range Wheels {
		e = append(e,
			entry{"wheel" + w + "_angularVelocity", "rad/s", w + " wheel angular velocity"},
			entry{"wheel" + w + "_wheelSpeed", "m/s", w + " wheel circumferential speed"},
			entry{"wheel" + w + "_brakingTorque", "N·m", w + " braking torque applied"},
			entry{"wheel" + w + "_propulsionTorque", "N·m", w + " propulsion torque"},
			entry{"wheel" + w + "_frictionTorque", "N·m", w + " friction torque"},
			entry{"wheel" + w + "_downForce", "N", w + " wheel load"},
		)
	}
	for i := 1; i <= 50; i++ {
		e = append(e, entry{"custom" + strconv.Itoa(i), "", "custom user value (0.0 unless BeamNG's controller is changed to fill it)"})
	}
	return build(FromBeamNG, e)
}

func buildControl() []Signal {
	e := []entry{
		{"throttle", "", "[0,1] engine throttle (pedal mode)"},
		{"brake", "", "[0,1] brake pedal (pedal mode)"},
		{"steering", "", "[-1,1] steering"},
		{"gear", "", "reserved: BeamNG reads this slot and ignores it"},
	}
	for _, w := range Wheels {
		e = append(e, entry{"wheel" + w + "_brakingTorque", "N·m", w + " braking torque (torque mode; applied as a negative desired braking torque)"})
	}
	for _, w := range Wheels {
		e = append(e, entry{"wheel" + w + "_propulsionTorque", "N·m", w + " propulsion torque (torque mode)"})
	}
	e = append(e, entry{"driveMode", "", "< 0.5 pedals, ≥ 0.5 wheel torques; starts in pedal mode"})
	for i := 1; i <= 50; i++ {
		e = append(e, entry{"custom" + strconv.Itoa(i), "", "custom user value (BeamNG reads it and does nothing with it)"})
	}
	return build(ToBeamNG, e)
}

// build lays entries into the banks of d in order, after the message id.
func build(d Direction, entries []entry) []Signal {
	if len(entries) != d.Len()-1 {
		panic(fmt.Sprintf("beamng: %v catalogue has %d entries, want %d", d, len(entries), d.Len()-1))
	}
	sigs := make([]Signal, 0, d.Len())
	sigs = append(sigs, Signal{Dir: d, Index: 0, Name: "id", Desc: "message id: BeamNG counts from 0; a reply is applied only when its id exceeds every id applied before"})
	for _, b := range banks[d] {
		for k := 0; k < b.size; k++ {
			en := entries[b.first-1+k]
			sigs = append(sigs, Signal{
				Dir: d, Index: b.first + k,
				Ref: b.letter + strconv.Itoa(k+1), Bank: b.letter,
				Name: en.name, Unit: en.unit, Desc: en.desc,
			})
		}
	}
	return sigs
}

// Signals lists every slot of the messages travelling in d, the id first.
// The slice is shared: do not modify it.
func Signals(d Direction) []Signal { return catalogue[d] }

// At returns the signal at element i of a message travelling in d.
func At(d Direction, i int) (Signal, bool) {
	if i < 0 || i >= len(catalogue[d]) {
		return Signal{}, false
	}
	return catalogue[d][i], true
}

// Lookup finds a propertyName in d: the canonical name spelled exactly first,
// then a bank reference ("B7"), then the name or reference in another letter
// case ("RPM", "b7").
func Lookup(d Direction, name string) (Signal, Match) {
	for _, s := range catalogue[d] {
		if s.Name == name {
			return s, Exact
		}
	}
	if s, ok := lookupRef(d, name); ok {
		return s, Reference
	}
	for _, s := range catalogue[d] {
		if strings.EqualFold(s.Name, name) {
			return s, Folded
		}
	}
	if s, ok := lookupRef(d, strings.ToUpper(name)); ok {
		return s, Folded
	}
	return Signal{}, NoMatch
}

// lookupRef resolves a bank reference such as "D3" (upper-case letter, then
// the 1-based position in that bank, no leading zero).
func lookupRef(d Direction, ref string) (Signal, bool) {
	if len(ref) < 2 || ref[1] == '0' {
		return Signal{}, false
	}
	n, err := strconv.Atoi(ref[1:])
	if err != nil {
		return Signal{}, false
	}
	for _, b := range banks[d] {
		if b.letter == ref[:1] && n >= 1 && n <= b.size {
			return catalogue[d][b.first+n-1], true
		}
	}
	return Signal{}, false
}

// BankEnd is the last element of the bank that holds element i in d, so a
// field of width w starting at i fits its bank when i+w-1 <= BankEnd.
func BankEnd(d Direction, i int) int {
	for _, b := range banks[d] {
		if i >= b.first && i < b.first+b.size {
			return b.first + b.size - 1
		}
	}
	return i // the message id is a bank of one
}

// BankInfo describes one bank of a message.
type BankInfo struct {
	Letter string
	First  int // first element
	Size   int
	Title  string
}

// Banks lists the banks of the messages travelling in d.
func Banks(d Direction) []BankInfo {
	out := make([]BankInfo, len(banks[d]))
	for i, b := range banks[d] {
		out[i] = BankInfo{Letter: b.letter, First: b.first, Size: b.size, Title: b.title}
	}
	return out
}

// Suggest returns the catalogue name in d closest to name, or "" when none is
// close enough to be a plausible typo.
func Suggest(d Direction, name string) string {
	names := make([]string, len(catalogue[d]))
	for i, s := range catalogue[d] {
		names[i] = s.Name
	}
	return suggest.Closest(name, names)
}

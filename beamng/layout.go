package beamng

import (
	"math"
	"slices"
)

// Layout is the message layout of one coupling: which signal each element
// of the messages in either direction carries. Gen 1 has one fixed layout
// (Fixed); a Gen 2 layout comes from the CSV both sides read.
type Layout struct {
	Protocol *Protocol
	Source   string // the CSV file of a Gen 2 layout
	sig      [2][]Signal
}

// Fixed is Gen 1's layout: 111 doubles from BeamNG, 64 to it.
var Fixed = &Layout{Protocol: Gen1, sig: catalogue}

// NewLayout builds a Gen 2 layout from the signal rows in file order; the
// message id is prepended to both and every signal's Dir and Index are set.
func NewLayout(source string, from, to []Signal) *Layout {
	l := &Layout{Protocol: Gen2, Source: source}
	for d, rows := range [2][]Signal{FromBeamNG: from, ToBeamNG: to} {
		dir := Direction(d)
		sigs := make([]Signal, 0, len(rows)+1)
		sigs = append(sigs, Signal{Dir: dir, Name: "id", Desc: "message id"})
		for i, s := range rows {
			s.Dir, s.Index = dir, i+1
			sigs = append(sigs, s)
		}
		l.sig[d] = sigs
	}
	return l
}

// Len is the length in doubles of the messages travelling in d, the id
// included.
func (l *Layout) Len(d Direction) int { return len(l.sig[d]) }

// Signals lists every element of the messages travelling in d, the id
// first. The slice is shared: do not modify it.
func (l *Layout) Signals(d Direction) []Signal { return l.sig[d] }

// At returns the signal at element i of a message travelling in d.
func (l *Layout) At(d Direction, i int) (Signal, bool) {
	if i < 0 || i >= len(l.sig[d]) {
		return Signal{}, false
	}
	return l.sig[d][i], true
}

// Find returns the first element that carries a quantity, named by its
// Gen 1 name or, in a Gen 2 layout, by its own name (only value rows count
// for data to BeamNG: a multiply row is not the throttle).
func (l *Layout) Find(d Direction, name string) (Signal, bool) {
	for _, s := range l.sig[d][1:] {
		if (s.Name == name || s.Meaning == name) && (s.Kind == "" || s.Kind == "value") {
			return s, true
		}
	}
	return Signal{}, false
}

// Equal reports whether two layouts put the same signals in the same
// places, so that one coupling can go on from one to the other.
func (l *Layout) Equal(o *Layout) bool {
	if l == o {
		return true
	}
	if l == nil || o == nil || l.Protocol != o.Protocol {
		return false
	}
	same := func(a, b Signal) bool {
		return a.Group == b.Group && a.Name == b.Name && a.Kind == b.Kind
	}
	return slices.EqualFunc(l.sig[0], o.sig[0], same) && slices.EqualFunc(l.sig[1], o.sig[1], same)
}

// Range is the range BeamNG documents for a control it applies with
// input.event: the pedals (throttle, brake, clutch, parking brake) 0 to 1,
// the steering −1 to 1. ok is false for anything else (wheel torques, the
// drive mode, custom slots, data from BeamNG) and for a Gen 2 modifier row
// (multiply, add, freeze), whose value is not the control itself.
func (s Signal) Range() (lo, hi float64, ok bool) {
	if s.Dir != ToBeamNG || s.Kind != "" && s.Kind != "value" {
		return 0, 0, false
	}
	name := s.Name
	if s.Meaning != "" {
		name = s.Meaning
	}
	switch name {
	case "throttle", "brake", "clutch", "parkingbrake":
		return 0, 1, true
	case "steering":
		return -1, 1, true
	}
	return 0, 0, false
}

// Values is the range BeamNG documents for a signal it sends, and whether
// its values are whole numbers (a gear, a light's 0 or 1); ok is false
// where it documents none (positions, accelerations, custom slots) and
// for a Gen 2 row that is not the value itself. A bound whose end is open
// is ±Inf (an engine's speed is 0 or more).
func (s Signal) Values() (lo, hi float64, whole, ok bool) {
	if s.Dir != FromBeamNG || s.Kind != "" && s.Kind != "value" {
		return 0, 0, false, false
	}
	name := s.Name
	if s.Meaning != "" {
		name = s.Meaning
	}
	inf := math.Inf(1)
	switch name {
	case "throttle", "throttle_input", "brake", "brake_input", "clutch", "clutch_input",
		"parkingbrake", "parkingbrake_input", "fuel", "engineLoad":
		return 0, 1, false, true
	case "steering", "steering_input":
		return -1, 1, false, true
	case "highbeam", "lowbeam", "reverse", "signal_L", "signal_R":
		return 0, 1, true, true
	case "ignitionLevel":
		return 0, 3, true, true
	case "gear":
		return -1, inf, true, true
	case "groundspeed", "rpm", "maxrpm":
		return 0, inf, false, true
	}
	return 0, 0, false, false
}

// Limits are the lowest and highest value BeamNG takes in each element of
// a reply (Range), −Inf and +Inf where it documents none.
func (l *Layout) Limits() (lo, hi []float64) {
	sig := l.sig[ToBeamNG]
	lo, hi = make([]float64, len(sig)), make([]float64, len(sig))
	for i, s := range sig {
		lo[i], hi[i] = math.Inf(-1), math.Inf(1)
		if a, b, ok := s.Range(); ok {
			lo[i], hi[i] = a, b
		}
	}
	return lo, hi
}

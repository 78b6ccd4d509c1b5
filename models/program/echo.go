package program

import (
	"bytes"
	"math"
	"strconv"
)

// How an answer names its request. A request's first field is its time
// t; an answer may echo it as its first token, "@t". t is written in
// strconv's shortest form ('g', -1), which parses back to the same
// float64. The time is not always unique: idle requests while BeamNG is
// silent repeat it, a model several vehicles share is asked once per
// vehicle at the same simulation step, and BeamNG starting its coupling
// again starts it over. So a time that one of the timeWindow requests
// before it had is written another way, the same number: its exponent
// padded with zeros ("12.5e0", "12.5e00"; "1e-05" as "1e-005"). Written
// as the request wrote it, an echo names one request of any timeWindow+1
// in a row.
//
// An echo is the awaited request's when it is that request's first field
// character for character; or, when no request in the window had the same
// time, when it is the same number written any way (a program that
// prints the time it parsed: 12.0 for 12).

// timeWindow is how many requests before it a request's time is told
// apart from.
const timeWindow = 8

// timeRing keeps the times of the latest requests and how each was
// written.
type timeRing struct {
	bits [timeWindow]uint64
	pad  [timeWindow]int8
	n    int // entries in use
	next int // the entry the next request takes
}

// place takes the next request's time t: pad says how it is written (see
// appendTime), unique that no request in the window had the same time.
func (r *timeRing) place(t float64) (pad int8, unique bool) {
	b := math.Float64bits(t)
	var used uint16
	for i := range r.n {
		if r.bits[i] == b {
			used |= 1 << r.pad[i]
		}
	}
	for used&(1<<pad) != 0 {
		pad++
	}
	r.bits[r.next], r.pad[r.next] = b, pad
	r.next = (r.next + 1) % timeWindow
	r.n = min(r.n+1, timeWindow)
	return pad, used == 0
}

// appendTime writes a request's time t: strconv's shortest form, its
// exponent padded with pad zeros ("e" and the zeros appended where it has
// none). Every way parses back to t.
func appendTime(b []byte, t float64, pad int8) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, t, 'g', -1, 64)
	if pad == 0 {
		return b
	}
	e := bytes.IndexByte(b[start:], 'e')
	if e < 0 {
		b = append(b, 'e')
		for range pad {
			b = append(b, '0')
		}
		return b
	}
	at := start + e + 2 // after the exponent's sign: 'g' always writes one
	n := int(pad)
	for range n {
		b = append(b, '0')
	}
	copy(b[at+n:], b[at:len(b)-n])
	for i := range n {
		b[at+i] = '0'
	}
	return b
}

// echoes reports whether tok, an answer's echo without its '@', names the
// request whose time t was written with pad (unique: no request in the
// window had that time). scratch is a buffer to write the time in; it is
// returned for the next call.
func echoes(tok, scratch []byte, t float64, pad int8, unique bool) (bool, []byte) {
	scratch = appendTime(scratch[:0], t, pad)
	if bytes.Equal(tok, scratch) {
		return true, scratch
	}
	if !unique {
		return false, scratch
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	return err == nil && v == t, scratch
}

// cutEcho splits an answer line that starts with '@' into its echo (the
// token after '@') and the rest.
func cutEcho(line []byte) (tok, rest []byte) {
	line = line[1:]
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		return line[:i], line[i+1:]
	}
	return line, nil
}

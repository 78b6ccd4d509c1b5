// Package beamngtest has the client side of a Gen 1 coupling in its
// simplest form, for tests: build the reply to a state message, or answer
// every message on a socket.
package beamngtest

import (
	"math"
	"net"
	"net/netip"
	"time"

	"beamconnect/beamng"
)

// Replier builds replies to BeamNG's state messages without allocating.
type Replier struct {
	Msg   []float64 // the last state message decoded
	reply []float64
	out   []byte
}

func NewReplier() *Replier { return NewReplierFor(beamng.Fixed) }

// NewReplierFor builds replies for a layout, a Gen 2 CSV's say.
func NewReplierFor(l *beamng.Layout) *Replier {
	return &Replier{
		Msg:   make([]float64, l.Len(beamng.FromBeamNG)),
		reply: make([]float64, l.Len(beamng.ToBeamNG)),
		out:   make([]byte, 8*l.Len(beamng.ToBeamNG)),
	}
}

// Reply decodes a state message and returns the reply datagram: id(received
// id) at element 0, NaN everywhere else but what set writes. It reports false
// for a datagram that is not a state message. The datagram is valid until
// the next call.
func (r *Replier) Reply(datagram []byte, id func(received float64) float64, set func(reply []float64)) ([]byte, bool) {
	if beamng.Decode(r.Msg, datagram) != nil {
		return nil, false
	}
	for i := range r.reply {
		r.reply[i] = math.NaN()
	}
	r.reply[0] = id(r.Msg[0])
	if set != nil {
		set(r.reply)
	}
	b, _ := beamng.Encode(r.out, r.reply)
	return b, true
}

// Next is the reply-id policy that keeps BeamNG in lockstep: received + 1.
func Next(id float64) float64 { return id + 1 }

// ServeUDP answers every state message arriving on c with an id+1 reply to
// beamngAddr (BeamNG's bound receive address, not the message's source
// port), until c is closed.
func ServeUDP(c *net.UDPConn, beamngAddr netip.AddrPort, set func(reply []float64)) {
	r := NewReplier()
	buf := make([]byte, beamng.MaxDatagram)
	for {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if b, ok := r.Reply(buf[:n], Next, set); ok {
			c.WriteToUDPAddrPort(b, beamngAddr)
		}
	}
}

// Link is one end of an in-memory datagram link, such as the emulator's
// PipeEnd.
type Link interface {
	Send(b []byte) error
	Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool)
}

// Each calls each with every datagram arriving on link until stop is
// closed. The datagram is valid until each returns.
func Each(link Link, stop <-chan struct{}, each func(datagram []byte)) {
	buf := make([]byte, beamng.MaxDatagram)
	for {
		n, ok := link.Recv(buf, 10*time.Millisecond, nil)
		if ok {
			each(buf[:n])
			continue
		}
		select {
		case <-stop:
			return
		default:
		}
	}
}

// ServeLink answers every state message on link with a reply whose id is
// id(received), after compute time, until stop is closed. On a fake clock
// (testing/synctest) compute costs no wall time.
func ServeLink(link Link, stop <-chan struct{}, compute time.Duration, id func(float64) float64) {
	r := NewReplier()
	Each(link, stop, func(d []byte) {
		time.Sleep(compute)
		if b, ok := r.Reply(d, id, nil); ok {
			link.Send(b)
		}
	})
}

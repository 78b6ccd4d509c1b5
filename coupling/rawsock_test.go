package coupling

import (
	"net"
	"runtime"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/internal/scope"
	"beamconnect/models"
	"beamconnect/models/kinds"
)

// Over real sockets, both ways of reading them couple the cruise rig: its
// speed held in lockstep, 0 stalls, the socket read as asked.
func TestUDPCruise(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets on the real clock: timing a race detector would distort")
	}
	for _, busy := range []bool{false, true} {
		if busy && runtime.GOOS != "linux" {
			continue
		}
		cfg := load(t, "../examples/cruise-pedals.json")
		cfg.BusyPoll = busy
		h := rig{cfg: cfg, em: emulator.Config{Steps: 60000}}.udp(t)
		_, spins := h.c.sock.t.(*spinSocket)
		if spins != (busy || testBusyPoll) {
			t.Fatalf("busy polling asked %v, the socket is a %T", busy, h.c.sock.t)
		}
		h.run(t)
		holdsSpeed(t, h)
	}
}

// A whole message in both modes (on Linux both read the socket out of the
// netpoller: blocking recvmsg, or non-blocking in a loop), read from the
// socket, handled and answered on it, allocates nothing.
func TestReceiveAllocs(t *testing.T) {
	for _, busy := range []bool{false, true} {
		if busy && runtime.GOOS != "linux" {
			break // busy polling needs Linux: elsewhere the same socket again
		}
		plan, _ := config.Compile(load(t, "../examples/cruise-pedals.json"))
		m, _ := kinds.New(plan.Model, plan.ModelParams, plan, nil)
		// With a live scope attached: its sample is on the same path, the
		// model's own variables (cruise-pedals' signals) included.
		cols := ScopeColumns(plan, m.(models.Sampler).Variables())
		ring := scope.New(cols, 1000, 1)
		s, err := New(Options{Plan: plan, Model: m, Local: loopback, BusyPoll: busy, Scope: ring})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(); err != nil {
			t.Fatal(err)
		}
		c := s.Link(0)
		if _, ok := c.sock.t.(*netSocket); ok && runtime.GOOS == "linux" {
			t.Fatalf("busy %v: the socket is still in the netpoller", busy)
		}
		beamngSide, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(loopback))
		if err != nil {
			t.Fatal(err)
		}
		c.SetRemote(beamngSide.LocalAddr().(*net.UDPAddr).AddrPort())
		c.sim.Anchor(0, time.Now())
		msg := make([]float64, beamng.StateLen)
		buf := make([]byte, 8*beamng.StateLen)
		reply := make([]byte, beamng.MaxDatagram)
		to := c.LocalAddr()
		id := 0.0
		step := func() {
			msg[0], msg[17] = id, 15
			id++
			d, _ := beamng.Encode(buf, msg)
			beamngSide.WriteToUDPAddrPort(d, to)
			c.receive()
			beamngSide.SetReadDeadline(time.Now().Add(time.Second))
			if _, _, err := beamngSide.ReadFromUDPAddrPort(reply); err != nil {
				t.Fatalf("busy %v: no reply: %v", busy, err)
			}
		}
		for range 20 {
			step() // connect, latch BeamNG's address
		}
		if a := testing.AllocsPerRun(500, step); a != 0 {
			t.Errorf("busy poll %v: %v allocations per message", busy, a)
		}
		var smp scope.Samples
		if ring.Since(0, 0, &smp); len(smp.T) < 500 || smp.Width != len(cols) || smp.V[1] != 15 {
			t.Errorf("busy poll %v: the scope holds %d samples of width %d, groundspeed %v", busy, len(smp.T), smp.Width, smp.V[1])
		}
		if last := smp.V[len(smp.V)-smp.Width:]; cols[len(cols)-4].Name != "model.setSpeed" || last[len(cols)-4] != 20 || last[len(cols)-3] != 5 {
			t.Errorf("busy poll %v: the model's signals %v: %v, want setSpeed 20, speedError 5", busy, cols[len(cols)-4:], last[len(cols)-4:])
		}
		c.sock.close()
		beamngSide.Close()
	}
}

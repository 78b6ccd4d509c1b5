package coupling

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/scope"
)

// testBusyPoll runs the harness's couplings by busy polling:
// BEAMCONNECT_TEST_BUSY_POLL=1 go test ./coupling runs the suite in that
// mode (.ci/run runs the coupling tests both ways).
var testBusyPoll = os.Getenv("BEAMCONNECT_TEST_BUSY_POLL") == "1"

// Busy polling couples like the default mode: the cruise rig holds its
// speed in lockstep, 0 stalls.
func TestBusyPollCruise(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("busy polling needs Linux")
	}
	cfg, err := config.Load("../examples/cruise-pedals.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BusyPoll = true
	h := newHarnessPlan(t, cfg, nil, emulator.Config{Steps: 60000})
	if !h.c.busy {
		t.Fatal("beamng.busyPoll did not turn busy polling on")
	}
	h.run(t)
	if !h.c.busy {
		t.Fatal("the socket was not read by busy polling")
	}
	set := h.plan.ModelParams["setSpeed"].(float64)
	checkHeld(t, h, set, func(v emulator.Vehicle) float64 { return v.V }, 0.05*set, "speed")
	if s := h.emSum; s.Stalls != 0 || s.Accepted < s.Sent-1 {
		t.Errorf("BeamNG's side: %v", s)
	}
}

// A whole message in both modes (on Linux both read the socket out of the
// netpoller: blocking recvmsg, or non-blocking in a loop), read from the socket, handled and
// answered on it, allocates nothing.
func TestReceiveAllocs(t *testing.T) {
	for _, busy := range []bool{false, true} {
		cfg, err := config.Load("../examples/cruise-pedals.json")
		if err != nil {
			t.Fatal(err)
		}
		plan, _ := ports.Compile(cfg)
		m, _ := models.New(plan.Model, plan.ModelParams, plan, nil)
		// With a live scope attached: its sample is on the same path.
		ring := scope.New(ScopeColumns(plan), 1000, 1)
		c, err := New(Options{Plan: plan, Model: m, Local: loopback, BusyPoll: busy, Scope: ring})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Bind(); err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS == "linux" && c.sock == nil {
			t.Fatalf("busy %v: the socket is still in the netpoller", busy)
		}
		beamngSide, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(loopback))
		if err != nil {
			t.Fatal(err)
		}
		c.SetRemote(beamngSide.LocalAddr().(*net.UDPAddr).AddrPort())
		c.sync.Anchor(0, time.Now())
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
		if ring.Since(0, 0, &smp); len(smp.T) < 500 || smp.Width != len(ScopeColumns(plan)) || smp.V[1] != 15 {
			t.Errorf("busy poll %v: the scope holds %d samples of width %d, groundspeed %v", busy, len(smp.T), smp.Width, smp.V[1])
		}
		c.closeConn()
		beamngSide.Close()
	}
}

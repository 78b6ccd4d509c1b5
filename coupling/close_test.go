package coupling

import (
	"net"
	"net/netip"
	"testing"

	"beamconnect/config"
	"beamconnect/models"
)

// A session whose Bind fails for one vehicle holds the other vehicles'
// ports until Close releases them: a caller that gives up (an exported
// FMU's initialize, tried again by its master) leaks no socket.
func TestCloseReleasesWhatBindBound(t *testing.T) {
	busy, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(loopback))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := load(t, "../examples/follow.json")
	if len(cfg.Vehicles) < 2 {
		t.Fatalf("follow.json has %d vehicles", len(cfg.Vehicles))
	}
	cfg.Vehicles[0].Local = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.Vehicles[1].Local = busy.LocalAddr().(*net.UDPAddr).AddrPort()
	plan, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Plan: plan, Model: models.Hold{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(); err == nil {
		t.Fatal("Bind took a port another socket holds")
	}
	held := s.Link(0).LocalAddr()
	if c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(held)); err == nil {
		c.Close()
		t.Fatalf("vehicle 0's port %v was not bound", held)
	}
	s.Close()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(held))
	if err != nil {
		t.Fatalf("vehicle 0's port after Close: %v", err)
	}
	c.Close()
}

package emulator

import (
	"context"
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"beamconnect/beamng"
	"beamconnect/beamng/beamngtest"
)

// clientAndLink is a client socket and BeamNG's side sending to it, both on
// free loopback ports, closed when the test ends.
func clientAndLink(t *testing.T) (*net.UDPConn, *UDP) {
	t.Helper()
	client, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	link, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), client.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	return client, link
}

// The emulator over real loopback sockets, laid out as BeamNG's: it sends
// from an ephemeral port to the client and receives on its own bound port.
func TestUDPLockstep(t *testing.T) {
	client, link := clientAndLink(t)
	beamngAddr := link.LocalAddr()
	// A +1 client: it replies to BeamNG's bound address, not to the
	// ephemeral port the message came from (spec §1).
	go beamngtest.ServeUDP(client, beamngAddr, func(r []float64) { r[1] = 0.5 })
	e, err := New(Config{SimulinkTime: 0.0005, FreeRunning: true, Steps: 4000}, link)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	link.Close()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stalls != 0 || sum.Sent != 4000 || sum.Accepted < 3990 || e.Vehicle().Throttle != 0.5 {
		t.Errorf("%v", sum)
	}
	if link.Dropped() != 0 {
		t.Errorf("%d datagrams dropped by the receive queue", link.Dropped())
	}
}

// BeamNG keeps going when nobody listens: sends to a closed port are
// counted, not fatal.
func TestUDPNoClient(t *testing.T) {
	// A port that was just free: nothing listens there.
	tmp, _ := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	dead := tmp.LocalAddr().(*net.UDPAddr).AddrPort()
	tmp.Close()
	link, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), dead)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	e, _ := New(Config{SimulinkTime: 0.0005, PingTime: 0.01, FreeRunning: true, Steps: 10}, link)
	sum, err := e.Run(context.Background())
	if err != nil || sum.Sent != 10 {
		t.Errorf("%v %v", sum, err)
	}
}

func TestUDPBindError(t *testing.T) {
	a, _ := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	defer a.Close()
	taken := a.LocalAddr().(*net.UDPAddr).AddrPort()
	if _, err := ListenUDP(taken, netip.MustParseAddrPort("127.0.0.1:9")); err == nil {
		t.Error("binding a taken port succeeded")
	}
}

// A physics step in steady state allocates nothing: skip steps, send steps,
// replies applied, debug logs off.
func TestStepAllocs(t *testing.T) {
	e, err := New(Config{SimulinkTime: 0.001, FreeRunning: true}, newScripted(func(id float64, r []float64) { r[1] = 0.3 }))
	if err != nil {
		t.Fatal(err)
	}
	e.start = time.Now()
	for range 100 {
		e.step()
	}
	if a := testing.AllocsPerRun(2000, e.step); a != 0 {
		t.Errorf("%v allocations per physics step", a)
	}
	if e.sum.Accepted < 1000 {
		t.Errorf("steps did not couple: %v", e.sum)
	}
}

// BenchmarkStep is one physics step with the coupling: vehicle, receive,
// decode, apply, and every 10th step a state message encoded and sent, to
// the fastest possible client.
func BenchmarkStep(b *testing.B) {
	for _, bm := range []struct {
		name         string
		simulinkTime float64
	}{{"send-every-step", 0.0005}, {"send-every-10th", 0.005}} {
		b.Run(bm.name, func(b *testing.B) {
			e, err := New(Config{SimulinkTime: bm.simulinkTime, FreeRunning: true}, newScripted(func(id float64, r []float64) { r[1] = 0.3 }))
			if err != nil {
				b.Fatal(err)
			}
			e.start = time.Now()
			b.ReportAllocs()
			for b.Loop() {
				e.step()
			}
			b.ReportMetric(float64(e.sum.Sent)/float64(b.N), "sends/step")
		})
	}
}

// A controller restart closes and re-binds BeamNG's sockets, as a reload
// does: a reply queued for the old controller is lost (it would otherwise
// be accepted with a high id and leave the new controller free-running),
// and the messages come from a new port, starting at id 0 again.
func TestUDPRestartRebinds(t *testing.T) {
	client, link := clientAndLink(t)
	e, err := New(Config{SimulinkTime: 0.0005, PingTime: 0.01, FreeRunning: true}, link)
	if err != nil {
		t.Fatal(err)
	}
	before := link.SendAddr()
	// A stale reply with a high id waits in BeamNG's receive queue.
	stale := make([]byte, 8*64)
	beamngtestEncodeID(stale, 5000)
	client.WriteToUDPAddrPort(stale, link.LocalAddr())
	deadline := time.Now().Add(time.Second)
	// Wait for the reader goroutine to queue it, and put it back: throwing
	// it away is the restart's job.
	held := make([]byte, beamng.MaxDatagram)
	n, from, ok, _ := link.q.Get(held, time.Minute, nil)
	if !ok {
		t.Fatal("the stale reply never reached BeamNG's receive queue")
	}
	link.q.Put(held[:n], from)
	if err := e.Restart(); err != nil {
		t.Fatal(err)
	}
	if link.SendAddr() == before {
		t.Errorf("the restarted controller still sends from %v", before)
	}
	if n := link.q.Len(); n != 0 {
		t.Errorf("%d datagrams survived the restart in BeamNG's receive queue", n)
	}
	e.start = time.Now()
	e.step() // a send step: id 0 from the new port
	buf := make([]byte, 2048)
	client.SetReadDeadline(time.Now().Add(time.Second))
	n, from, err = client.ReadFromUDPAddrPort(buf)
	if err != nil || n != 888 || from != link.SendAddr() {
		t.Fatalf("after the restart: %d bytes from %v (%v), want 888 from %v", n, from, err, link.SendAddr())
	}
	if e.ctl.maxRecvID != 0 || buf[0] != 0 {
		t.Errorf("maxRecvId %v after the restart: the stale reply reached the new controller", e.ctl.maxRecvID)
	}
	// The re-bound socket works: a reply now is received and applied.
	beamngtestEncodeID(stale, 1)
	client.WriteToUDPAddrPort(stale, link.LocalAddr())
	for e.sum.Accepted == 0 && time.Now().Before(deadline.Add(time.Second)) {
		e.step()
	}
	if e.sum.Accepted != 1 {
		t.Errorf("no reply accepted on the re-bound socket: %v", e.sum)
	}
}

func beamngtestEncodeID(b []byte, id float64) {
	msg := make([]float64, len(b)/8)
	for i := range msg {
		msg[i] = math.NaN()
	}
	msg[0] = id
	beamng.Encode(b, msg)
}

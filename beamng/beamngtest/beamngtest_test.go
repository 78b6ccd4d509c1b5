package beamngtest

import (
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"beamconnect/beamng"
)

func TestReply(t *testing.T) {
	r := NewReplier()
	msg := make([]float64, beamng.StateLen)
	msg[0], msg[17] = 41, 12.5
	in, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
	b, ok := r.Reply(in, Next, func(reply []float64) { reply[1] = 0.25 })
	if !ok || r.Msg[17] != 12.5 {
		t.Fatalf("Reply: %v, decoded groundspeed %v", ok, r.Msg[17])
	}
	reply := make([]float64, beamng.ControlLen)
	if err := beamng.Decode(reply, b); err != nil {
		t.Fatal(err)
	}
	if reply[0] != 42 || reply[1] != 0.25 || !math.IsNaN(reply[2]) || !math.IsNaN(reply[63]) {
		t.Errorf("reply %v", reply[:4])
	}
	if _, ok := r.Reply(in[:512], Next, nil); ok {
		t.Error("a control-sized datagram was taken for a state message")
	}
	if a := testing.AllocsPerRun(100, func() { r.Reply(in, Next, nil) }); a != 0 {
		t.Errorf("%v allocs per reply", a)
	}
}

func TestServeUDP(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	client, _ := net.ListenUDP("udp", net.UDPAddrFromAddrPort(lo))
	beamngSide, _ := net.ListenUDP("udp", net.UDPAddrFromAddrPort(lo))
	defer beamngSide.Close()
	done := make(chan struct{})
	go func() { ServeUDP(client, beamngSide.LocalAddr().(*net.UDPAddr).AddrPort(), nil); close(done) }()
	msg := make([]float64, beamng.StateLen)
	msg[0] = 7
	b, _ := beamng.Encode(make([]byte, 8*beamng.StateLen), msg)
	beamngSide.WriteToUDPAddrPort(b, client.LocalAddr().(*net.UDPAddr).AddrPort())
	beamngSide.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1024)
	n, _, err := beamngSide.ReadFromUDPAddrPort(buf)
	reply := make([]float64, beamng.ControlLen)
	if err != nil || beamng.Decode(reply, buf[:n]) != nil || reply[0] != 8 {
		t.Errorf("reply %v %v", err, reply[0])
	}
	client.Close()
	<-done
}

package emulator

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"beamconnect/beamng"
	"beamconnect/internal/memnet"
	"beamconnect/internal/rawudp"
)

// Transport is BeamNG's side of the coupling's two UDP flows, reduced to
// what the controller does with them: send one datagram, and receive one,
// either polling (LuaSocket settimeout(0)) or waiting (settimeout(2.0)).
type Transport interface {
	// Send transmits one message to the client. BeamNG's controller ignores
	// send errors; the emulator counts them.
	Send(b []byte) error
	// Recv copies the next datagram from the client into buf and returns its
	// length. wait 0 polls; otherwise it waits up to wait, or until stop is
	// closed. ok is false when no datagram came.
	Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (n int, ok bool)
	Close() error
}

// reloadTime is how long a controller reload keeps BeamNG's sockets
// closed.
const reloadTime = 2 * time.Millisecond

// Reopener is a Transport that can close its sockets and open new ones, as
// BeamNG's controller does when it is reloaded (a vehicle reset through the
// extension API): whatever was queued on the old receive socket is lost,
// and the new send socket sends from a new ephemeral port.
type Reopener interface {
	Reopen() error
}

// Mem is BeamNG's side on an in-memory network (package memnet), laid out
// as BeamNG's controller lays out its sockets: a receive socket bound to
// BeamNG's address and a send socket on an ephemeral port. Inside
// testing/synctest every wait runs on the fake clock.
type Mem struct {
	net            *memnet.Network
	listen, client netip.AddrPort
	depth          int
	recv, send     *memnet.Conn
}

// ListenMem binds listen on n and sends to client; depth ≤ 0 is memnet's
// default queue.
func ListenMem(n *memnet.Network, listen, client netip.AddrPort, depth int) (*Mem, error) {
	m := &Mem{net: n, listen: listen, client: client, depth: depth}
	return m, m.open()
}

func (m *Mem) open() error {
	recv, err := m.net.Listen(m.listen, m.depth)
	if err != nil {
		return fmt.Errorf("emulator: binding BeamNG's receive address: %w", err)
	}
	send, err := m.net.Listen(netip.AddrPortFrom(m.listen.Addr(), 0), 1)
	if err != nil {
		recv.Close()
		return fmt.Errorf("emulator: opening the send socket: %w", err)
	}
	m.recv, m.send, m.listen = recv, send, recv.LocalAddr()
	return nil
}

func (m *Mem) Send(b []byte) error { return m.send.WriteTo(b, m.client) }

func (m *Mem) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	n, _, ok, _ := m.recv.ReadFrom(buf, wait, stop)
	return n, ok
}

func (m *Mem) Close() error { return errors.Join(m.recv.Close(), m.send.Close()) }

// Reopen closes both sockets and binds again, as BeamNG's controller does
// on a reload: what was queued for it is lost, and it sends from a new
// port.
func (m *Mem) Reopen() error {
	m.Close()
	time.Sleep(reloadTime)
	return m.open()
}

// LocalAddr is the address BeamNG's side receives on; SendAddr the one it
// sends from.
func (m *Mem) LocalAddr() netip.AddrPort { return m.listen }
func (m *Mem) SendAddr() netip.AddrPort  { return m.send.LocalAddr() }

// PipeEnd is the client's end of Pipe.
type PipeEnd struct {
	conn *memnet.Conn
	peer netip.AddrPort
}

// Pipe links BeamNG's side to a client in memory, with depth datagrams of
// buffering each way. Tests drive the emulator through it inside
// testing/synctest, where its waits run on the fake clock.
func Pipe(depth int) (beamngSide *Mem, clientSide *PipeEnd) {
	n := memnet.New()
	beamngAddr, clientAddr := netip.MustParseAddrPort("127.0.0.1:64891"), netip.MustParseAddrPort("127.0.0.1:64890")
	c, _ := n.Listen(clientAddr, depth)
	b, _ := ListenMem(n, beamngAddr, clientAddr, depth)
	return b, &PipeEnd{conn: c, peer: beamngAddr}
}

func (p *PipeEnd) Send(b []byte) error { return p.conn.WriteTo(b, p.peer) }

func (p *PipeEnd) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	n, _, ok, _ := p.conn.ReadFrom(buf, wait, stop)
	return n, ok
}

func (p *PipeEnd) Close() error { return p.conn.Close() }

// UDP is the emulator's real socket pair, laid out as BeamNG's controller
// lays out its own: a receive socket bound to BeamNG's address
// (udpReceiveIP:udpReceivePort) and a send socket connected to the client
// (udpSendIP:udpSendPort) from an ephemeral port.
type UDP struct {
	recv, send *net.UDPConn
	listen     netip.AddrPort // the receive address as bound (port 0 resolved)
	client     netip.AddrPort
	q          *memnet.Queue // the reader goroutine's datagrams, for Recv
	done       chan struct{}
	sock       *rawudp.Socket // spinning (ListenUDPSpin): the receive socket, out of the netpoller; Recv reads it itself
	sendErrs   atomic.Int64
}

// ListenUDP binds listen and connects to client.
func ListenUDP(listen, client netip.AddrPort) (*UDP, error) { return listenUDP(listen, client, false) }

// ListenUDPSpin is ListenUDP for a driver that busy-polls (Linux): Recv
// reads the socket itself in a loop of non-blocking reads instead of
// waiting on a reader goroutine, for the lowest latency on BeamNG's side
// too (bench --driver spin). It keeps a core busy while it waits.
func ListenUDPSpin(listen, client netip.AddrPort) (*UDP, error) {
	return listenUDP(listen, client, true)
}

func listenUDP(listen, client netip.AddrPort, spin bool) (*UDP, error) {
	rc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(listen))
	if err != nil {
		return nil, fmt.Errorf("emulator: binding BeamNG's receive address %v: %w", listen, err)
	}
	sc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(client))
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("emulator: opening the send socket to %v: %w", client, err)
	}
	u := &UDP{recv: rc, send: sc, client: client, q: memnet.NewQueue(512, beamng.MaxDatagram), done: make(chan struct{})}
	u.listen = rc.LocalAddr().(*net.UDPAddr).AddrPort()
	if err := u.start(spin); err != nil {
		rc.Close()
		sc.Close()
		return nil, err
	}
	return u, nil
}

// Reopen closes both sockets and opens them again, as BeamNG's controller
// does on a reload: datagrams queued for it are lost, it binds the same
// receive address, and it sends from a new ephemeral port. The new bind is
// retried for up to a second in case the old socket is slow to let go.
func (u *UDP) Reopen() error {
	spin := u.sock != nil
	u.closeRecv()
	<-u.done
	u.send.Close()
	u.q.Discard() // the datagrams a closed socket held are gone
	// Reloading a controller (stopCoupling, rerequire, startCoupling) is
	// not instant; a reply in flight meanwhile finds no socket and is lost,
	// as it would be with BeamNG.
	time.Sleep(reloadTime)
	var err error
	for range 100 {
		var rc *net.UDPConn
		if rc, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(u.listen)); err == nil {
			u.recv = rc
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("emulator: re-binding BeamNG's receive address %v: %w", u.listen, err)
	}
	sc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(u.client))
	if err != nil {
		return fmt.Errorf("emulator: re-opening the send socket to %v: %w", u.client, err)
	}
	u.send = sc
	u.done = make(chan struct{})
	return u.start(spin)
}

// SendAddr is the address BeamNG's side sends from (its ephemeral port).
func (u *UDP) SendAddr() netip.AddrPort { return u.send.LocalAddr().(*net.UDPAddr).AddrPort() }

// read moves datagrams from the socket into the queue until the socket is
// closed. A separate goroutine is the only way to poll a Go socket without
// a syscall per step: a read deadline in the past fails before reading.
func (u *UDP) read(rc *net.UDPConn, done chan struct{}) {
	defer close(done)
	buf := make([]byte, beamng.MaxDatagram)
	for {
		n, from, err := rc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ECONNREFUSED reported on the socket: not fatal
		}
		u.q.Put(buf[:n], from)
	}
}

// LocalAddr is the address BeamNG's side receives on.
func (u *UDP) LocalAddr() netip.AddrPort { return u.listen }

func (u *UDP) Send(b []byte) error {
	_, err := u.send.Write(b)
	if err != nil {
		// Connection refused: the client is not up yet. BeamNG keeps sending.
		u.sendErrs.Add(1)
	}
	return err
}

func (u *UDP) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	if u.sock != nil {
		return u.spin(buf, wait, stop)
	}
	n, _, ok, _ := u.q.Get(buf, wait, stop)
	return n, ok
}

// start reads the socket: a reader goroutine into the queue, or, spinning,
// Recv itself.
func (u *UDP) start(spin bool) error {
	if !spin {
		go u.read(u.recv, u.done)
		return nil
	}
	s, err := rawudp.Take(u.recv)
	if err != nil {
		return fmt.Errorf("emulator: %w", err)
	}
	u.sock, u.recv = s, nil
	close(u.done) // no reader goroutine to wait for
	return nil
}

// spin tries the socket until a datagram comes, wait passes or stop closes.
func (u *UDP) spin(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	var deadline time.Time
	for i := 0; ; i++ {
		n, _, _, err := u.sock.Poll(buf, nil)
		if err == nil {
			return n, true
		}
		if err != rawudp.ErrAgain || wait <= 0 {
			return 0, false
		}
		if i&255 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(wait)
			} else if now.After(deadline) {
				return 0, false
			}
			select {
			case <-stop:
				return 0, false
			default:
			}
		}
	}
}

// Dropped counts datagrams lost because the receive queue was full.
func (u *UDP) Dropped() int64 { return u.q.Dropped() }

func (u *UDP) Close() error {
	err := errors.Join(u.closeRecv(), u.send.Close())
	<-u.done
	return err
}

// closeRecv closes the receive socket, whichever reads it.
func (u *UDP) closeRecv() error {
	if u.sock != nil {
		s := u.sock
		u.sock = nil
		return s.Close()
	}
	return u.recv.Close()
}

package coupling

import (
	"fmt"
	"log/slog"
	"time"

	"beamconnect/beamng"
)

// The classic mistakes of a new rig, diagnosed live, once each, with the
// fix: replies that go where BeamNG is not listening, a BeamNG that never
// sends here, messages of another protocol or another CSV.

// nothingFor is how long after binding a link that has heard nothing says
// where BeamNG must send and how to start it.
const nothingFor = 10 * time.Second

// lonelyStalls is how many BeamNG stalls in a row, each after a single
// answered message, show that the replies do not reach BeamNG.
const lonelyStalls = 2

type diagnosis struct {
	boundAt      time.Time
	nothingSaid  bool
	sinceStall   int64 // messages answered since the last stall
	stallsInRow  int
	repliesSaid  bool
	sizeSaid     bool
	shortSaid    bool
	longSaid     bool
	startCommand string
}

// noMessages says, once, that BeamNG has sent nothing since the link was
// bound nothingFor ago.
func (l *Link) noMessages(now time.Time) {
	d := &l.diag
	if d.nothingSaid || l.stats.Get(Messages) > 0 || d.boundAt.IsZero() || now.Sub(d.boundAt) < nothingFor {
		return
	}
	d.nothingSaid = true
	args := []any{"waiting_for", now.Sub(d.boundAt).Round(time.Second), "bound", l.local,
		"hint", fmt.Sprintf("BeamNG's coupling must send to %v (its udpSendIP/udpSendPort, the CSV's otherUDP rows) and listen on %v; start it in BeamNG (see `beamconnect compile` and docs/beamng.md)", l.local, l.remote)}
	if d.startCommand != "" {
		args = append(args, "start_with", d.startCommand)
	}
	l.diagnosed(slog.LevelWarn, "nothing has come from BeamNG yet", args...)
}

// stalled notes one of BeamNG's 2 s stalls: several in a row, each after a
// single answered message, mean BeamNG never gets the replies.
func (l *Link) stalled() {
	d := &l.diag
	if d.sinceStall <= 1 {
		d.stallsInRow++
	} else {
		d.stallsInRow = 1
	}
	d.sinceStall = 0
	if d.repliesSaid || d.stallsInRow < lonelyStalls {
		return
	}
	d.repliesSaid = true
	l.diagnosed(slog.LevelError, "BeamNG waits 2 s for a reply after every message although each one is answered: the replies go where BeamNG is not listening",
		"replies_to", l.remote,
		"hint", fmt.Sprintf("set remoteIP and remotePort (Gen 2: the CSV's beamngUDP rows) to the address BeamNG's coupling listens on (its udpReceiveIP and udpReceivePort, 64891 by default); beamconnect sends to %v", l.remote))
}

// wrongSize counts a datagram from BeamNG's address of a length BeamNG does
// not send for this layout, and says, once, what it looks like (the
// summary counts the rest).
func (l *Link) wrongSize(n int, now time.Time) {
	l.stats.inc(WrongSize)
	d := &l.diag
	if d.sizeSaid {
		return
	}
	d.sizeSaid = true
	args := []any{"bytes", n, "expected", 8 * len(l.msg)}
	switch {
	case n%8 != 0:
		args = append(args, "hint", "not whole doubles: not BeamNG's coupling")
	case l.proto == beamng.Gen1:
		args = append(args, "hint", fmt.Sprintf("%d doubles is not Gen 1's 111: BeamNG runs the Gen 2 co-simulation coupling (cosimulationCoupling) with %d signalTo rows? Set beamng.protocol to \"csv\" and beamng.interface to its CSV", n/8, n/8-1))
	default:
		args = append(args, "hint", "longer than BeamNG reads whole: not BeamNG's coupling")
	}
	l.diagnosed(slog.LevelWarn, "dropped datagrams from BeamNG's address of a length this coupling does not send", args...)
}

// shortWarn says, once, that a message lacked fields the model reads, and
// what that suggests.
func (l *Link) shortWarn(present int, now time.Time) {
	d := &l.diag
	if d.shortSaid {
		return
	}
	d.shortSaid = true
	hint := fmt.Sprintf("the CSV says %d doubles and the model reads up to %d: BeamNG could not resolve a signalTo row before the mapped ones (see `beamconnect validate`), or it runs another CSV", len(l.msg), l.need)
	if present == beamng.StateLen {
		hint = "111 doubles is Gen 1's vehicleSystemsCoupling: set beamng.protocol to \"fixed\", or start BeamNG's co-simulation coupling with this config's CSV"
	}
	l.diagnosed(slog.LevelError, "BeamNG's message lacks fields the model reads: answered with neutral controls, the model not stepped",
		"doubles", present, "hint", hint)
}

// longWarn says, once, that BeamNG's messages are longer than the layout
// says, and what that suggests.
func (l *Link) longWarn(present int) {
	d := &l.diag
	if d.longSaid {
		return
	}
	d.longSaid = true
	hint := fmt.Sprintf("the CSV says %d doubles: BeamNG runs another CSV, with more signalTo rows; start its coupling with this config's CSV", len(l.msg))
	if present == beamng.StateLen {
		hint = "111 doubles is Gen 1's vehicleSystemsCoupling: set beamng.protocol to \"fixed\", or start BeamNG's co-simulation coupling with this config's CSV"
	}
	l.diagnosed(slog.LevelWarn, "BeamNG's messages are longer than this coupling's layout: the extra values are ignored", "doubles", present, "hint", hint)
}

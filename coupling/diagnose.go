package coupling

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/beamng"
	"beamconnect/recording"
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

// diagnosisHolds is how long a diagnosis holds after what it explains was
// last seen: the status line says it meanwhile.
const diagnosisHolds = 5 * time.Second

// The diagnoses a link can make.
const (
	diagNothing = iota // nothing has come from BeamNG
	diagReplies        // the replies go where BeamNG is not listening
	diagSize           // datagrams of a length this coupling does not send
	diagShort          // messages that lack fields the model reads
	diagLong           // messages longer than the layout
	numDiagnoses
)

// Diagnosis is one of the classic mistakes, as the link diagnosed it live:
// what it sees, what to do, and a few words for the status line.
type Diagnosis struct {
	What  string `json:"what"`
	Fix   string `json:"fix"`
	Short string `json:"-"`
	// Since is when it was first said, seconds after the link was bound.
	Since float64 `json:"since_s"`
	// Holds says whether what it explains was seen lately (or, for
	// "nothing from BeamNG", still is).
	Holds bool `json:"holds"`
	// Kind names it: nothing, replies, size, short, long.
	Kind string `json:"kind"`
	kind int
}

var diagnosisKinds = [numDiagnoses]string{"nothing", "replies", "size", "short", "long"}

// Line is the diagnosis as a line of the verdict.
func (d Diagnosis) Line() string { return d.What + ": " + d.Fix }

// diagnoses are a link's, read by other goroutines (the status line, the
// page, the summary): said rarely, under a mutex; seen again on the
// message path, atomically.
type diagnoses struct {
	mu   sync.Mutex
	list [numDiagnoses]*Diagnosis
	last [numDiagnoses]atomic.Int64 // unix ns what each explains was last seen
}

// diagnoser is a link's: what it has said (diagnoses, read by other
// goroutines: the status line, the page, the summary) and what it goes by
// (diagnosis, the loop's own). Each diagnosis is logged, and recorded as
// an event at the time of the link's latest message.
type diagnoser struct {
	log          *slog.Logger
	stats        *Stats
	rec          *Recorder // nil: no recording
	vehicle      int
	time         *float64 // the link's latest message's recording time
	sock         *socket  // where the link listens and replies
	startCommand string   // the line that starts BeamNG's coupling ("" for none)
	d            diagnosis
	said         diagnoses
}

func (g *diagnoser) init(log *slog.Logger, stats *Stats, rec *Recorder, vehicle int, time *float64, sock *socket, startCommand string) {
	g.log, g.stats, g.rec, g.vehicle, g.time, g.sock, g.startCommand = log, stats, rec, vehicle, time, sock, startCommand
}

// bound notes that the link was bound at now: "nothing from BeamNG" counts
// from there.
func (g *diagnoser) bound(now time.Time) { g.d.boundAt = now }

// say records diagnosis kind (first time: what and fix), or that what it
// explains was seen again at now.
func (g *diagnoser) say(kind int, now time.Time, what, fix, short string) {
	ds := &g.said
	ds.last[kind].Store(now.UnixNano())
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.list[kind] != nil {
		return
	}
	since := 0.0
	if !g.d.boundAt.IsZero() {
		since = now.Sub(g.d.boundAt).Seconds()
	}
	ds.list[kind] = &Diagnosis{What: what, Fix: fix, Short: short, Since: since, Kind: diagnosisKinds[kind], kind: kind}
}

// seen notes that what diagnosis kind explains was seen again at now.
func (g *diagnoser) seen(kind int, now time.Time) { g.said.last[kind].Store(now.UnixNano()) }

// list is what the link diagnosed so far, in the order of their kinds,
// each saying whether it holds at now.
func (g *diagnoser) list(now time.Time) []Diagnosis {
	ds := &g.said
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var out []Diagnosis
	for _, d := range ds.list {
		if d == nil {
			continue
		}
		c := *d
		c.Holds = now.Sub(time.Unix(0, ds.last[d.kind].Load())) < diagnosisHolds
		if c.kind == diagNothing {
			c.Holds = g.stats.Get(Messages) == 0
		}
		out = append(out, c)
	}
	return out
}

// faults are the verdict's lines of what was diagnosed, first in the
// faults: the cause and its fix, before the counters that show it.
// "Nothing from BeamNG" is a fault only when nothing ever came (and then
// its fix completes the "never connected" line).
func (g *diagnoser) faults(now time.Time) []string {
	var out []string
	for _, d := range g.list(now) {
		if d.kind != diagNothing {
			out = append(out, "diagnosed: "+d.Line())
		}
	}
	return out
}

// diagnosed logs a live diagnosis and records it: the message, and the
// hint among args.
func (g *diagnoser) diagnosed(level slog.Level, msg string, args ...any) {
	g.log.Log(context.Background(), level, msg, args...)
	if g.rec == nil {
		return
	}
	text := msg
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "hint" {
			text += "; " + fmt.Sprint(args[i+1])
		}
	}
	g.rec.Event(recording.Event{Time: *g.time, Vehicle: g.vehicle, Kind: recording.Diagnosis, Name: "diagnosis", Text: text})
}

type diagnosis struct {
	boundAt     time.Time
	nothingSaid bool
	sinceStall  int64 // messages answered since the last stall
	stallsInRow int
	repliesSaid bool
	sizeSaid    bool
	shortSaid   bool
	longSaid    bool
}

// noMessages says, once, that BeamNG has sent nothing since the link was
// bound nothingFor ago.
func (g *diagnoser) noMessages(now time.Time) {
	d := &g.d
	// Datagrams of a length this coupling does not send are something,
	// and their own diagnosis says what.
	if d.nothingSaid || d.sizeSaid || g.stats.Get(Messages) > 0 || d.boundAt.IsZero() || now.Sub(d.boundAt) < nothingFor {
		return
	}
	d.nothingSaid = true
	sendTo := g.sock.sendTo()
	hint := fmt.Sprintf("BeamNG's coupling must send to %v (its udpSendIP/udpSendPort, the CSV's otherUDP rows) and listen on %v; start it in BeamNG (see `beamconnect compile` and docs/beamng.md)", sendTo, g.sock.remote)
	args := []any{"waiting_for", now.Sub(d.boundAt).Round(time.Second), "bound", g.sock.local, "hint", hint}
	if g.startCommand != "" {
		args = append(args, "start_with", g.startCommand)
	}
	g.diagnosed(slog.LevelWarn, "nothing has come from BeamNG yet", args...)
	g.say(diagNothing, now, "nothing has come from BeamNG", hint, fmt.Sprintf("NOTHING FROM BeamNG: it must send to %v", sendTo))
}

// stalled notes one of BeamNG's 2 s stalls: several in a row, each after a
// single answered message, mean BeamNG never gets the replies.
func (g *diagnoser) stalled(now time.Time) {
	d := &g.d
	g.seen(diagReplies, now)
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
	const what = "BeamNG waits 2 s for a reply after every message although each one is answered: the replies go where BeamNG is not listening"
	hint := fmt.Sprintf("set remoteIP and remotePort (Gen 2: the CSV's beamngUDP rows) to the address BeamNG's coupling listens on (its udpReceiveIP and udpReceivePort, 64891 by default); beamconnect sends to %v", g.sock.remote)
	g.diagnosed(slog.LevelError, what, "replies_to", g.sock.remote, "hint", hint)
	g.say(diagReplies, now, what, hint, fmt.Sprintf("REPLIES DO NOT REACH BeamNG (sent to %v): check remoteIP/remotePort", g.sock.remote))
}

// wrongSize counts a datagram from BeamNG's address of a length BeamNG does
// not send for this layout (of want doubles, protocol proto), and says,
// once, what it looks like (the summary counts the rest).
func (g *diagnoser) wrongSize(n int, now time.Time, want int, proto *beamng.Protocol) {
	g.stats.inc(WrongSize)
	d := &g.d
	if d.sizeSaid {
		g.seen(diagSize, now)
		return
	}
	d.sizeSaid = true
	args := []any{"bytes", n, "expected", 8 * want}
	hint := "longer than BeamNG reads whole: not BeamNG's coupling"
	switch {
	case n%8 != 0:
		hint = "not whole doubles: not BeamNG's coupling"
	case proto == beamng.Gen1:
		hint = fmt.Sprintf("%d doubles is not Gen 1's 111: BeamNG runs the Gen 2 co-simulation coupling (cosimulationCoupling) with %d signalTo rows? Set beamng.protocol to \"csv\" and beamng.interface to its CSV", n/8, n/8-1)
	}
	const what = "dropped datagrams from BeamNG's address of a length this coupling does not send"
	g.diagnosed(slog.LevelWarn, what, append(args, "hint", hint)...)
	g.say(diagSize, now, fmt.Sprintf("%s (%d bytes, expected %d)", what, n, 8*want), hint, "WRONG-SIZE DATAGRAMS FROM BeamNG: another protocol or CSV?")
}

// shortWarn says, once, that a message of present doubles lacked fields
// the model reads (need of the layout's want), and what that suggests.
func (g *diagnoser) shortWarn(present int, now time.Time, want, need int) {
	d := &g.d
	if d.shortSaid {
		g.seen(diagShort, now)
		return
	}
	d.shortSaid = true
	hint := fmt.Sprintf("the CSV says %d doubles and the model reads up to %d: BeamNG could not resolve a signalTo row before the mapped ones (see `beamconnect validate`), or it runs another CSV", want, need)
	if present == beamng.StateLen {
		hint = "111 doubles is Gen 1's vehicleSystemsCoupling: set beamng.protocol to \"fixed\", or start BeamNG's co-simulation coupling with this config's CSV"
	}
	const what = "BeamNG's message lacks fields the model reads: answered with neutral controls, the model not stepped"
	g.diagnosed(slog.LevelError, what, "doubles", present, "hint", hint)
	g.say(diagShort, now, fmt.Sprintf("%s (%d doubles)", what, present), hint, "BeamNG's MESSAGES LACK FIELDS: neutral controls")
}

// longWarn says, once, that BeamNG's messages (of present doubles) are
// longer than the layout says (want), and what that suggests.
func (g *diagnoser) longWarn(present int, now time.Time, want int) {
	d := &g.d
	if d.longSaid {
		g.seen(diagLong, now)
		return
	}
	d.longSaid = true
	hint := fmt.Sprintf("the CSV says %d doubles: BeamNG runs another CSV, with more signalTo rows; start its coupling with this config's CSV", want)
	if present == beamng.StateLen {
		hint = "111 doubles is Gen 1's vehicleSystemsCoupling: set beamng.protocol to \"fixed\", or start BeamNG's co-simulation coupling with this config's CSV"
	}
	const what = "BeamNG's messages are longer than this coupling's layout: the extra values are ignored"
	g.diagnosed(slog.LevelWarn, what, "doubles", present, "hint", hint)
	g.say(diagLong, now, fmt.Sprintf("%s (%d doubles)", what, present), hint, "BeamNG's MESSAGES TOO LONG: another CSV?")
}

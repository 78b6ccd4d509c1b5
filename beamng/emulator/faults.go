package emulator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Faults are the misfortunes the emulator can inflict, each switchable.
// Probabilities apply per datagram.
type Faults struct {
	Replies  Impairments // on datagrams from the client to BeamNG
	Messages Impairments // on datagrams from BeamNG to the client
	// Garbage is the probability, per message sent, of an extra datagram of
	// random bytes and length sent to the client.
	Garbage float64
	// PauseFor > 0 stops the physics thread for that long once simulated
	// time reaches PauseAt, as a hitch in BeamNG would.
	PauseAt, PauseFor time.Duration
	// Restart reloads the controller once simulated time reaches RestartAt:
	// ids start from 0 again (a vehicle reset through the extension API).
	Restart   bool
	RestartAt time.Duration
	// StopFor > 0 unloads the controller at simulated time StopAt (its
	// sockets closed; the vehicle drives on uncoupled) and loads it again
	// StopFor later: ids from 0, new sockets.
	StopAt, StopFor time.Duration
	Seed            uint64 // for the random choices; the same seed, the same run
}

// Impairments of one direction of the link.
type Impairments struct {
	Drop      float64       // lose the datagram
	Duplicate float64       // deliver it twice
	Reorder   float64       // hold it back until the next one has gone
	Truncate  float64       // cut it to a random shorter length
	Cut       float64       // cut it to a random shorter whole number of doubles (as a CSV row BeamNG cannot resolve does)
	Delay     time.Duration // hold it this long…
	DelayProb float64       // …with this probability (1 when a delay is set alone)
}

func (im Impairments) active() bool {
	return im.Drop > 0 || im.Duplicate > 0 || im.Reorder > 0 || im.Truncate > 0 || im.Cut > 0 || im.Delay > 0 && im.DelayProb > 0
}

func (f Faults) active() bool {
	return f.Replies.active() || f.Messages.active() || f.Garbage > 0
}

func (f Faults) check() error {
	for _, p := range []float64{f.Replies.Drop, f.Replies.Duplicate, f.Replies.Reorder, f.Replies.Truncate, f.Replies.DelayProb,
		f.Messages.Drop, f.Messages.Duplicate, f.Messages.Reorder, f.Messages.Truncate, f.Messages.Cut, f.Messages.DelayProb, f.Garbage} {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("emulator: fault probability %v outside [0,1]", p)
		}
	}
	if f.Replies.Delay < 0 || f.Messages.Delay < 0 || f.PauseFor < 0 || f.PauseAt < 0 || f.RestartAt < 0 || f.StopFor < 0 || f.StopAt < 0 {
		return errors.New("emulator: fault times cannot be negative")
	}
	return nil
}

// FaultHelp describes the fault specifications ParseFault reads.
const FaultHelp = `drop-replies=P, drop-messages=P        lose a datagram with probability P (0–1)
dup-replies=P, dup-messages=P          deliver it twice
reorder-replies=P, reorder-messages=P  hold it back until the next one has gone
truncate-replies=P, truncate-messages=P  cut it to a random shorter length
cut-messages=P                         cut a message to a random shorter whole number of doubles
delay-replies=D[:P], delay-messages=D[:P]  hold it for duration D (with probability P, default 1)
garbage=P                              after a message, also send a datagram of random bytes
pause=D@T                              stop the physics thread for D at simulated time T
restart@T                              reload the controller at simulated time T (ids from 0)
stop=D@T                               unload the controller at simulated time T, load it again D later
seed=N                                 seed of the random choices`

// ParseFault reads one fault specification such as "drop-replies=0.01",
// "delay-messages=2ms:0.5", "pause=2.5s@10s" or "restart@30s" into f.
func ParseFault(spec string, f *Faults) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("fault %q: %s", spec, fmt.Sprintf(format, args...))
	}
	name, value, hasValue := strings.Cut(spec, "=")
	if at, when, ok := strings.Cut(name, "@"); ok && at == "restart" && !hasValue {
		d, err := duration(when)
		if err != nil {
			return bad("expected restart@TIME, e.g. restart@30s: %v", err)
		}
		f.Restart, f.RestartAt = true, d
		return nil
	}
	if !hasValue {
		return bad("expected NAME=VALUE; the faults are:\n%s", FaultHelp)
	}
	prob := func(dst *float64) error {
		p, err := strconv.ParseFloat(value, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return bad("expected a probability from 0 to 1, got %q", value)
		}
		*dst = p
		return nil
	}
	delay := func(im *Impairments) error {
		ds, ps, hasP := strings.Cut(value, ":")
		d, err := duration(ds)
		if err != nil {
			return bad("expected a duration such as 2ms, optionally :PROBABILITY: %v", err)
		}
		p := 1.0
		if hasP {
			if p, err = strconv.ParseFloat(ps, 64); err != nil || !(p >= 0 && p <= 1) {
				return bad("expected a probability from 0 to 1 after ':', got %q", ps)
			}
		}
		im.Delay, im.DelayProb = d, p
		return nil
	}
	switch name {
	case "drop-replies":
		return prob(&f.Replies.Drop)
	case "drop-messages":
		return prob(&f.Messages.Drop)
	case "dup-replies":
		return prob(&f.Replies.Duplicate)
	case "dup-messages":
		return prob(&f.Messages.Duplicate)
	case "reorder-replies":
		return prob(&f.Replies.Reorder)
	case "reorder-messages":
		return prob(&f.Messages.Reorder)
	case "truncate-replies":
		return prob(&f.Replies.Truncate)
	case "truncate-messages":
		return prob(&f.Messages.Truncate)
	case "cut-messages":
		return prob(&f.Messages.Cut)
	case "delay-replies":
		return delay(&f.Replies)
	case "delay-messages":
		return delay(&f.Messages)
	case "garbage":
		return prob(&f.Garbage)
	case "pause", "stop":
		ds, ts, ok := strings.Cut(value, "@")
		d, err1 := duration(ds)
		t, err2 := duration(ts)
		if !ok || err1 != nil || err2 != nil || d == 0 {
			return bad("expected %s=DURATION@TIME, e.g. %s=2.5s@10s", name, name)
		}
		if name == "stop" {
			f.StopFor, f.StopAt = d, t
		} else {
			f.PauseFor, f.PauseAt = d, t
		}
		return nil
	case "seed":
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return bad("expected a whole number")
		}
		f.Seed = n
		return nil
	}
	return bad("unknown fault; the faults are:\n%s", FaultHelp)
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errors.New("cannot be negative")
	}
	return d, err
}

// faulty wraps a transport with the datagram faults.
type faulty struct {
	inner Transport
	f     Faults
	rng   *rand.Rand
	// Held datagrams: delayed ones with their due time, and the one a
	// reorder holds until the next has gone.
	replies, messages  []held
	heldReply, heldMsg *held
	spare              [][]byte
	garbage            []byte
	n                  Injected
}

// Injected counts the faults a run inflicted, per kind and direction.
type Injected struct {
	DroppedMessages   int64 `json:"dropped_messages"`
	DroppedReplies    int64 `json:"dropped_replies"`
	TruncatedMessages int64 `json:"truncated_messages"`
	TruncatedReplies  int64 `json:"truncated_replies"`
	CutMessages       int64 `json:"cut_messages,omitempty"`
	DelayedMessages   int64 `json:"delayed_messages"`
	DelayedReplies    int64 `json:"delayed_replies"`
	ReorderedMessages int64 `json:"reordered_messages"`
	ReorderedReplies  int64 `json:"reordered_replies"`
	DuplicateMessages int64 `json:"duplicated_messages"`
	DuplicateReplies  int64 `json:"duplicated_replies"`
	Garbage           int64 `json:"garbage"`
}

type held struct {
	due time.Time
	b   []byte
}

func newFaulty(inner Transport, f Faults) *faulty {
	return &faulty{inner: inner, f: f, rng: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15)), garbage: make([]byte, 256)}
}

func (t *faulty) Close() error { return t.inner.Close() }

// Reopen reopens the sockets underneath. Datagrams the faults hold back
// are in the network, not in a socket, so they stay held and may still
// arrive at the new socket, as a late datagram would.
func (t *faulty) Reopen() error {
	if r, ok := t.inner.(Reopener); ok {
		return r.Reopen()
	}
	return nil
}

func (t *faulty) hit(p float64) bool { return p > 0 && t.rng.Float64() < p }

func (t *faulty) copyOf(b []byte) []byte {
	var c []byte
	if n := len(t.spare); n > 0 {
		c, t.spare = t.spare[n-1][:0], t.spare[:n-1]
	}
	return append(c, b...)
}

func (t *faulty) recycle(b []byte) { t.spare = append(t.spare, b) }

// insert keeps a held list ordered by due time.
func insert(list []held, h held) []held {
	i := len(list)
	for i > 0 && list[i-1].due.After(h.due) {
		i--
	}
	list = append(list, held{})
	copy(list[i+1:], list[i:])
	list[i] = h
	return list
}

// release sends the held messages that are due.
func (t *faulty) release(now time.Time) {
	for len(t.messages) > 0 && !t.messages[0].due.After(now) {
		h := t.messages[0]
		t.messages = t.messages[1:]
		_ = t.inner.Send(h.b)
		t.recycle(h.b)
	}
}

// flush sends every held message now, at the end of a run.
func (t *faulty) flush() {
	if t.heldMsg != nil {
		t.messages = append(t.messages, *t.heldMsg)
		t.heldMsg = nil
	}
	t.release(time.Now().Add(time.Hour))
}

func (t *faulty) Send(b []byte) error {
	now := time.Now()
	t.release(now)
	im := &t.f.Messages
	if t.hit(im.Drop) {
		t.n.DroppedMessages++
		return nil
	}
	if t.hit(im.Truncate) {
		t.n.TruncatedMessages++
		b = b[:t.rng.IntN(len(b))]
	}
	if len(b) > 8 && t.hit(im.Cut) {
		t.n.CutMessages++
		b = b[:8*(1+t.rng.IntN(len(b)/8-1))]
	}
	if t.hit(im.DelayProb) && im.Delay > 0 {
		t.n.DelayedMessages++
		t.messages = insert(t.messages, held{now.Add(im.Delay), t.copyOf(b)})
		return nil
	}
	if t.heldMsg == nil && t.hit(im.Reorder) {
		t.n.ReorderedMessages++
		t.heldMsg = &held{b: t.copyOf(b)}
		return nil
	}
	err := t.inner.Send(b)
	if t.hit(im.Duplicate) {
		t.n.DuplicateMessages++
		_ = t.inner.Send(b)
	}
	if t.heldMsg != nil {
		_ = t.inner.Send(t.heldMsg.b)
		t.recycle(t.heldMsg.b)
		t.heldMsg = nil
	}
	if t.hit(t.f.Garbage) {
		t.n.Garbage++
		g := t.garbage[:1+t.rng.IntN(len(t.garbage)-1)]
		for i := range g {
			g[i] = byte(t.rng.Uint32())
		}
		_ = t.inner.Send(g)
	}
	return err
}

func (t *faulty) Recv(buf []byte, wait time.Duration, stop <-chan struct{}) (int, bool) {
	start := time.Now()
	for {
		now := time.Now()
		t.release(now)
		if len(t.replies) > 0 && !t.replies[0].due.After(now) {
			h := t.replies[0]
			t.replies = t.replies[1:]
			n := copy(buf, h.b)
			t.recycle(h.b)
			return n, true
		}
		left := wait - now.Sub(start)
		if wait > 0 && left <= 0 {
			return 0, false
		}
		// Wake for whatever is held and falls due before the wait ends.
		w := max(left, 0)
		for _, list := range [][]held{t.replies, t.messages} {
			if len(list) > 0 && wait > 0 {
				w = min(w, max(list[0].due.Sub(now), time.Microsecond))
			}
		}
		n, ok := t.inner.Recv(buf, w, stop)
		if !ok {
			select {
			case <-stop:
				return 0, false
			default:
			}
			if wait <= 0 {
				return 0, false
			}
			continue
		}
		if n, ok := t.impair(buf, n, now); ok {
			return n, true
		}
		if wait <= 0 {
			return 0, false // the datagram a poll found was lost or held back
		}
	}
}

// impair applies the reply faults to a datagram just received; it reports
// false when the datagram is not delivered now.
func (t *faulty) impair(buf []byte, n int, now time.Time) (int, bool) {
	im := &t.f.Replies
	if t.hit(im.Drop) {
		t.n.DroppedReplies++
		return 0, false
	}
	if t.hit(im.Truncate) {
		t.n.TruncatedReplies++
		n = t.rng.IntN(n + 1)
	}
	if t.hit(im.DelayProb) && im.Delay > 0 {
		t.n.DelayedReplies++
		t.replies = insert(t.replies, held{now.Add(im.Delay), t.copyOf(buf[:n])})
		return 0, false
	}
	if t.heldReply == nil && t.hit(im.Reorder) {
		t.n.ReorderedReplies++
		t.heldReply = &held{b: t.copyOf(buf[:n])}
		return 0, false
	}
	if t.hit(im.Duplicate) {
		t.n.DuplicateReplies++
		t.replies = insert(t.replies, held{now, t.copyOf(buf[:n])})
	}
	if t.heldReply != nil {
		// The reordered one comes right after this one.
		t.replies = insert(t.replies, held{now, t.heldReply.b})
		t.heldReply = nil
	}
	return n, true
}

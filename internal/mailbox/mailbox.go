// Package mailbox passes a request and its answer, one at a time, between
// two processes through memory they share: the asker writes the request
// and a sequence number, the answerer spins on the number while spinning
// pays, then sleeps until woken (a futex on Linux, an event object on
// Windows), and answers the same way (wait.go says when a spin pays). A
// handoff costs a few memory writes when the other side is awake, and one
// wake-up when it sleeps: far less than a pipe's two system calls and
// buffer copies each way.
//
// The asker is beamconnect, the answerer a child process it starts (the
// FMU host): Create makes the box, Attach hands it to the child's command,
// and the child takes it with FromEnv. InProcess makes the two ends of a
// box for two threads of one process (an FMU's in its own thread). The
// exported FMU's shim (fmuexport/shim/c) is an asker written in C: the
// layout below, and how a wait spins, are its contract too, written into
// its mailbox.h from these constants (TestCHeader).
package mailbox

//go:generate go test -run ^TestCHeader$ -args -update

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"beamconnect/internal/affinity"
)

// Errors of a handoff.
var (
	ErrDeadline = errors.New("mailbox: timed out: nothing came by the deadline")
	ErrClosed   = errors.New("mailbox: closed")
	ErrTorn     = errors.New("mailbox: the answer is torn (its sequence numbers disagree)")
	ErrTooLong  = errors.New("mailbox: the message is longer than the box")
	ErrNoBox    = errors.New("mailbox: this process was given no box")
)

// envName carries the box to the child: what it inherited, and the sizes,
// as key:number pairs.
const envName = "BEAMCONNECT_MAILBOX"

// fromEnv reads the box's key:number pairs from the environment.
func fromEnv() (map[string]uint64, error) {
	v, ok := os.LookupEnv(envName)
	if !ok {
		return nil, ErrNoBox
	}
	got := map[string]uint64{}
	for _, kv := range strings.Split(v, ",") {
		k, n, _ := strings.Cut(kv, ":")
		x, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("mailbox: %s=%q: %w", envName, v, err)
		}
		got[k] = x
	}
	return got, nil
}

// setEnv hands the pairs to cmd's environment.
func setEnv(cmd *exec.Cmd, pairs string) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, envName+"="+pairs)
}

// The control block: each direction's words on a cache line of their own,
// so one direction's writes do not slow the other's reads.
const (
	offReqSeq   = 0   // the request's sequence number (a futex word)
	offReqLen   = 4   // its length
	offReqSleep = 8   // the answerer sleeps (or is about to)
	offReqStamp = 16  // when the request was published (the clock's ns, 64 bits)
	offReqCPU   = 24  // the asker's processor (affinity.Processor) when it wants the answerer beside it, else 0
	offAnsSeq   = 64  // the sequence number of the request answered (a futex word)
	offAnsLen   = 68  // the answer's length
	offAnsSleep = 72  // the asker sleeps (or is about to)
	offAnsStamp = 80  // when the answer was published
	offAnsBeat  = 88  // when the answerer last showed it works on the request (Beat)
	offAnsBusy  = 96  // 1 while the answerer's waits find the cores busy, else 0
	offClosed   = 128 // either side closed the box
	ctlSize     = 192
	// An answer is framed by its sequence number before and after it, so
	// an answer being written (or scribbled over) cannot pass for whole.
	ansFrame = 8
)

// Box is one end of a mailbox.
type Box struct {
	mem      []byte
	reqCap   int
	ansCap   int
	req, ans []byte
	seq      uint32 // the asker's last request; the answerer's last seen
	spin     spinner
	wake     waker
	// beside: this side's waits do not spin, as the other side runs on
	// this processor (the asker asked for it, the answerer followed).
	beside  bool
	follow  affinity.Follower // the answerer's thread, moved to the asker's processor
	release func() error
	file    *os.File  // the shared memory's file (unix)
	mapping mapHandle // the shared memory's mapping (Windows)
	// life orders Close and Release, which may come from two goroutines
	// (a Close when the other process is gone, a Release when this one
	// ends): a Close after Release touches no memory that is unmapped.
	life sync.Mutex
}

// layout sizes a box for requests and answers of at most reqCap and ansCap
// bytes.
func layout(reqCap, ansCap int) int { return ctlSize + reqCap + ansCap + ansFrame }

// BusyPoll makes this end's waits spin until what they wait for comes,
// never asleep: the lowest latency, a core kept busy (the coupling's
// --busy-poll).
func (b *Box) BusyPoll() { b.spin.limit = -1 }

// init lays the box out over mem; asker says which end this is.
func (b *Box) init(mem []byte, reqCap, ansCap int, asker bool) {
	b.spin = newSpinner(answererSpin)
	if asker {
		b.spin = newSpinner(askerSpin)
	}
	b.mem, b.reqCap, b.ansCap = mem, reqCap, ansCap
	b.req = mem[ctlSize : ctlSize+reqCap]
	b.ans = mem[ctlSize+reqCap : ctlSize+reqCap+ansCap+ansFrame]
}

func (b *Box) word(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&b.mem[off])) }

// stamp is the 64-bit word at off (8-byte aligned: the box starts on a
// page, or a cache line in process).
func (b *Box) stamp(off int) *atomic.Int64 { return (*atomic.Int64)(unsafe.Pointer(&b.mem[off])) }

// Request is where the asker writes its next request.
func (b *Box) Request() []byte { return b.req }

// Ask publishes the request written in Request()[:n] and wakes the
// answerer if it sleeps. One request is outstanding at a time: Ask after
// an Await that failed replaces a request the answerer has not taken, or
// follows one it is still answering (its answer then is not this one's).
func (b *Box) Ask(n int) error {
	if n > b.reqCap {
		return ErrTooLong
	}
	if b.word(offClosed).Load() != 0 {
		return ErrClosed
	}
	b.seq++
	b.word(offReqLen).Store(uint32(n))
	now := b.spin.clock.now()
	// While either side's waits find the cores busy, the answerer is
	// asked to run on this processor: the handoffs are then switches on
	// one core, not wake-ups sent to another (wait.go).
	p := affinity.Processor(0)
	if b.spin.limit >= 0 && (b.spin.busyAt(now) || b.word(offAnsBusy).Load() != 0) {
		p = affinity.Current()
	}
	b.beside = p != 0
	b.word(offReqCPU).Store(uint32(p))
	b.stamp(offReqStamp).Store(now)
	b.word(offReqSeq).Store(b.seq)
	if b.word(offReqSleep).Load() != 0 {
		b.wake.wake(b, offReqSeq)
	}
	return nil
}

// Await waits for the answer to the last request until the deadline (the
// zero time: for ever); ErrDeadline says it timed out. The answer is valid
// until the next Ask. An answer to an older request is passed over.
func (b *Box) Await(deadline time.Time) ([]byte, error) {
	if !b.awaitWord(offAnsSeq, offAnsSleep, offAnsStamp, b.seq, deadline) {
		if b.word(offClosed).Load() != 0 {
			return nil, ErrClosed
		}
		return nil, ErrDeadline
	}
	n := int(b.word(offAnsLen).Load())
	if n > b.ansCap {
		return nil, ErrTorn
	}
	if binary.LittleEndian.Uint32(b.ans) != b.seq || binary.LittleEndian.Uint32(b.ans[4+n:]) != b.seq {
		return nil, ErrTorn
	}
	return b.ans[4 : 4+n], nil
}

// Answered reports whether the answer to the last request has come (Await
// then returns it at once).
func (b *Box) Answered() bool { return int32(b.word(offAnsSeq).Load()-b.seq) >= 0 }

// Next waits for a new request until the deadline (the zero time: for
// ever); it returns the request, valid until Reply. It ends with
// ErrClosed when the asker closes the box, ErrDeadline when it timed out.
func (b *Box) Next(deadline time.Time) ([]byte, error) {
	if !b.awaitWord(offReqSeq, offReqSleep, offReqStamp, b.seq+1, deadline) {
		if b.word(offClosed).Load() != 0 {
			return nil, ErrClosed
		}
		return nil, ErrDeadline
	}
	b.seq = b.word(offReqSeq).Load()
	b.beside = b.follow.Follow(affinity.Processor(b.word(offReqCPU).Load()))
	n := int(b.word(offReqLen).Load())
	if n > b.reqCap {
		return nil, ErrTooLong
	}
	return b.req[:n], nil
}

// Beat shows the asker that the answerer works on the request (its answer
// takes long: it waits for something of its own): it stamps the box with
// the clock. An asker that sees neither an answer nor a beat for long
// knows the answering process is not running at all (stopped, hung), not
// merely waiting. The exported FMU's shim reads it (OFF_ANS_BEAT).
func (b *Box) Beat() { b.stamp(offAnsBeat).Store(b.spin.clock.now()) }

// Superseded reports, to the answerer, that the asker published a newer
// request than the one in hand: it gave up on that one (its wait ended),
// and takes no answer to it. Next returns the newer one.
func (b *Box) Superseded() bool { return b.word(offReqSeq).Load() != b.seq }

// Answer is where the answerer writes its answer.
func (b *Box) Answer() []byte { return b.ans[4 : 4+b.ansCap] }

// Reply publishes the answer written in Answer()[:n] to the request Next
// returned, and wakes the asker if it sleeps.
func (b *Box) Reply(n int) error {
	if n > b.ansCap {
		return ErrTooLong
	}
	binary.LittleEndian.PutUint32(b.ans, b.seq)
	binary.LittleEndian.PutUint32(b.ans[4+n:], b.seq)
	b.word(offAnsLen).Store(uint32(n))
	now := b.spin.clock.now()
	busy := uint32(0)
	if b.spin.busyAt(now) {
		busy = 1
	}
	b.word(offAnsBusy).Store(busy)
	b.stamp(offAnsStamp).Store(now)
	b.word(offAnsSeq).Store(b.seq)
	if b.word(offAnsSleep).Load() != 0 {
		b.wake.wake(b, offAnsSeq)
	}
	return nil
}

// Close closes the box for both sides: a wait on either ends. The memory
// is released when both have let go of it. Close may come from any
// goroutine, before or after Release (then it does nothing).
func (b *Box) Close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.mem == nil {
		return nil
	}
	b.word(offClosed).Store(1)
	b.wake.wake(b, offReqSeq)
	b.wake.wake(b, offAnsSeq)
	return nil
}

// Release unmaps the box; call it after Close, once no wait can be in
// progress on this side. A Close from another goroutine waits for it, and
// after it does nothing.
func (b *Box) Release() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.mem == nil || b.release == nil {
		return nil
	}
	err := b.release()
	b.mem, b.req, b.ans = nil, nil, nil
	return err
}

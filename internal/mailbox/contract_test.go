package mailbox

import (
	"flag"
	"testing"
	"time"

	"beamconnect/internal/cheader"
)

var update = flag.Bool("update", false, "write the shim's mailbox.h (fmuexport/shim/c) from this package's constants")

// The exported FMU's shim asks through this package's boxes in C: its
// mailbox.h, the box's layout and how a wait spins, is written from the
// constants here, and must be what they write. After changing one:
// `go generate ./internal/mailbox`, then `bash fmuexport/shim/build`.
func TestCHeader(t *testing.T) {
	ns := func(d time.Duration) int64 { return d.Nanoseconds() }
	h := cheader.Write("BEAMCONNECT_MAILBOX_H",
		"The mailbox's contract (internal/mailbox), which the shim's asking side mirrors: the control block's words (each side's on a cache line of its own), their offsets in bytes, and how a wait spins before it sleeps (wait.go).",
		"internal/mailbox's TestCHeader (go generate ./internal/mailbox)",
		[]cheader.Define{
			cheader.String("MAILBOX_ENV", envName, "The environment variable that hands the box to the child."),
			cheader.Int("OFF_REQ_SEQ", offReqSeq, "The request's sequence number (a futex word)."),
			cheader.Int("OFF_REQ_LEN", offReqLen, "The request's length."),
			cheader.Int("OFF_REQ_SLEEP", offReqSleep, "The answerer sleeps (or is about to)."),
			cheader.Int("OFF_REQ_STAMP", offReqStamp, "When the request was published: the clock (CLOCK_MONOTONIC, or the performance counter, in ns), 64 bits."),
			cheader.Int("OFF_REQ_CPU", offReqCPU, "While the asker's or the answerer's waits find the cores busy (below), the processor the asker runs on, so that the answerer runs beside it: 1 + the processor's number (Linux: getcpu), 1 + 64 x its group + its number (Windows: GetCurrentProcessorNumberEx); 0 otherwise. An asker that names one does not spin: the answerer needs its processor. The shim names none: its child hands each call to other goroutines, which a thread held on one processor would turn into thread switches."),
			cheader.Int("OFF_ANS_SEQ", offAnsSeq, "The sequence number of the request answered (a futex word)."),
			cheader.Int("OFF_ANS_LEN", offAnsLen, "The answer's length."),
			cheader.Int("OFF_ANS_SLEEP", offAnsSleep, "The asker sleeps (or is about to)."),
			cheader.Int("OFF_ANS_STAMP", offAnsStamp, "When the answer was published."),
			cheader.Int("OFF_ANS_BEAT", offAnsBeat, "When the answerer last showed it works on the request (the clock, 64 bits): a call that takes long is alive while this moves."),
			cheader.Int("OFF_ANS_BUSY", offAnsBusy, "1 while the answerer's waits find the cores busy, else 0: an asker that names its processor (OFF_REQ_CPU) does so while either side's do."),
			cheader.Int("OFF_CLOSED", offClosed, "Either side closed the box."),
			cheader.Int("CTL_SIZE", ctlSize, "The control block's size: the request follows it, then the answer."),
			cheader.Int("ANS_FRAME", ansFrame, "The answer's frame: its sequence number before it and after it."),
			cheader.Int("SPIN_ASKER_NS", ns(askerSpin), "An asker's wait spins at most this long (ns)."),
			cheader.Int("SPIN_LATE_NS", ns(lateGap), "A spin whose clock jumps by more, or a sleep woken later than this after the word's stamp, has waited for the processor (ns)..."),
			cheader.Int("SPIN_MIN_CALM_NS", ns(minCalm), "... and for this long (ns), doubling while it happens again..."),
			cheader.Int("SPIN_MAX_CALM_NS", ns(maxCalm), "... up to this..."),
			cheader.Int("SPIN_BUSY_NS", ns(busySpin), "... waits spin at most this long (ns): about what a sleep and its wake-up cost."),
			cheader.Int("SPIN_PROBE_EVERY", probeEvery, "While spins do not pay, every this many waits spins to see whether they do again."),
		})
	cheader.Check(t, "../../fmuexport/shim/c/mailbox.h", h, *update,
		"run `go generate ./internal/mailbox` and `bash fmuexport/shim/build`, and commit what they write")
}

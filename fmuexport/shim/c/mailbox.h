/* The mailbox's contract (internal/mailbox), which the shim's asking side
 * mirrors: the control block's words (each side's on a cache line of its
 * own), their offsets in bytes, and how a wait spins before it sleeps
 * (wait.go).
 *
 * Written by internal/mailbox's TestCHeader (go generate
 * ./internal/mailbox) from the Go constants: do not edit. */
#ifndef BEAMCONNECT_MAILBOX_H
#define BEAMCONNECT_MAILBOX_H

/* The environment variable that hands the box to the child. */
#define MAILBOX_ENV "BEAMCONNECT_MAILBOX"

/* The request's sequence number (a futex word). */
#define OFF_REQ_SEQ 0

/* The request's length. */
#define OFF_REQ_LEN 4

/* The answerer sleeps (or is about to). */
#define OFF_REQ_SLEEP 8

/* When the request was published: the clock (CLOCK_MONOTONIC, or the
 * performance counter, in ns), 64 bits. */
#define OFF_REQ_STAMP 16

/* While the asker's or the answerer's waits find the cores busy (below),
 * the processor the asker runs on, so that the answerer runs beside it: 1
 * + the processor's number (Linux: getcpu), 1 + 64 x its group + its
 * number (Windows: GetCurrentProcessorNumberEx); 0 otherwise. An asker
 * that names one does not spin: the answerer needs its processor. The shim
 * names none: its child hands each call to other goroutines, which a
 * thread held on one processor would turn into thread switches. */
#define OFF_REQ_CPU 24

/* The sequence number of the request answered (a futex word). */
#define OFF_ANS_SEQ 64

/* The answer's length. */
#define OFF_ANS_LEN 68

/* The asker sleeps (or is about to). */
#define OFF_ANS_SLEEP 72

/* When the answer was published. */
#define OFF_ANS_STAMP 80

/* When the answerer last showed it works on the request (the clock, 64
 * bits): a call that takes long is alive while this moves. */
#define OFF_ANS_BEAT 88

/* 1 while the answerer's waits find the cores busy, else 0: an asker that
 * names its processor (OFF_REQ_CPU) does so while either side's do. */
#define OFF_ANS_BUSY 96

/* Either side closed the box. */
#define OFF_CLOSED 128

/* The control block's size: the request follows it, then the answer. */
#define CTL_SIZE 192

/* The answer's frame: its sequence number before it and after it. */
#define ANS_FRAME 8

/* An asker's wait spins at most this long (ns). */
#define SPIN_ASKER_NS 300000

/* A spin whose clock jumps by more, or a sleep woken later than this after
 * the word's stamp, has waited for the processor (ns)... */
#define SPIN_LATE_NS 500000

/* ... and for this long (ns), doubling while it happens again... */
#define SPIN_MIN_CALM_NS 10000000

/* ... up to this... */
#define SPIN_MAX_CALM_NS 1000000000

/* ... waits spin at most this long (ns): about what a sleep and its
 * wake-up cost. */
#define SPIN_BUSY_NS 5000

/* While spins do not pay, every this many waits spins to see whether they
 * do again. */
#define SPIN_PROBE_EVERY 16

#endif

/* The master's interrupt while a call waits (see interrupt.h). Written for
 * beamconnect.
 *
 * Unix: a master that handles SIGINT or SIGTERM (Python turns SIGINT into
 * KeyboardInterrupt, a C master sets a flag it looks at between calls)
 * runs its handler at once, but looks at what it learnt only once the
 * FMU's call returns: a call that waits a minute for BeamNG held the
 * interrupt back a minute. And a Python master lost it altogether: its
 * handler's flag, set while the FMU waited, raised KeyboardInterrupt in
 * the next Python code to run, the master's logger that the FMU calls,
 * where ctypes can only print it ("Exception ignored on calling ctypes
 * callback function") and drop it. So while a call sleeps, a handler of
 * the shim's stands in for the master's: it only counts the signal, and
 * the wait, which looks at the count, ends the call with Error. When the
 * call has returned its last log line, the master's handler is put back
 * and the signal sent again to the master's process, once: the master
 * handles it as if it had come the moment the call returned. A master
 * that ignores the signal, or leaves it to end its process (the default),
 * is left as it is: nothing to hold back.
 *
 * Windows: a console's Ctrl-C (or Ctrl-Break, or its window closed) runs
 * the console handlers of the process, the last registered first, each on
 * a thread of its own. While a call sleeps, a handler of the shim's is
 * the last registered: it counts the event and returns FALSE, so that the
 * master's own handling goes on at once as it would have (the next
 * handler, or the process's end). */
#if !defined(_WIN32)
#define _GNU_SOURCE
#endif

#include "shim.h"

#if defined(_WIN32)
#include <windows.h>

static volatile LONG events;   /* every interrupt seen while watched */
static volatile LONG watchers; /* calls that watch */
static volatile LONG guard;    /* orders the handler's registration */

static BOOL WINAPI on_ctrl(DWORD type) {
	if (type == CTRL_C_EVENT || type == CTRL_BREAK_EVENT || type == CTRL_CLOSE_EVENT) InterlockedIncrement(&events);
	return FALSE; /* the master's own handling goes on */
}

static void lock(void) {
	while (InterlockedExchange(&guard, 1)) Sleep(1);
}
static void unlock(void) { InterlockedExchange(&guard, 0); }

void interrupt_watch(void) {
	lock();
	if (watchers++ == 0) SetConsoleCtrlHandler(on_ctrl, TRUE);
	unlock();
}

void interrupt_unwatch(void) {
	lock();
	if (--watchers == 0) SetConsoleCtrlHandler(on_ctrl, FALSE);
	unlock();
}

unsigned interrupt_count(void) { return (unsigned)InterlockedCompareExchange(&events, 0, 0); }

#else
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const int sigs[2] = {SIGINT, SIGTERM};
static struct sigaction masters[2]; /* the master's handlers, while the shim's stands in */
static int hooked[2];               /* the shim's handler stands in for the master's */
static int caught[2];               /* signals the shim's handler took, for the master */
static unsigned events;             /* every signal caught: a waiting call compares */
static int watchers;                /* calls that watch */
static int guard;                   /* orders the handlers' changes */

static void on_signal(int sig) {
	for (int i = 0; i < 2; i++)
		if (sig == sigs[i]) __atomic_add_fetch(&caught[i], 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&events, 1, __ATOMIC_SEQ_CST);
}

/* The lock is held for a few system calls: no thread library needed (the
 * library needs the C library alone). */
static void lock(void) {
	while (__atomic_exchange_n(&guard, 1, __ATOMIC_ACQUIRE)) {
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
}
static void unlock(void) { __atomic_store_n(&guard, 0, __ATOMIC_RELEASE); }

/* handles says whether the master's process runs a handler of its own for
 * a signal: neither ignored nor left to its default. */
static int handles(const struct sigaction *sa) {
	return (sa->sa_flags & SA_SIGINFO) || (sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN);
}

void interrupt_watch(void) {
	lock();
	if (watchers++ == 0) {
		for (int i = 0; i < 2; i++) {
			struct sigaction old, sa;
			if (sigaction(sigs[i], NULL, &old) != 0 || !handles(&old)) continue;
			memset(&sa, 0, sizeof sa);
			sa.sa_handler = on_signal;
			sigfillset(&sa.sa_mask);
			/* No SA_RESTART: a wait asleep on this thread wakes at once.
			 * SA_ONSTACK: a thread of a runtime that gives its signals a
			 * stack of their own (Go's) runs it there. */
			sa.sa_flags = SA_ONSTACK;
			masters[i] = old;
			if (sigaction(sigs[i], &sa, NULL) == 0) hooked[i] = 1;
		}
	}
	unlock();
}

void interrupt_unwatch(void) {
	int pass[2] = {0, 0};
	lock();
	if (--watchers == 0) {
		for (int i = 0; i < 2; i++) {
			if (!hooked[i]) continue;
			struct sigaction cur;
			/* The master's handler back, unless the master set another
			 * meanwhile (then its own stays). */
			if (sigaction(sigs[i], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_signal)
				sigaction(sigs[i], &masters[i], NULL);
			hooked[i] = 0;
			pass[i] = __atomic_exchange_n(&caught[i], 0, __ATOMIC_SEQ_CST) != 0;
		}
	}
	unlock();
	/* What the shim took is the master's: once, now that the call has
	 * said its last (and after the lock: a master's handler may never
	 * return, longjmp out of it). */
	for (int i = 0; i < 2; i++)
		if (pass[i]) kill(getpid(), sigs[i]);
}

unsigned interrupt_count(void) { return __atomic_load_n(&events, __ATOMIC_SEQ_CST); }
#endif

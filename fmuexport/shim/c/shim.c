/* The shim's core (see shim.h). Written for beamconnect; the mailbox's
 * layout and how its waits spin are internal/mailbox's (mailbox.h), the
 * requests and answers fmuexport/child's (protocol.h): both headers are
 * written from the Go constants. */
#if !defined(_WIN32)
#define _GNU_SOURCE
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mailbox.h"
#include "shim.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
#endif

/* The mailbox (internal/mailbox, mailbox.h): a control block of words,
 * each side's on its own cache line, then the request, then the answer
 * framed by its sequence number before and after. */
#define REQ_CAP (256u * 1024u)
#define ANS_CAP (256u * 1024u)
#define BOX_SIZE (CTL_SIZE + REQ_CAP + ANS_CAP + ANS_FRAME)

/* How long the child may take to end once asked to (it leaves BeamNG
 * with neutral controls and closes the recording first). */
#define END_WAIT_MS 10000

/* How long the child may take to start and list the variables, before
 * the parameter processTimeout is known: a first start on Windows waits
 * for the virus scanner to read the executable. */
#define START_WAIT_MS 30000

/* How long a wait sleeps at most between two looks at the child (has it
 * ended, does it beat), at the interrupt, and at a free from another
 * thread. */
#define LOOK_MS 100

/* How a wait for an answer spins before it sleeps: as internal/mailbox's
 * waits do (wait.go, its figures in mailbox.h), it spins only while that
 * pays, then sleeps on the futex or the event, and never yields (a yield
 * hands a busy machine's processor away for a whole time slice). A spin
 * that loses the processor (its clock jumps) has met a machine with no
 * core to spare: for a calm period waits spin no longer than a sleep
 * costs (SPIN_BUSY_NS). Once most spins end without the answer (a slow
 * step), waits sleep at once, and every SPIN_PROBE_EVERY-th spins
 * again. */
typedef struct {
	int32_t score;    /* recent spins ended by the answer, in 1/256ths */
	uint32_t waits;   /* waits so far, for the probes */
	uint64_t calm_to; /* clock (ns) until which no wait spins */
	uint64_t calm;    /* the next calm period (ns) */
	uint64_t last_busy; /* clock (ns) a wait last waited for the processor */
} spinner;

/* What await_answer says: the answer came, the child ended (or closed
 * the box), the answer is torn, the child showed no sign of life for the
 * bound, the master's process was interrupted, the instance is being
 * freed. */
enum { AWAIT_OK = 0, AWAIT_GONE = -1, AWAIT_TORN = -2, AWAIT_SILENT = -3, AWAIT_INTERRUPTED = -4, AWAIT_CANCELLED = -5 };

struct shim {
	int major;
	char *name;
	shim_say say;
	void *ctx;
	int logging;
	unsigned cats;
	int state;
	double time, start, stop;
	int stop_defined;
	char *token, *resources;

	uint32_t nvars, nin, nout;
	shim_var *vars;
	uint32_t *in, *out;

	uint8_t *mem;
	uint32_t seq;
	uint64_t asked;    /* when the last request was published (clock ns) */
	spinner spin;      /* how the waits for an answer spin */
	int gone;          /* the child has ended */
	char how[64];      /* how it ended: "ended with status 2" */
	int silent;        /* it showed no sign of life for processTimeout */
	uint32_t bound_vr; /* the parameter processTimeout (nvars until known) */
	int listed;        /* the variables are known (and processTimeout's value) */

	int busy;          /* a call is in progress (shim_enter) */
	int cancel;        /* shim_free waits for the call in progress */
	const char *fn;    /* the function of the call in progress */
	int watching;      /* the call watches the master's interrupt */
	unsigned seen;     /* interrupt_count when it began to */
	char last[512];    /* its last line on stderr */
	char partial[512]; /* a line it has not finished */
	size_t npartial;
#if defined(_WIN32)
	wchar_t *exe;
	HANDLE process, stdin_w, stderr_r, map, req_ev, ans_ev;
#else
	char *exe;
	pid_t pid;
	int stdin_w, stderr_r;
#endif
};

/* ---- small helpers ---- */

static char *dup_str(const char *s) {
	size_t n = s ? strlen(s) : 0;
	char *d = malloc(n + 1);
	if (d) {
		if (n) memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

static void say(shim *s, int status, const char *category, const char *msg) {
	unsigned bit = !strcmp(category, "logStatusError") ? CAT_ERROR : !strcmp(category, "logStatusWarning") ? CAT_WARNING : CAT_EVENTS;
	/* Errors always; warnings unless the master turned their category
	 * off; the rest when the master asked for logging. */
	if (status < ST_ERROR) {
		if (status < ST_WARNING && !s->logging) return;
		if (s->logging && !(s->cats & bit)) return;
	}
	if (s->say) s->say(s->ctx, s->name, status, category, msg);
}

void shim_error(shim *s, const char *fmt, const char *arg) {
	char msg[1024];
	snprintf(msg, sizeof msg, fmt, arg ? arg : "");
	say(s, ST_ERROR, "logStatusError", msg);
}

static void sayf(shim *s, int status, const char *fmt, ...) {
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	say(s, status, status >= ST_ERROR ? "logStatusError" : status == ST_WARNING ? "logStatusWarning" : "logEvents", msg);
}

/* ---- the mailbox's words ---- */

static uint32_t *word(shim *s, int off) { return (uint32_t *)(void *)(s->mem + off); }
static uint32_t load(shim *s, int off) { return __atomic_load_n(word(s, off), __ATOMIC_SEQ_CST); }
static void store(shim *s, int off, uint32_t v) { __atomic_store_n(word(s, off), v, __ATOMIC_SEQ_CST); }
/* The 64-bit stamps (8-byte aligned: the mapping starts on a page). */
static int64_t *stamp(shim *s, int off) { return (int64_t *)(void *)(s->mem + off); }

#if defined(_WIN32)
static uint64_t now_ns(void) {
	static LARGE_INTEGER freq;
	LARGE_INTEGER c;
	if (!freq.QuadPart) QueryPerformanceFrequency(&freq);
	QueryPerformanceCounter(&c);
	uint64_t n = (uint64_t)c.QuadPart, f = freq.QuadPart > 0 ? (uint64_t)freq.QuadPart : 10000000u;
	return n / f * 1000000000u + n % f * 1000000000u / f;
}
static void wake(shim *s, int off) { SetEvent(off == OFF_REQ_SEQ ? s->req_ev : s->ans_ev); }
#else
static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* Not FUTEX_PRIVATE: the word is shared with the child. */
static void wake(shim *s, int off) { syscall(SYS_futex, word(s, off), FUTEX_WAKE, 1 << 30, NULL, NULL, 0); }
#endif

/* ---- the child's stderr: a crash report, or what should not be there ---- */

static void take_line(shim *s, int dying) {
	s->partial[s->npartial] = 0;
	if (s->npartial > 0 && s->partial[s->npartial - 1] == '\r') s->partial[--s->npartial] = 0;
	if (s->npartial > 0) {
		snprintf(s->last, sizeof s->last, "%s", s->partial);
		sayf(s, dying ? ST_ERROR : ST_WARNING, "beamconnect's coupling process says: %s", s->partial);
	}
	s->npartial = 0;
}

static void take_output(shim *s, const char *buf, size_t n, int dying) {
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			take_line(s, dying);
		} else if (s->npartial < sizeof s->partial - 1) {
			s->partial[s->npartial++] = buf[i];
		}
	}
}

/* drain reads what the child wrote to stderr without waiting. */
static void drain(shim *s, int dying) {
	char buf[4096];
#if defined(_WIN32)
	DWORD avail = 0, got = 0;
	while (s->stderr_r && PeekNamedPipe(s->stderr_r, NULL, 0, NULL, &avail, NULL) && avail > 0) {
		if (!ReadFile(s->stderr_r, buf, avail < sizeof buf ? avail : sizeof buf, &got, NULL) || got == 0) break;
		take_output(s, buf, got, dying);
	}
#else
	ssize_t got;
	while (s->stderr_r >= 0 && (got = read(s->stderr_r, buf, sizeof buf)) > 0) take_output(s, buf, (size_t)got, dying);
#endif
	if (dying) take_line(s, dying);
}

/* ended reports whether the child has ended (and reaps it), noting how
 * in s->how. */
static int ended(shim *s) {
	if (s->gone) return 1;
#if defined(_WIN32)
	DWORD code;
	if (!s->process || WaitForSingleObject(s->process, 0) == WAIT_OBJECT_0) {
		s->gone = 1;
		if (s->process && GetExitCodeProcess(s->process, &code)) snprintf(s->how, sizeof s->how, "ended with status %lu", code);
	}
#else
	int st;
	pid_t r = s->pid > 0 ? waitpid(s->pid, &st, WNOHANG) : -1;
	if (r == s->pid || (r < 0 && errno == ECHILD) || s->pid <= 0) {
		s->gone = 1;
		if (r == s->pid && WIFSIGNALED(st))
			snprintf(s->how, sizeof s->how, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (r == s->pid && WIFEXITED(st))
			snprintf(s->how, sizeof s->how, "ended with status %d", WEXITSTATUS(st));
	}
#endif
	return s->gone;
}

/* child_pid is the child's process id, for the log. */
static unsigned long child_pid(shim *s) {
#if defined(_WIN32)
	return s->process ? GetProcessId(s->process) : 0;
#else
	return s->pid > 0 ? (unsigned long)s->pid : 0;
#endif
}

/* wait_answer sleeps until the answer's word moves from cur, for at
 * most ms, or the child ends. */
static void wait_answer(shim *s, uint32_t cur, int ms) {
#if defined(_WIN32)
	HANDLE h[2] = {s->ans_ev, s->process};
	(void)cur;
	WaitForMultipleObjects(2, h, FALSE, (DWORD)ms);
#else
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	syscall(SYS_futex, word(s, OFF_ANS_SEQ), FUTEX_WAIT, cur, &ts, NULL, 0);
#endif
}

/* ask publishes the request of n bytes written at the request's place. */
static int ask(shim *s, uint32_t n) {
	if (s->gone || load(s, OFF_CLOSED)) return -1;
	s->seq++;
	s->asked = now_ns();
	store(s, OFF_REQ_LEN, n);
	__atomic_store_n(stamp(s, OFF_REQ_STAMP), (int64_t)now_ns(), __ATOMIC_SEQ_CST);
	store(s, OFF_REQ_SEQ, s->seq);
	if (load(s, OFF_REQ_SLEEP)) wake(s, OFF_REQ_SEQ);
	return 0;
}

static int answered(shim *s) { return (int32_t)(load(s, OFF_ANS_SEQ) - s->seq) >= 0; }

/* spin_budget is how long (ns) the wait starting at now may spin. */
static uint64_t spin_budget(spinner *sp, uint64_t now) {
	sp->waits++;
	if (sp->score < 128 && sp->waits % SPIN_PROBE_EVERY != 0) return 0;
	if (now < sp->calm_to) return SPIN_BUSY_NS;
	return SPIN_ASKER_NS;
}

static void spun(spinner *sp, int caught) {
	sp->score += ((caught ? 256 : 0) - sp->score) / 8;
	if (caught && sp->score > 248) sp->score = 256;
}

static void busy(spinner *sp, uint64_t now) {
	if (now - sp->last_busy > 4 * (uint64_t)SPIN_MAX_CALM_NS) sp->calm = SPIN_MIN_CALM_NS;
	sp->last_busy = now;
	sp->calm_to = now + sp->calm;
	sp->calm = 2 * sp->calm < SPIN_MAX_CALM_NS ? 2 * sp->calm : SPIN_MAX_CALM_NS;
}

/* spin looks for the answer until it comes, the budget (ns) is spent or
 * the deadline (clock ns; 0: none) passes, and notes what it learnt. */
static int spin(shim *s, uint64_t start, uint64_t budget, uint64_t deadline) {
	uint64_t last = start;
	for (unsigned i = 0;; i++) {
		if (answered(s)) {
			spun(&s->spin, 1);
			return 1;
		}
		if ((i & 7) != 7) continue;
		uint64_t now = now_ns();
		if (now - last > SPIN_LATE_NS) {
			busy(&s->spin, now);
			return answered(s);
		}
		if (now - start >= budget) {
			spun(&s->spin, 0);
			return answered(s);
		}
		if (deadline && now >= deadline) return answered(s);
		last = now;
	}
}

/* bound is how long (ns) a call waits for a sign of life from the child
 * (an answer, or its beat while it waits for BeamNG): the parameter
 * processTimeout (0: for ever); START_WAIT_MS while the child starts and
 * lists the variables. A value the child will refuse (under a second, not
 * a number) counts as the parameter's start value meanwhile. */
static uint64_t bound(shim *s) {
	if (!s->listed || s->bound_vr >= s->nvars) return (uint64_t)START_WAIT_MS * 1000000u;
	shim_var *v = &s->vars[s->bound_vr];
	double secs = v->value;
	if (secs == 0) return 0;
	if (!(secs >= 1)) secs = v->start >= 1 ? v->start : 1;
	if (secs > 1e6) secs = 1e6;
	return (uint64_t)(secs * 1e9);
}

/* watch starts watching the master's interrupt, once per call: the
 * interrupts from now on end the call's waits. */
static void watch(shim *s) {
	if (s->watching) return;
	s->seen = interrupt_count();
	s->watching = 1;
	interrupt_watch();
}

/* unwatch stops watching; the interrupts seen go to the master's own
 * handling. */
static void unwatch(shim *s) {
	if (!s->watching) return;
	s->watching = 0;
	interrupt_unwatch();
}

/* await_answer waits for the answer to the last request: a spin while
 * that pays (the answer to a step of a fast master comes within
 * microseconds of BeamNG's message), then asleep, looking every LOOK_MS
 * whether the child still lives and shows a sign of life (an answer, a
 * beat) within the bound, whether the master's process was interrupted,
 * whether the instance is being freed. AWAIT_OK with the answer at p, n
 * bytes; else what ended the wait. */
static int await_answer(shim *s, const uint8_t **p, uint32_t *n) {
	if (!answered(s)) {
		uint64_t start = now_ns(), budget = spin_budget(&s->spin, start);
		if (budget > 0) spin(s, start, budget, 0);
	}
	while (!answered(s)) {
		drain(s, 0);
		if (ended(s) || load(s, OFF_CLOSED)) {
			if (answered(s)) break; /* it answered, then ended */
			return AWAIT_GONE;
		}
		if (__atomic_load_n(&s->cancel, __ATOMIC_SEQ_CST)) return AWAIT_CANCELLED;
		if (s->watching && interrupt_count() != s->seen) return AWAIT_INTERRUPTED;
		int ms = LOOK_MS;
		uint64_t limit = bound(s);
		if (limit) {
			uint64_t now = now_ns(), last = s->asked;
			int64_t beat = __atomic_load_n(stamp(s, OFF_ANS_BEAT), __ATOMIC_SEQ_CST);
			if (beat > 0 && (uint64_t)beat > last) last = (uint64_t)beat;
			if (now >= last + limit) {
				if (answered(s)) break;
				return AWAIT_SILENT;
			}
			if (last + limit - now < (uint64_t)LOOK_MS * 1000000u) ms = (int)((last + limit - now + 999999u) / 1000000u);
		}
		watch(s);
		store(s, OFF_ANS_SLEEP, 1);
		uint32_t cur = load(s, OFF_ANS_SEQ);
		if ((int32_t)(cur - s->seq) < 0 && !load(s, OFF_CLOSED)) wait_answer(s, cur, ms);
		store(s, OFF_ANS_SLEEP, 0);
		if (answered(s)) {
			/* Woken later than a wake-up takes after the answer: the
			 * machine's cores are busy. */
			uint64_t now = now_ns();
			int64_t at = __atomic_load_n(stamp(s, OFF_ANS_STAMP), __ATOMIC_SEQ_CST);
			if ((int64_t)now - at > SPIN_LATE_NS) busy(&s->spin, now);
		}
	}
	uint32_t len = load(s, OFF_ANS_LEN);
	const uint8_t *ans = s->mem + CTL_SIZE + REQ_CAP;
	uint32_t head, tail;
	if (len > ANS_CAP) return AWAIT_TORN;
	memcpy(&head, ans, 4);
	memcpy(&tail, ans + 4 + len, 4);
	if (head != s->seq || tail != s->seq) return AWAIT_TORN;
	*p = ans + 4;
	*n = len;
	return AWAIT_OK;
}

/* ---- requests and answers (little-endian, as x86-64 is) ---- */

typedef struct {
	uint8_t *p;
	uint32_t n, cap;
	int bad;
} wbuf;

static void put(wbuf *w, const void *v, uint32_t n) {
	if (w->bad || w->cap - w->n < n) {
		w->bad = 1;
		return;
	}
	memcpy(w->p + w->n, v, n);
	w->n += n;
}
static void put_u8(wbuf *w, uint8_t v) { put(w, &v, 1); }
static void put_u32(wbuf *w, uint32_t v) { put(w, &v, 4); }
static void put_f64(wbuf *w, double v) { put(w, &v, 8); }
static void put_str(wbuf *w, const char *s) {
	uint32_t n = s ? (uint32_t)strlen(s) : 0;
	put_u32(w, n);
	put(w, s, n);
}

typedef struct {
	const uint8_t *p;
	uint32_t n, at;
	int bad;
} rbuf;

static int get(rbuf *r, void *v, uint32_t n) {
	if (r->bad || r->n - r->at < n) {
		r->bad = 1;
		memset(v, 0, n);
		return 0;
	}
	memcpy(v, r->p + r->at, n);
	r->at += n;
	return 1;
}
static uint8_t get_u8(rbuf *r) {
	uint8_t v;
	get(r, &v, 1);
	return v;
}
static uint32_t get_u32(rbuf *r) {
	uint32_t v;
	get(r, &v, 4);
	return v;
}
static double get_f64(rbuf *r) {
	double v;
	get(r, &v, 8);
	return v;
}
/* get_str returns a malloc'd copy. */
static char *get_str(rbuf *r) {
	uint32_t n = get_u32(r);
	if (r->bad || r->n - r->at < n) {
		r->bad = 1;
		return NULL;
	}
	char *s = malloc((size_t)n + 1);
	if (!s) {
		r->bad = 1;
		return NULL;
	}
	memcpy(s, r->p + r->at, n);
	s[n] = 0;
	r->at += n;
	return s;
}

static wbuf request(shim *s, char type) {
	wbuf w = {s->mem + CTL_SIZE, 0, REQ_CAP, 0};
	put_u8(&w, (uint8_t)type);
	return w;
}

static void child_lost(shim *s) {
	drain(s, 1);
	s->state = S_FAILED;
	const char *how = s->how[0] ? s->how : "ended";
	if (s->last[0])
		sayf(s, ST_ERROR, "%s: beamconnect's coupling process %s: %s", s->fn, how, s->last);
	else
		sayf(s, ST_ERROR, "%s: beamconnect's coupling process %s without a word", s->fn, how);
}

/* broken stops a child that no longer speaks the protocol: nothing it
 * says can be trusted. */
static int broken(shim *s, const char *what) {
	sayf(s, ST_ERROR, "%s: beamconnect's coupling process %s: it is stopped", s->fn, what);
#if defined(_WIN32)
	TerminateProcess(s->process, 1);
#else
	kill(s->pid, SIGKILL);
#endif
	s->state = S_FAILED;
	return -1;
}

/* given_up says why a call gave its wait up (AWAIT_SILENT, _INTERRUPTED,
 * _CANCELLED); the instance takes no more steps. */
static int given_up(shim *s, int why) {
	s->state = S_FAILED;
	switch (why) {
	case AWAIT_SILENT:
		s->silent = 1;
		if (s->listed)
			sayf(s, ST_ERROR,
			     "%s: beamconnect's coupling process (pid %lu) did not answer within %g s (parameter processTimeout), nor show "
			     "that it waits for BeamNG, as it does while it waits: it is stopped or hung. The call fails, and the instance "
			     "takes no more steps: terminate or free it (its process is then ended), or reset it (a new process)",
			     s->fn, child_pid(s), (double)bound(s) / 1e9);
		else
			sayf(s, ST_ERROR, "%s: beamconnect's coupling process (pid %lu) started but did not answer within %g s: it is stopped or hung",
			     s->fn, child_pid(s), (double)bound(s) / 1e9);
		break;
	case AWAIT_INTERRUPTED:
		sayf(s, ST_ERROR,
		     "%s: interrupted: the master's process was asked to stop (Ctrl-C) while the call waited; it fails, and the "
		     "instance takes no more steps (terminate, free or reset it)",
		     s->fn);
		break;
	default:
		sayf(s, ST_ERROR, "%s: the instance is being freed (from another thread): the call ends", s->fn);
	}
	return -1;
}

/* call sends the request written in w and returns the answer's result
 * (a status) with r at its payload, having logged its log lines; the
 * answers that say "more to come" are followed. -1: no answer (the child
 * is gone or silent, the master interrupted: said). Each answer, and each
 * beat of the child, starts the bound of the wait again: a call lasts
 * while the child works on it (its own timeouts, connectTimeout and
 * silenceTimeout, bound what it waits for). */
static int call(shim *s, wbuf *w, rbuf *r) {
	if (w->bad) {
		sayf(s, ST_ERROR, "the request is larger than the shared memory holds (%u bytes)", REQ_CAP);
		return -1;
	}
	if (ask(s, w->n) != 0) {
		child_lost(s);
		return -1;
	}
	for (;;) {
		const uint8_t *p;
		uint32_t n;
		int e = await_answer(s, &p, &n);
		if (e == AWAIT_TORN) return broken(s, "answered out of turn");
		if (e == AWAIT_GONE) {
			child_lost(s);
			return -1;
		}
		if (e != AWAIT_OK) return given_up(s, e);
		*r = (rbuf){p, n, 0, 0};
		uint8_t result = get_u8(r);
		uint32_t nlogs = get_u32(r);
		for (uint32_t i = 0; i < nlogs && !r->bad; i++) {
			uint8_t st = get_u8(r);
			char *cat = get_str(r), *msg = get_str(r);
			if (cat && msg) say(s, st, cat, msg);
			free(cat);
			free(msg);
		}
		if (r->bad) return broken(s, "answered what the shim cannot read");
		if (result != RESULT_PENDING) return result;
		wbuf more = request(s, REQ_CONTINUE);
		if (ask(s, more.n) != 0) {
			child_lost(s);
			return -1;
		}
	}
}

/* ---- finding beamconnect and the resources ---- */

#if defined(_WIN32)
/* decimal appends v in decimal to s. */
static void decimal(char *s, uint64_t v) {
	char d[24];
	int i = 23;
	d[i] = 0;
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	strcat(s, d + i);
}

static wchar_t *widen(const char *s) {
	int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
	wchar_t *w = n > 0 ? malloc(sizeof(wchar_t) * (size_t)n) : NULL;
	if (w) MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n);
	return w;
}
static char *narrow(const wchar_t *w) {
	int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
	char *s = n > 0 ? malloc((size_t)n) : NULL;
	if (s) WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
	return s;
}

/* own_folder is the folder this library was loaded from. */
static wchar_t *own_folder(void) {
	HMODULE mod = NULL;
	if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
	                        (LPCWSTR)(void *)&own_folder, &mod))
		return NULL;
	DWORD cap = MAX_PATH;
	for (;;) {
		wchar_t *buf = malloc(sizeof(wchar_t) * cap);
		if (!buf) return NULL;
		DWORD n = GetModuleFileNameW(mod, buf, cap);
		if (n == 0) {
			free(buf);
			return NULL;
		}
		if (n < cap) {
			wchar_t *slash = wcsrchr(buf, L'\\');
			if (!slash) slash = wcsrchr(buf, L'/');
			if (slash) *slash = 0;
			return buf;
		}
		free(buf);
		cap *= 2;
	}
}
#else
/* own_folder is the folder this library was loaded from: the mapping of
 * its code in /proc/self/maps (dladdr would tie the library to a newer C
 * library than it needs). */
static char *own_folder(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f) return NULL;
	uintptr_t me = (uintptr_t)(void *)&own_folder;
	char line[8192];
	char *found = NULL;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || me < lo || me >= hi) continue;
		char *p = strchr(line, '/');
		if (!p) break;
		p[strcspn(p, "\n")] = 0;
		char *del = strstr(p, " (deleted)");
		if (del && del[10] == 0) *del = 0;
		char *slash = strrchr(p, '/');
		if (slash) *slash = 0;
		found = dup_str(p);
	}
	fclose(f);
	return found;
}
#endif

static int hexval(char c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/* uri_path turns FMI 2.0's resource location (a file: URI) into a path;
 * anything else is taken as a path. */
static char *uri_path(const char *uri) {
	if (strncmp(uri, "file:", 5) != 0) return dup_str(uri);
	const char *p = uri + 5;
	char *out = malloc(strlen(uri) + 3), *o = out;
	if (!out) return NULL;
	if (p[0] == '/' && p[1] == '/') {
		const char *host = p + 2, *end = strchr(host, '/');
		if (!end) end = host + strlen(host);
		if (end != host && !(end - host == 9 && !strncmp(host, "localhost", 9))) {
			/* file://server/share/…: a UNC path */
			*o++ = '/';
			*o++ = '/';
			memcpy(o, host, (size_t)(end - host));
			o += end - host;
		}
		p = end;
	}
#if defined(_WIN32)
	/* file:///C:/…: the drive letter follows the slash */
	if (p[0] == '/' && p[1] && p[2] == ':') p++;
#endif
	for (; *p; p++) {
		int a, b;
		if (*p == '%' && (a = hexval(p[1])) >= 0 && (b = hexval(p[2])) >= 0) {
			*o++ = (char)(a * 16 + b);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = 0;
	return out;
}

/* ---- the child ---- */

static const char *mailbox_var = MAILBOX_ENV;

#if defined(_WIN32)
static int start_child(shim *s) {
	SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
	HANDLE in_r = NULL, err_w = NULL;
	if (!CreatePipe(&in_r, &s->stdin_w, &sa, 0) || !CreatePipe(&s->stderr_r, &err_w, &sa, 0)) {
		sayf(s, ST_ERROR, "cannot make the coupling process's pipes (error %lu)", GetLastError());
		return -1;
	}
	SetHandleInformation(s->stdin_w, HANDLE_FLAG_INHERIT, 0);
	SetHandleInformation(s->stderr_r, HANDLE_FLAG_INHERIT, 0);
	s->map = CreateFileMappingW(INVALID_HANDLE_VALUE, &sa, PAGE_READWRITE, 0, BOX_SIZE, NULL);
	s->req_ev = CreateEventW(&sa, FALSE, FALSE, NULL);
	s->ans_ev = CreateEventW(&sa, FALSE, FALSE, NULL);
	if (!s->map || !s->req_ev || !s->ans_ev || !(s->mem = MapViewOfFile(s->map, FILE_MAP_WRITE, 0, 0, BOX_SIZE))) {
		sayf(s, ST_ERROR, "cannot make the shared memory the coupling process answers through (error %lu)", GetLastError());
		CloseHandle(in_r);
		CloseHandle(err_w);
		return -1;
	}
	/* The environment: this process's, and the mailbox's handles. */
	char var8[200];
	strcpy(var8, mailbox_var);
	strcat(var8, "=map:");
	decimal(var8, (uint64_t)(uintptr_t)s->map);
	strcat(var8, ",reqev:");
	decimal(var8, (uint64_t)(uintptr_t)s->req_ev);
	strcat(var8, ",ansev:");
	decimal(var8, (uint64_t)(uintptr_t)s->ans_ev);
	strcat(var8, ",req:");
	decimal(var8, REQ_CAP);
	strcat(var8, ",ans:");
	decimal(var8, ANS_CAP);
	wchar_t *var = widen(var8);
	wchar_t *env = GetEnvironmentStringsW(), *e;
	size_t len = 0;
	for (e = env; *e; e += wcslen(e) + 1) len += wcslen(e) + 1;
	wchar_t *block = var ? malloc(sizeof(wchar_t) * (len + wcslen(var) + 2)) : NULL, *b = block;
	for (e = env; block && *e; e += wcslen(e) + 1) {
		if (_wcsnicmp(e, L"" MAILBOX_ENV L"=", sizeof MAILBOX_ENV) == 0) continue;
		wcscpy(b, e);
		b += wcslen(e) + 1;
	}
	if (block) {
		wcscpy(b, var);
		b += wcslen(var) + 1;
		*b = 0;
	}
	FreeEnvironmentStringsW(env);
	free(var);
	/* Exactly these handles are inherited, not whatever else of the
	 * master's is inheritable. */
	HANDLE inherit[5] = {in_r, err_w, s->map, s->req_ev, s->ans_ev};
	SIZE_T size = 0;
	InitializeProcThreadAttributeList(NULL, 1, 0, &size);
	LPPROC_THREAD_ATTRIBUTE_LIST attrs = malloc(size);
	STARTUPINFOEXW si;
	memset(&si, 0, sizeof si);
	si.StartupInfo.cb = sizeof si;
	si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
	si.StartupInfo.hStdInput = in_r;
	si.StartupInfo.hStdOutput = err_w;
	si.StartupInfo.hStdError = err_w;
	int ok = attrs && InitializeProcThreadAttributeList(attrs, 1, 0, &size) &&
	         UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit, sizeof inherit, NULL, NULL);
	si.lpAttributeList = attrs;
	wchar_t *cmdline = malloc(sizeof(wchar_t) * (wcslen(s->exe) + 32));
	if (cmdline) {
		wcscpy(cmdline, L"\"");
		wcscat(cmdline, s->exe);
		wcscat(cmdline, L"\" fmu-export-child");
	}
	PROCESS_INFORMATION pi;
	/* No console window of its own for a master without one (Simulink);
	 * a process group of its own, so the console's Ctrl-C reaches the
	 * master, whose end ends the child. */
	ok = ok && block && cmdline && CreateProcessW(s->exe, cmdline, NULL, NULL, TRUE,
	                                   CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT | CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP,
	                                   block, NULL, &si.StartupInfo, &pi);
	DWORD err = GetLastError();
	if (attrs) DeleteProcThreadAttributeList(attrs);
	free(attrs);
	free(block);
	free(cmdline);
	CloseHandle(in_r);
	CloseHandle(err_w);
	if (!ok) {
		char *exe = narrow(s->exe);
		char msg[64];
		snprintf(msg, sizeof msg, "%lu", err);
		sayf(s, ST_ERROR, "cannot start beamconnect's coupling process %s (error %s): the FMU carries it beside its library", exe ? exe : "", msg);
		free(exe);
		return -1;
	}
	CloseHandle(pi.hThread);
	s->process = pi.hProcess;
	return 0;
}
#else
/* high moves fd above the standard ones and the mailbox's (3), keeping it
 * closed on exec: only what the child is given by number survives. */
static int high(int fd) {
	if (fd < 0) return fd;
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	close(fd);
	return h;
}

static int start_child(shim *s) {
	int in[2] = {-1, -1}, err[2] = {-1, -1}, mem = -1;
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		sayf(s, ST_ERROR, "cannot make the coupling process's pipes: %s", strerror(errno));
		return -1;
	}
	in[0] = high(in[0]), in[1] = high(in[1]), err[0] = high(err[0]), err[1] = high(err[1]);
#ifdef SYS_memfd_create
	mem = (int)syscall(SYS_memfd_create, "beamconnect-mailbox", 1u /* MFD_CLOEXEC */);
#endif
	if (mem < 0) {
		char path[] = "/dev/shm/beamconnect-mailbox-XXXXXX";
		mem = mkstemp(path);
		if (mem >= 0) {
			unlink(path);
			fcntl(mem, F_SETFD, FD_CLOEXEC);
		}
	}
	mem = high(mem);
	if (mem < 0 || ftruncate(mem, BOX_SIZE) != 0 ||
	    (s->mem = mmap(NULL, BOX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mem, 0)) == MAP_FAILED) {
		s->mem = NULL;
		sayf(s, ST_ERROR, "cannot make the shared memory the coupling process answers through: %s", strerror(errno));
		close(in[0]), close(in[1]), close(err[0]), close(err[1]);
		if (mem >= 0) close(mem);
		return -1;
	}
	size_t n = 0;
	while (environ && environ[n]) n++;
	char **env = malloc(sizeof(char *) * (n + 2)), var[128];
	size_t k = 0;
	snprintf(var, sizeof var, "%s=fd:3,req:%u,ans:%u", mailbox_var, REQ_CAP, ANS_CAP);
	for (size_t i = 0; env && i < n; i++)
		if (strncmp(environ[i], MAILBOX_ENV "=", sizeof MAILBOX_ENV) != 0) env[k++] = environ[i];
	if (env) {
		env[k++] = var;
		env[k] = NULL;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, err[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	posix_spawn_file_actions_adddup2(&fa, mem, 3);
	posix_spawnattr_init(&attr);
	/* A process group of its own: the terminal's Ctrl-C reaches the
	 * master, whose end ends the child; signals as a fresh program has
	 * them, whatever the master blocked or ignored. */
	sigset_t none, dflt;
	sigemptyset(&none);
	sigemptyset(&dflt);
	int sigs[] = {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&dflt, sigs[i]);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dflt);
	char *argv[] = {s->exe, "fmu-export-child", NULL};
	/* "Text file busy": the program is still open for writing somewhere.
	 * A master that unpacks the FMU while another of its threads starts a
	 * process leaves the file open in that child between its fork and its
	 * exec (close-on-exec closes it only then): it is closed moments
	 * later. Wait for that, up to 5 s, rather than fail the instance. */
	int e = ENOMEM;
	for (int tries = 0; env; tries++) {
		e = posix_spawn(&s->pid, s->exe, &fa, &attr, argv, env);
		if (e != ETXTBSY || tries == 500) break;
		struct timespec pause = {0, 10000000L};
		nanosleep(&pause, NULL);
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(env);
	close(in[0]);
	close(err[1]);
	close(mem);
	if (e != 0) {
		sayf(s, ST_ERROR, "cannot start beamconnect's coupling process %s: %s (the FMU carries it beside its library)", s->exe, strerror(e));
		close(in[1]);
		close(err[0]);
		s->pid = 0;
		return -1;
	}
	s->stdin_w = in[1];
	s->stderr_r = err[0];
	fcntl(s->stderr_r, F_SETFL, fcntl(s->stderr_r, F_GETFL) | O_NONBLOCK);
	return 0;
}
#endif

/* end_child asks the child to end (the mailbox closed, its stdin at its
 * end), waits for it, and kills it if it will not. */
static void end_child(shim *s) {
	if (s->mem) {
		store(s, OFF_CLOSED, 1);
		wake(s, OFF_REQ_SEQ);
		wake(s, OFF_ANS_SEQ);
	}
#if defined(_WIN32)
	if (s->stdin_w) CloseHandle(s->stdin_w);
	s->stdin_w = NULL;
	if (s->process && s->silent) {
		/* A child that did not answer may have its threads suspended (a
		 * debugger, a process explorer): they go on (ntdll's
		 * NtResumeProcess, looked up: the library links kernel32 alone),
		 * so that it sees the master's end and leaves BeamNG with
		 * neutral controls. */
		typedef LONG(WINAPI * resume_fn)(HANDLE);
		HMODULE nt = GetModuleHandleW(L"ntdll.dll");
		resume_fn resume = nt ? (resume_fn)(void (*)(void))GetProcAddress(nt, "NtResumeProcess") : NULL;
		if (resume) resume(s->process);
	}
	if (s->process) {
		if (WaitForSingleObject(s->process, END_WAIT_MS) != WAIT_OBJECT_0) TerminateProcess(s->process, 1);
		WaitForSingleObject(s->process, 5000);
		drain(s, 0);
		CloseHandle(s->process);
	}
	if (s->stderr_r) CloseHandle(s->stderr_r);
	if (s->mem) UnmapViewOfFile(s->mem);
	if (s->map) CloseHandle(s->map);
	if (s->req_ev) CloseHandle(s->req_ev);
	if (s->ans_ev) CloseHandle(s->ans_ev);
	s->process = s->stderr_r = s->map = s->req_ev = s->ans_ev = NULL;
#else
	if (s->stdin_w >= 0) close(s->stdin_w);
	s->stdin_w = -1;
	/* A child that is stopped (SIGSTOP, a terminal's) goes on, sees the
	 * master's end and leaves BeamNG with neutral controls. */
	if (s->pid > 0 && !ended(s)) kill(s->pid, SIGCONT);
	if (s->pid > 0) {
		uint64_t until = now_ns() + (uint64_t)END_WAIT_MS * 1000000u;
		while (!ended(s) && now_ns() < until) {
			struct timespec ts = {0, 10 * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (!ended(s)) {
			kill(-s->pid, SIGKILL);
			kill(s->pid, SIGKILL);
			int st;
			waitpid(s->pid, &st, 0);
		}
		drain(s, 0);
	}
	if (s->stderr_r >= 0) close(s->stderr_r);
	if (s->mem) munmap(s->mem, BOX_SIZE);
	s->stderr_r = -1;
	s->pid = 0;
#endif
	s->mem = NULL;
	s->gone = 1;
}

/* list_part reads a part of the list of variables, its total read: the
 * first the part lists (*have, the number read so far), how many, then
 * each. -1 when it cannot be read. */
static int list_part(shim *s, rbuf *r, uint32_t *have) {
	uint32_t first = get_u32(r), count = get_u32(r);
	if (r->bad || first != *have || count > s->nvars - first || (count == 0 && first < s->nvars)) return -1;
	for (uint32_t i = first; i < first + count && !r->bad; i++) {
		shim_var *v = &s->vars[i];
		if (get_u32(r) != i) r->bad = 1;
		v->type = get_u8(r);
		v->causality = get_u8(r);
		v->name = get_str(r);
		if (v->type == T_STRING) {
			v->starts = get_str(r);
			v->text = dup_str(v->starts);
		} else {
			v->start = v->value = get_f64(r);
		}
		if (v->type > T_STRING || v->causality > C_INDEPENDENT || (v->causality == C_INDEPENDENT && v->type != T_REAL)) r->bad = 1;
		if (v->causality == C_INPUT) s->in[s->nin++] = i;
		if (v->causality == C_OUTPUT) s->out[s->nout++] = i;
	}
	if (r->bad || r->at != r->n) return -1;
	*have = first + count;
	return 0;
}

/* open starts the child and asks it to open the FMU: it answers with the
 * variables. */
static int open_child(shim *s) {
	s->gone = 0;
	s->silent = 0;
	s->seq = 0;
	s->last[0] = 0;
	s->how[0] = 0;
	s->npartial = 0;
	s->listed = 0; /* it starts: START_WAIT_MS bounds the waits */
	if (start_child(s) != 0) return -1;
	wbuf w = request(s, REQ_OPEN);
	put_u32(&w, SHIM_PROTOCOL);
	put_u32(&w, (uint32_t)s->major);
	put_str(&w, s->name);
	put_str(&w, s->token);
	put_str(&w, s->resources);
	put_u8(&w, (uint8_t)(s->logging != 0));
	rbuf r;
	int res = call(s, &w, &r);
	if (res != ST_OK && res != ST_WARNING) return -1;
	/* processTimeout's value reference, then the list */
	uint32_t bound_vr = get_u32(&r);
	if (s->vars) { /* started again (a reset): it has the variables already */
		s->listed = 1;
		return 0;
	}
	/* The list comes in parts, as many variables as fit in an answer:
	 * the rest is asked for (REQ_LIST, from the first not yet listed). */
	uint32_t n = get_u32(&r);
	if (r.bad || n > (1u << 24)) {
		sayf(s, ST_ERROR, "beamconnect's coupling process listed the variables in a way the shim cannot read");
		return -1;
	}
	s->vars = calloc(n ? n : 1, sizeof(shim_var));
	s->in = calloc(n ? n : 1, sizeof(uint32_t));
	s->out = calloc(n ? n : 1, sizeof(uint32_t));
	if (!s->vars || !s->in || !s->out) {
		sayf(s, ST_ERROR, "out of memory");
		return -1;
	}
	s->nvars = n;
	for (uint32_t have = 0;;) {
		if (list_part(s, &r, &have) != 0) {
			sayf(s, ST_ERROR, "beamconnect's coupling process listed the variables in a way the shim cannot read");
			return -1;
		}
		if (have == n) {
			s->bound_vr = bound_vr < n && s->vars[bound_vr].type == T_REAL && s->vars[bound_vr].causality == C_PARAMETER ? bound_vr : n;
			s->listed = 1;
			return 0;
		}
		wbuf more = request(s, REQ_LIST);
		put_u32(&more, have);
		res = call(s, &more, &r);
		if (res != ST_OK && res != ST_WARNING) return -1;
		if (get_u32(&r) != n) r.bad = 1;
	}
}

/* ---- the instance ---- */

shim *shim_new(int major, const char *name, const char *token, const char *resources, int logging, shim_say sayfn,
               void *ctx) {
	shim *s = calloc(1, sizeof *s);
	if (!s) return NULL;
	s->major = major;
	s->name = dup_str(name ? name : "");
	s->token = dup_str(token ? token : "");
	s->say = sayfn;
	s->ctx = ctx;
	s->logging = logging;
	s->cats = CAT_ALL;
	s->state = S_INSTANTIATED;
	s->fn = major == 2 ? "fmi2Instantiate" : "fmi3InstantiateCoSimulation";
	s->spin.score = 256; /* spinning pays until a spin says otherwise */
	s->spin.calm = SPIN_MIN_CALM_NS;
#if !defined(_WIN32)
	s->stdin_w = s->stderr_r = -1;
#endif
#if defined(_WIN32)
	wchar_t *dir = own_folder();
	if (dir) {
		s->exe = malloc(sizeof(wchar_t) * (wcslen(dir) + 20));
		if (s->exe) {
			wcscpy(s->exe, dir);
			wcscat(s->exe, L"\\beamconnect.exe");
		}
	}
	char *dir8 = dir ? narrow(dir) : NULL;
	free(dir);
	const char *sep = "\\";
#else
	char *dir8 = own_folder();
	if (dir8) {
		s->exe = malloc(strlen(dir8) + 16);
		if (s->exe) {
			sprintf(s->exe, "%s/beamconnect", dir8);
			/* An unzipper that keeps no file modes leaves it not
			 * executable. */
			if (access(s->exe, X_OK) != 0) chmod(s->exe, 0755);
		}
	}
	const char *sep = "/";
#endif
	if (resources && resources[0]) {
		s->resources = uri_path(resources);
	} else if (dir8) {
		/* binaries/PLATFORM/ → resources/ */
		s->resources = malloc(strlen(dir8) + 32);
		if (s->resources) sprintf(s->resources, "%s%s..%s..%sresources", dir8, sep, sep, sep);
	}
	free(dir8);
	if (!s->exe || !s->resources || !s->name || !s->token) {
		sayf(s, ST_ERROR, "cannot find the folder the FMU's library was loaded from, where beamconnect's executable is");
		shim_free(s);
		return NULL;
	}
	int ok = open_child(s) == 0;
	unwatch(s);
	if (!ok) {
		shim_free(s);
		return NULL;
	}
	return s;
}

static void free_vars(shim *s) {
	for (uint32_t i = 0; s->vars && i < s->nvars; i++) {
		free(s->vars[i].name);
		free(s->vars[i].text);
		free(s->vars[i].starts);
	}
	free(s->vars);
	free(s->in);
	free(s->out);
	s->vars = NULL;
	s->in = s->out = NULL;
}

int shim_enter(shim *s, const char *fn) {
	int idle = 0;
	if (!__atomic_compare_exchange_n(&s->busy, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		const char *other = __atomic_load_n(&s->fn, __ATOMIC_RELAXED);
		sayf(s, ST_ERROR,
		     "%s: refused: another call on this instance (%s) is in progress, from another thread; FMI allows one call at a "
		     "time on an instance",
		     fn, other ? other : "?");
		return -1;
	}
	__atomic_store_n(&s->fn, fn, __ATOMIC_RELAXED);
	return 0;
}

void shim_leave(shim *s) {
	int watching = s->watching;
	s->watching = 0;
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	/* After the instance is let go: the master's handler, which may run
	 * now, may free it. */
	if (watching) interrupt_unwatch();
}

int shim_free(shim *s) {
	if (!s) return 0;
	/* A call in progress on another thread (FMI forbids it, but a crash
	 * is worse) ends at its wait's next look; then the instance goes. */
	__atomic_store_n(&s->cancel, 1, __ATOMIC_SEQ_CST);
	uint64_t until = now_ns() + (uint64_t)END_WAIT_MS * 1000000u;
	for (int idle = 0; !__atomic_compare_exchange_n(&s->busy, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED); idle = 0) {
		if (now_ns() > until) {
			__atomic_store_n(&s->cancel, 0, __ATOMIC_SEQ_CST);
			sayf(s, ST_ERROR, "the instance is freed while a call on it goes on (%s, from another thread), which did not end: it is left as it is",
			     __atomic_load_n(&s->fn, __ATOMIC_RELAXED));
			return -1;
		}
#if defined(_WIN32)
		Sleep(1);
#else
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
#endif
	}
	end_child(s);
	free_vars(s);
	free(s->name);
	free(s->token);
	free(s->resources);
	free(s->exe);
	free(s);
	return 0;
}

void shim_logging(shim *s, int on, size_t n, const char *const categories[]) {
	s->logging = on;
	if (n == 0) {
		s->cats = CAT_ALL;
		return;
	}
	s->cats = 0;
	for (size_t i = 0; i < n; i++) {
		if (!categories[i]) continue;
		if (!strcmp(categories[i], "logEvents")) s->cats |= CAT_EVENTS;
		if (!strcmp(categories[i], "logStatusWarning")) s->cats |= CAT_WARNING;
		if (!strcmp(categories[i], "logStatusError")) s->cats |= CAT_ERROR;
	}
}

double shim_time(shim *s) { return s->time; }
int shim_state(shim *s) { return s->state; }

int shim_setup(shim *s, double start, int stop_defined, double stop) {
	if (s->state != S_INSTANTIATED) {
		sayf(s, ST_ERROR, "the experiment is set up before initialization, not now");
		return ST_ERROR;
	}
	s->start = s->time = start;
	s->stop_defined = stop_defined;
	s->stop = stop;
	return ST_OK;
}

int shim_enter_initialization(shim *s) {
	if (s->state != S_INSTANTIATED) {
		sayf(s, ST_ERROR, "initialization mode is entered once, after instantiation (or a reset)");
		return ST_ERROR;
	}
	s->state = S_INITIALIZATION;
	return ST_OK;
}

/* outputs takes the answer's time and outputs. */
static int outputs(shim *s, rbuf *r) {
	double t = get_f64(r);
	uint32_t n = get_u32(r);
	if (r->bad || n != s->nout) {
		sayf(s, ST_ERROR, "beamconnect's coupling process answered with the wrong number of outputs");
		return ST_ERROR;
	}
	for (uint32_t i = 0; i < n; i++) s->vars[s->out[i]].value = get_f64(r);
	if (r->bad) return ST_ERROR;
	s->time = t;
	return ST_OK;
}

int shim_exit_initialization(shim *s) {
	if (s->state != S_INITIALIZATION) {
		sayf(s, ST_ERROR, "initialization mode is left once, after it was entered");
		return ST_ERROR;
	}
	wbuf w = request(s, REQ_INIT);
	put_f64(&w, s->start);
	put_u8(&w, (uint8_t)(s->stop_defined != 0));
	put_f64(&w, s->stop);
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->nvars; i++)
		if (s->vars[i].causality == C_INPUT || s->vars[i].causality == C_PARAMETER) n++;
	put_u32(&w, n);
	for (uint32_t i = 0; i < s->nvars; i++) {
		shim_var *v = &s->vars[i];
		if (v->causality != C_INPUT && v->causality != C_PARAMETER) continue;
		put_u32(&w, i);
		if (v->type == T_STRING)
			put_str(&w, v->text);
		else
			put_f64(&w, v->value);
	}
	rbuf r;
	int res = call(s, &w, &r);
	if (res < 0 || res >= ST_DISCARD) {
		s->state = S_FAILED;
		return res < 0 ? ST_ERROR : res;
	}
	if (outputs(s, &r) != ST_OK) {
		s->state = S_FAILED;
		return ST_ERROR;
	}
	s->state = S_STEP;
	return res;
}

int shim_do_step(shim *s, double t, double h) {
	if (s->state != S_STEP) {
		sayf(s, ST_ERROR, s->state == S_FAILED ? "the instance failed before: it takes no more steps (free it, or reset it)"
		                                      : "a step comes after initialization, before termination");
		return ST_ERROR;
	}
	wbuf w = request(s, REQ_STEP);
	put_f64(&w, t);
	put_f64(&w, h);
	put_u32(&w, s->nin);
	for (uint32_t i = 0; i < s->nin; i++) put_f64(&w, s->vars[s->in[i]].value);
	rbuf r;
	int res = call(s, &w, &r);
	if (res < 0 || res >= ST_ERROR) {
		s->state = S_FAILED;
		return res < 0 ? ST_ERROR : res;
	}
	if (res == ST_DISCARD) return res;
	if (outputs(s, &r) != ST_OK) {
		s->state = S_FAILED;
		return ST_ERROR;
	}
	return res;
}

int shim_terminate(shim *s) {
	if (s->state == S_TERMINATED) return ST_OK;
	int res = ST_OK;
	if (s->silent && !s->gone) {
		/* Nothing it would say can be waited for: it is asked to end
		 * (a stopped one goes on to), and killed if it does not. */
		sayf(s, ST_WARNING, "%s: beamconnect's coupling process stopped answering before: it is ended, not asked for the run's summary", s->fn);
		end_child(s);
		res = ST_WARNING;
	} else if (!s->gone && (s->state == S_INITIALIZATION || s->state == S_STEP || s->state == S_FAILED)) {
		wbuf w = request(s, REQ_TERMINATE);
		rbuf r;
		res = call(s, &w, &r);
		if (res < 0) res = ST_ERROR;
	}
	s->state = S_TERMINATED;
	return res;
}

int shim_reset(shim *s) {
	for (uint32_t i = 0; i < s->nvars; i++) {
		shim_var *v = &s->vars[i];
		v->value = v->start;
		if (v->type == T_STRING) {
			free(v->text);
			v->text = dup_str(v->starts);
		}
	}
	s->time = s->start = 0;
	s->stop_defined = 0;
	int res = ST_ERROR;
	if (!s->gone && !s->silent) {
		wbuf w = request(s, REQ_RESET);
		rbuf r;
		res = call(s, &w, &r);
	}
	if (res < 0 || res >= ST_ERROR) {
		/* The child failed or ended: a new one. */
		end_child(s);
		if (open_child(s) != 0) {
			s->state = S_FAILED;
			return ST_ERROR;
		}
		res = ST_OK;
	}
	s->state = S_INSTANTIATED;
	return res;
}

/* ---- values ---- */

static const char *type_name(shim *s, int type) {
	static const char *names2[] = {"Real", "Integer", "String"}, *names3[] = {"Float64", "Int32", "String"};
	return s->major == 2 ? names2[type] : names3[type];
}

/* lookup checks a value reference for a get or set of type. */
static shim_var *lookup(shim *s, const char *fn, uint32_t vr, int type) {
	if (vr >= s->nvars) {
		char msg[64];
		snprintf(msg, sizeof msg, "%u", vr);
		sayf(s, ST_ERROR, "%s: value reference %s is no variable of the FMU (it has 0 to %u)", fn, msg, s->nvars - 1);
		return NULL;
	}
	shim_var *v = &s->vars[vr];
	if (v->type != type) {
		sayf(s, ST_ERROR, "%s: %s is of type %s, not %s", fn, v->name, type_name(s, v->type), type_name(s, type));
		return NULL;
	}
	return v;
}

/* settable checks that v may be set now. */
static int settable(shim *s, const char *fn, shim_var *v) {
	if (v->causality == C_OUTPUT) {
		sayf(s, ST_ERROR, "%s: %s is an output (one of BeamNG's signals): it cannot be set", fn, v->name);
		return 0;
	}
	if (v->causality == C_INDEPENDENT) {
		sayf(s, ST_ERROR, "%s: %s is the independent variable: the master sets it by its start time and its steps, never by a set", fn,
		     v->name);
		return 0;
	}
	if (v->causality == C_PARAMETER && s->state != S_INSTANTIATED && s->state != S_INITIALIZATION) {
		sayf(s, ST_ERROR, "%s: %s is a fixed parameter: it is set before initialization ends, not now", fn, v->name);
		return 0;
	}
	if (s->state == S_TERMINATED || s->state == S_FAILED) {
		sayf(s, ST_ERROR, "%s: the instance is %s: nothing is set any more", fn, s->state == S_FAILED ? "failed" : "terminated");
		return 0;
	}
	return 1;
}

int shim_get_real(shim *s, const char *fn, const uint32_t vr[], size_t n, double out[]) {
	for (size_t i = 0; i < n; i++) {
		shim_var *v = lookup(s, fn, vr[i], T_REAL);
		if (!v) return ST_ERROR;
		out[i] = v->causality == C_INDEPENDENT ? s->time : v->value;
	}
	return ST_OK;
}

int shim_get_integer(shim *s, const char *fn, const uint32_t vr[], size_t n, int32_t out[]) {
	for (size_t i = 0; i < n; i++) {
		shim_var *v = lookup(s, fn, vr[i], T_INTEGER);
		if (!v) return ST_ERROR;
		out[i] = (int32_t)v->value;
	}
	return ST_OK;
}

int shim_get_string(shim *s, const char *fn, const uint32_t vr[], size_t n, const char *out[]) {
	for (size_t i = 0; i < n; i++) {
		shim_var *v = lookup(s, fn, vr[i], T_STRING);
		if (!v) return ST_ERROR;
		out[i] = v->text ? v->text : "";
	}
	return ST_OK;
}

int shim_set_real(shim *s, const char *fn, const uint32_t vr[], size_t n, const double in[]) {
	for (size_t i = 0; i < n; i++) {
		shim_var *v = lookup(s, fn, vr[i], T_REAL);
		if (!v || !settable(s, fn, v)) return ST_ERROR;
		v->value = in[i];
	}
	return ST_OK;
}

int shim_set_integer(shim *s, const char *fn, const uint32_t vr[], size_t n, const int32_t in[]) {
	for (size_t i = 0; i < n; i++) {
		shim_var *v = lookup(s, fn, vr[i], T_INTEGER);
		if (!v || !settable(s, fn, v)) return ST_ERROR;
		v->value = in[i];
	}
	return ST_OK;
}

int shim_set_string(shim *s, const char *fn, const uint32_t vr[], size_t n, const char *const in[]) {
	for (size_t i = 0; i < n; i++) {
		shim_var *v = lookup(s, fn, vr[i], T_STRING);
		if (!v || !settable(s, fn, v)) return ST_ERROR;
		char *d = dup_str(in[i] ? in[i] : "");
		if (!d) return ST_ERROR;
		free(v->text);
		v->text = d;
	}
	return ST_OK;
}

int shim_no_type(shim *s, const char *fn, const char *type, size_t n) {
	if (n == 0) return ST_OK;
	sayf(s, ST_ERROR, "%s: the FMU has no variable of type %s", fn, type);
	return ST_ERROR;
}

int shim_unsupported(shim *s, const char *fn) {
	if (s)
		sayf(s, ST_ERROR, "%s: not provided by this FMU (a co-simulation FMU that couples BeamNG.tech)", fn);
	return ST_ERROR;
}

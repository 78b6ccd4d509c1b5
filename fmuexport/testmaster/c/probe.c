/* The tests' probes of an exported FMU's lifecycle, written for
 * beamconnect from the FMI 2.0 and 3.0 standards: what a master may do
 * that a plain run does not, each through the real library in this one
 * process.
 *
 * master -probe MODE DIR IDENTIFIER FMI TOKEN H TIMEVR [PARAM...]
 *   MODE cycles:N   N times: instantiate, initialize, 4 steps, terminate,
 *                   free; after each free, whether the FMU's process is
 *                   gone and the port it bound free again
 *        lifecycle  free after every state the standard allows: just
 *                   instantiated, in initialization mode, initialized,
 *                   stepping, after a failed call, terminated, reset,
 *                   initialized again after a reset
 *        threads:N  N rounds of two threads calling doStep(t, h) at once
 *                   on the one instance (which FMI forbids): at most one
 *                   may return OK
 *        interrupt  the master handles Ctrl-C (SIGINT; on Windows a
 *                   console handler) and is interrupted while
 *                   initialization waits for BeamNG
 *   H the step; TIMEVR the independent variable's value reference; PARAM
 *   as master.c's, set after each instantiation.
 * Before each initialization it says "master: BeamNG for K steps" (the
 * test starts BeamNG's side for them once the FMU waits). Each probe
 * says what it saw in lines "master: …"; the exit status is 0 when the
 * probe ran to its end, 10 for a bad command line or library. */
#if defined(_WIN32)
#include <winsock2.h>
#include <tlhelp32.h>
#else
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#endif

#include "master.h"

/* ---- one instance, either standard ---- */

typedef struct {
	int fmi;
	void *lib, *c;
	const char *dir, *id, *token;
	unsigned timevr;
	char **params;
	int nparams;
} fmu;

static fmi2Callbacks callbacks = {logger2, calloc, free, NULL, NULL};

static int set_params(fmu *f);

static int instantiate(fmu *f) {
	if (!f->lib) {
		char lib[4096];
		lib_path(lib, sizeof lib, f->dir, f->id, f->fmi);
		if (!(f->lib = lib_open(lib))) {
			fprintf(stderr, "master: cannot load %s\n", lib);
			exit(10);
		}
	}
	char res[4200];
	if (f->fmi == 2) {
		uri(res, sizeof res, f->dir);
		f->c = ((fmi2InstantiateFn)sym(f->lib, "fmi2Instantiate"))("master", 1, f->token, res, &callbacks, 0, 1);
	} else {
		snprintf(res, sizeof res, "%s%sresources%s", f->dir, SEP, SEP);
		f->c = ((fmi3InstantiateCoSimulationFn)sym(f->lib, "fmi3InstantiateCoSimulation"))(
		    "master", f->token, res, false, true, false, false, NULL, 0, NULL, logger3, NULL);
	}
	return f->c ? set_params(f) : 3;
}

/* set_params sets the parameters: after instantiation, and again after a
 * reset, which puts every variable back to its start value. */
static int set_params(fmu *f) {
	for (int i = 0; i < f->nparams; i++) {
		const char *p = f->params[i], *v = strchr(p, '=');
		unsigned vr = (unsigned)atoi(p + 2);
		int st = 0;
		if (!v) continue;
		v++;
		if (p[0] == 'r') {
			double d = atof(v);
			st = f->fmi == 2 ? ((fmi2SetRealFn)sym(f->lib, "fmi2SetReal"))(f->c, &vr, 1, &d)
			                 : ((fmi3SetFloat64Fn)sym(f->lib, "fmi3SetFloat64"))(f->c, &vr, 1, &d, 1);
		} else if (p[0] == 'i') {
			int n = atoi(v);
			st = f->fmi == 2 ? ((fmi2SetIntegerFn)sym(f->lib, "fmi2SetInteger"))(f->c, &vr, 1, &n)
			                 : ((fmi3SetInt32Fn)sym(f->lib, "fmi3SetInt32"))(f->c, &vr, 1, (int32_t *)&n, 1);
		} else {
			st = f->fmi == 2 ? ((fmi2SetStringFn)sym(f->lib, "fmi2SetString"))(f->c, &vr, 1, &v)
			                 : ((fmi3SetStringFn)sym(f->lib, "fmi3SetString"))(f->c, &vr, 1, &v, 1);
		}
		if (st > 1) return st;
	}
	return 0;
}

/* call calls a function of the instance alone, by its name without the
 * standard's prefix. */
static int call(fmu *f, const char *fn) {
	char name[64];
	snprintf(name, sizeof name, "fmi%d%s", f->fmi, fn);
	return f->fmi == 2 ? ((fmi2ComponentFn)sym(f->lib, name))(f->c) : ((fmi3InstanceFn)sym(f->lib, name))(f->c);
}

/* enter enters initialization mode, no stop time given. */
static int enter(fmu *f) {
	if (f->fmi == 3) return ((fmi3EnterInitializationModeFn)sym(f->lib, "fmi3EnterInitializationMode"))(f->c, false, 0, 0, false, 0);
	int st = ((fmi2SetupExperimentFn)sym(f->lib, "fmi2SetupExperiment"))(f->c, 0, 0, 0, 0, 0);
	return st > 1 ? st : call(f, "EnterInitializationMode");
}

static int step(fmu *f, double t, double h) {
	if (f->fmi == 2) return ((fmi2DoStepFn)sym(f->lib, "fmi2DoStep"))(f->c, t, h, 1);
	bool event, terminate, early;
	double last;
	return ((fmi3DoStepFn)sym(f->lib, "fmi3DoStep"))(f->c, t, h, true, &event, &terminate, &early, &last);
}

static double fmu_time(fmu *f) {
	double t = -1;
	if (f->fmi == 2)
		((fmi2GetRealFn)sym(f->lib, "fmi2GetReal"))(f->c, &f->timevr, 1, &t);
	else
		((fmi3GetFloat64Fn)sym(f->lib, "fmi3GetFloat64"))(f->c, &f->timevr, 1, &t, 1);
	return t;
}

static void free_instance(fmu *f) {
	if (f->fmi == 2)
		((fmi2FreeInstanceFn)sym(f->lib, "fmi2FreeInstance"))(f->c);
	else
		((fmi3FreeInstanceFn)sym(f->lib, "fmi3FreeInstance"))(f->c);
	f->c = NULL;
}

static void said(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	printf("master: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static const char *status(int st) { return st >= 0 && st <= 5 ? names[st] : "?"; }

/* initialize enters and leaves initialization mode once BeamNG is said to
 * send for steps steps. */
static int initialize(fmu *f, int steps) {
	int st = enter(f);
	if (st > 1) return st;
	said("BeamNG for %d steps", steps);
	return call(f, "ExitInitializationMode");
}

/* ---- after a free: the FMU's process, the port it bound ---- */

static char bound_ip[64];
static int bound_port;

/* on_log notes the address the FMU says it bound. */
static void on_log(const char *message) {
	const char *b = strstr(message, "bound=");
	char ip[64];
	int port;
	if (b && sscanf(b + 6, "%63[0-9.]:%d", ip, &port) == 2) {
		snprintf(bound_ip, sizeof bound_ip, "%s", ip);
		bound_port = port;
	}
}

/* port_free reports whether the port the FMU bound last can be bound. */
static int port_free(void) {
	if (!bound_port) return 0;
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)bound_port);
	a.sin_addr.s_addr = inet_addr(bound_ip);
#if defined(_WIN32)
	SOCKET s = socket(AF_INET, SOCK_DGRAM, 0);
	int ok = s != INVALID_SOCKET && bind(s, (struct sockaddr *)&a, sizeof a) == 0;
	if (s != INVALID_SOCKET) closesocket(s);
#else
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	int ok = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0;
	if (s >= 0) close(s);
#endif
	return ok;
}

/* children counts this process's child processes (a zombie too). */
static int children(void) {
	int n = 0;
#if defined(_WIN32)
	HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
	PROCESSENTRY32 pe;
	pe.dwSize = sizeof pe;
	for (BOOL more = Process32First(snap, &pe); more; more = Process32Next(snap, &pe))
		if (pe.th32ParentProcessID == GetCurrentProcessId()) n++;
	CloseHandle(snap);
#else
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *fp = fopen(path, "r");
		if (!fp) continue;
		size_t got = fread(buf, 1, sizeof buf - 1, fp);
		fclose(fp);
		buf[got] = 0;
		char *end = strrchr(buf, ')'), state;
		int ppid;
		if (end && sscanf(end + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid()) n++;
	}
	if (d) closedir(d);
#endif
	return n;
}

/* freed frees the instance and says what it left. */
static void freed(fmu *f, const char *what) {
	free_instance(f);
	int left = children(), port = port_free();
	said("%s: freed; processes left: %d; port %d free: %s", what, left, bound_port, port ? "yes" : "no");
	bound_port = 0;
}

/* ---- the probes ---- */

static void cycles(fmu *f, int n, double h) {
	for (int k = 1; k <= n; k++) {
		int st = instantiate(f);
		if (st <= 1) st = initialize(f, 4);
		for (int i = 0; i < 4 && st <= 1; i++) st = step(f, i * h, h);
		if (st <= 1) st = call(f, "Terminate");
		char what[64];
		snprintf(what, sizeof what, "cycle %d (%s)", k, status(st));
		if (f->c) freed(f, what);
	}
}

static void lifecycle(fmu *f, double h) {
	int st;
	instantiate(f);
	freed(f, "free after instantiation");
	instantiate(f);
	enter(f);
	freed(f, "free in initialization mode");
	instantiate(f);
	initialize(f, 0);
	freed(f, "free once initialized");
	instantiate(f);
	initialize(f, 2);
	step(f, 0, h);
	step(f, h, h);
	freed(f, "free while stepping");
	instantiate(f);
	initialize(f, 0);
	st = step(f, 0, NAN); /* no step BeamNG's messages fit: Error */
	said("a step of h = NaN returned %s", status(st));
	st = step(f, 0, h);
	said("a step after it returned %s", status(st));
	freed(f, "free after a failed step");
	instantiate(f);
	st = call(f, "ExitInitializationMode"); /* before entering it: Error */
	said("leaving initialization mode before entering it returned %s", status(st));
	freed(f, "free after a call out of order");
	instantiate(f);
	initialize(f, 1);
	step(f, 0, h);
	call(f, "Terminate");
	freed(f, "free once terminated");
	instantiate(f);
	initialize(f, 1);
	step(f, 0, h);
	st = call(f, "Reset");
	said("reset returned %s", status(st));
	freed(f, "free after a reset");
	instantiate(f);
	initialize(f, 1);
	step(f, 0, h);
	call(f, "Terminate");
	call(f, "Reset");
	set_params(f);
	st = initialize(f, 1);
	said("initialized again after a reset: %s", status(st));
	st = step(f, 0, h);
	said("a step of the second run returned %s", status(st));
	call(f, "Terminate");
	freed(f, "free after a second run");
}

/* Two threads call doStep(t, h) at once: the main one and another. Last,
 * the other frees the instance while the main one's step waits.
 *
 * The other thread calls only while the main one's call is under way
 * (calling holds the round): on a loaded machine a thread that naps may
 * wake after a whole step of the main one, and its call would then be a
 * second step from a time the FMU has left. Such a round is said and
 * tried again, up to twice the rounds asked for. */
typedef struct {
	fmu *f;
	double t, h;
	volatile int round, done, calling, freeing, late;
	int st;
	uint64_t from, to;
} second;

static uint64_t clock_ns(void) {
#if defined(_WIN32)
	LARGE_INTEGER c, fq;
	QueryPerformanceCounter(&c);
	QueryPerformanceFrequency(&fq);
	return (uint64_t)((double)c.QuadPart * 1e9 / (double)fq.QuadPart);
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static void nap(void) {
#if defined(_WIN32)
	Sleep(1);
#else
	struct timespec ts = {0, 200000};
	nanosleep(&ts, NULL);
#endif
}

#if defined(_WIN32)
static DWORD WINAPI second_thread(void *arg) {
#else
static void *second_thread(void *arg) {
#endif
	second *b = arg;
	for (int r = 1;; r++) {
		int at;
		while ((at = __atomic_load_n(&b->round, __ATOMIC_ACQUIRE)) >= 0 && at < r) nap();
		if (at < 0) break;
		if (b->freeing) {
			/* The main thread's step is under way (it waits for a
			 * BeamNG that sends no more): free the instance. */
			while (!__atomic_load_n(&b->calling, __ATOMIC_ACQUIRE)) nap();
			for (int i = 0; i < 500; i++) nap();
			free_instance(b->f);
			__atomic_store_n(&b->done, r, __ATOMIC_RELEASE);
			break;
		}
		b->late = __atomic_load_n(&b->calling, __ATOMIC_ACQUIRE) != r;
		if (!b->late) {
			b->from = clock_ns();
			b->st = step(b->f, b->t, b->h);
			b->to = clock_ns();
		}
		__atomic_store_n(&b->done, r, __ATOMIC_RELEASE);
	}
	return 0;
}

static void threads(fmu *f, int rounds, double h) {
	second b = {.f = f, .h = h};
	int st = instantiate(f);
	/* BeamNG for every round that may be tried, each a step of h. */
	if (st <= 1) st = initialize(f, 2 * rounds);
	if (st > 1) {
		said("initialization failed: %s", status(st));
		return;
	}
#if defined(_WIN32)
	HANDLE th = CreateThread(NULL, 0, second_thread, &b, 0, NULL);
#else
	pthread_t th;
	pthread_create(&th, NULL, second_thread, &b);
#endif
	int at_once = 0, both = 0, n = 0, late = 0, r;
	for (r = 1; n < rounds && r <= 2 * rounds; r++) {
		b.t = fmu_time(f);
		__atomic_store_n(&b.calling, r, __ATOMIC_RELEASE);
		__atomic_store_n(&b.round, r, __ATOMIC_RELEASE);
		uint64_t from = clock_ns();
		int mine = step(f, b.t, h);
		uint64_t to = clock_ns();
		__atomic_store_n(&b.calling, 0, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b.done, __ATOMIC_ACQUIRE) < r) nap();
		if (b.late) {
			late++;
			said("round %d: %s, the other thread came after the step: tried again", r, status(mine));
			if (mine > 1) break;
			continue;
		}
		n++;
		int overlap = b.from < to && from < b.to;
		at_once += overlap;
		both += mine <= 1 && b.st <= 1;
		said("round %d: %s and %s%s", r, status(mine), status(b.st), overlap ? ", at once" : ", one after the other");
		if (mine > 1 && b.st > 1) break;
		if (!overlap) break; /* the second found the instance a step on: it failed */
	}
	said("%d rounds, %d at once, %d with two OKs (%d tried again)", n, at_once, both, late);
	if (n == rounds && at_once == rounds) {
		/* A step longer than what BeamNG has left to send: once that is
		 * sent, it waits (silenceTimeout) while the other thread frees
		 * the instance. */
		b.freeing = 1;
		double t = fmu_time(f);
		fmu mine = *f; /* the other thread's free clears f->c */
		__atomic_store_n(&b.round, r, __ATOMIC_RELEASE);
		__atomic_store_n(&b.calling, 1, __ATOMIC_RELEASE);
		int st = step(&mine, t, 2 * rounds * h);
		while (__atomic_load_n(&b.done, __ATOMIC_ACQUIRE) < r) nap();
		said("a step while the other thread freed the instance returned %s", status(st));
		int left = children(), port = port_free();
		said("after the free from the other thread: freed; processes left: %d; port %d free: %s", left, bound_port, port ? "yes" : "no");
	} else {
		call(f, "Terminate");
		freed(f, "after the rounds");
	}
	__atomic_store_n(&b.round, -1, __ATOMIC_RELEASE);
#if defined(_WIN32)
	WaitForSingleObject(th, INFINITE);
	CloseHandle(th);
#else
	pthread_join(th, NULL);
#endif
}

static volatile int interrupted;

#if defined(_WIN32)
static BOOL WINAPI on_ctrl(DWORD type) {
	if (type != CTRL_C_EVENT) return FALSE;
	interrupted = 1;
	return TRUE; /* handled: the master goes on */
}
#else
static void on_sigint(int sig) {
	(void)sig;
	interrupted = 1;
}
#endif

static void interrupt(fmu *f) {
#if defined(_WIN32)
	SetConsoleCtrlHandler(on_ctrl, TRUE);
#else
	signal(SIGINT, on_sigint);
#endif
	int st = instantiate(f);
	if (st <= 1) st = enter(f);
	if (st > 1) {
		said("instantiation failed: %s", status(st));
		return;
	}
	said("initialization waits for BeamNG, which never comes: interrupt me");
	uint64_t from = clock_ns();
	st = call(f, "ExitInitializationMode");
	said("fmi%dExitInitializationMode returned %s after %.1f s; the master's own handler saw the interrupt: %s", f->fmi, status(st),
	     (double)(clock_ns() - from) / 1e9, interrupted ? "yes" : "no");
	st = call(f, "Terminate");
	said("terminate returned %s", status(st));
	freed(f, "after the interrupt");
}

int probe(int argc, char **argv) {
	if (argc < 7) {
		fprintf(stderr, "usage: master -probe MODE DIR IDENTIFIER FMI TOKEN H TIMEVR [PARAM...]\n");
		return 10;
	}
#if defined(_WIN32)
	WSADATA wsa;
	WSAStartup(MAKEWORD(2, 2), &wsa);
#endif
	log_hook = on_log;
	const char *mode = argv[0];
	fmu f = {atoi(argv[3]), NULL, NULL, argv[1], argv[2], argv[4], (unsigned)atoi(argv[6]), argv + 7, argc - 7};
	double h = number(argv[5]);
	if (!strncmp(mode, "cycles:", 7)) {
		cycles(&f, atoi(mode + 7), h);
	} else if (!strcmp(mode, "lifecycle")) {
		lifecycle(&f, h);
	} else if (!strncmp(mode, "threads:", 8)) {
		threads(&f, atoi(mode + 8), h);
	} else if (!strcmp(mode, "interrupt")) {
		interrupt(&f);
	} else {
		fprintf(stderr, "master: no probe %s\n", mode);
		return 10;
	}
	lib_close(f.lib);
	said("probe done");
	return 0;
}

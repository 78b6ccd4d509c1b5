/* Faults of the process an FMU runs in, for beamconnect's tests of the
 * FMU host: the fault kind (see cruise.h) 6 prints to stdout when
 * instantiated and at every step, as a debugging printf would; 7 starts a
 * helper process when instantiated (it sleeps a minute, holding whatever it
 * inherited) and, with a step n, crashes at that step; 8 calls exit(0) at
 * step n; 9 writes a 100 KB line to stderr at step n, then crashes. Unix
 * only: in a Windows build they do nothing.
 *
 * When the environment variable BEAMCONNECT_TEST_PIDS names a file, the
 * FMU appends "host PID" to it when instantiated (the process it runs in)
 * and "helper PID" for the helper it starts, so a test can look for them
 * after the run. */
#ifndef BEAMCONNECT_PROCESS_H
#define BEAMCONNECT_PROCESS_H

#if defined(_WIN32)
static void process_instantiated(void) {}
static void process_step(long n) { (void)n; }
#else

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void note_pid(const char *what, long pid) {
	const char *file = getenv("BEAMCONNECT_TEST_PIDS");
	if (!file || !*file) return;
	FILE *f = fopen(file, "a");
	if (!f) return;
	fprintf(f, "%s %ld\n", what, pid);
	fclose(f);
}

static void crash(void) {
	volatile int *nowhere = 0;
	*nowhere = 1;
}

/* process_instantiated runs when the FMU is instantiated. */
static void process_instantiated(void) {
	note_pid("host", (long)getpid());
	if (fault_kind() == 6) {
		printf("cruise: instantiated (a debugging printf on stdout)\n");
		fflush(stdout);
	}
	if (fault_kind() == 7) {
		pid_t pid = fork();
		if (pid == 0) {
			/* The helper: it keeps the host's pipes and outlives a minute
			 * unless someone ends it. */
			sleep(60);
			_exit(0);
		}
		if (pid > 0) note_pid("helper", (long)pid);
	}
}

/* process_step runs at every step, the n-th from 1. */
static void process_step(long n) {
	if (fault_kind() == 6) {
		printf("cruise: step %ld\n", n);
		fflush(stdout);
	}
	if (fault_after() == 0 || n != fault_after()) return;
	switch (fault_kind()) {
	case 7:
		crash();
		break;
	case 8:
		exit(0);
	case 9: {
		static char line[100 * 1024 + 2];
		memset(line, 'x', sizeof line - 2);
		line[sizeof line - 2] = '\n';
		fwrite(line, 1, sizeof line - 1, stderr);
		fflush(stderr);
		crash();
		break;
	}
	}
}

#endif /* _WIN32 */
#endif

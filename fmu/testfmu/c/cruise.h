/* A PI cruise controller: it reads the vehicle's speed and drives throttle
 * and brake to hold setSpeed, as beamconnect's built-in cruise-pedals
 * does. The FMI 2.0 and 3.0 wrappers (cruise2.c, cruise3.c) share it.
 *
 * It misbehaves on purpose from its n-th step on when its fault is set, for
 * beamconnect's tests of model faults: 1 crashes (a write through a null
 * pointer), 2 hangs (a loop that never ends), 3 returns an error status from
 * doStep, 4 outputs NaN, 5 stalls once: its n-th step takes 300 ms, then it
 * goes on as before; 6 to 9 are faults of the process it runs in
 * (process.h); 10 hangs once, for 2 s (asleep, so an abandoned thread costs
 * no CPU); 11 is slow: every step from the n-th on takes 2 ms; 12 outputs
 * NaN at its n-th step only; 13 ends the simulation at its n-th step,
 * halfway through it (FMI 2.0: fmi2Discard and fmi2Terminated; FMI 3.0:
 * terminateSimulation), saying why; 14 discards its n-th step without
 * asking to stop, unless it is shorter than 3/4 of its first (redone in
 * halves, it passes); 15 is jittery: every step from the n-th on takes 0
 * to 9 ms, drawn from a hash of the step's number (the same every run,
 * scattered like a loaded machine's hiccups). The fault is data, not code: testfmu compiles
 * the library once and writes a variant's kind and n over the digits of
 * fault_spec in the compiled binary, so one build serves every variant (and
 * a library cross-compiled for Windows serves tests that cannot compile). */
#ifndef BEAMCONNECT_CRUISE_H
#define BEAMCONNECT_CRUISE_H

#include <math.h>
#if defined(_WIN32)
#include <windows.h>
#else
#include <errno.h>
#include <time.h>
#endif

/* "beamconnect-testfmu-fault:" then the kind (two digits) and n (ten
 * digits). volatile: the compiler must read the bytes the binary holds. */
static volatile const char fault_spec[] = "beamconnect-testfmu-fault:00:0000000000";
#define FAULT_SPEC_DIGITS (sizeof "beamconnect-testfmu-fault:" - 1)

static int fault_kind(void) { return (fault_spec[FAULT_SPEC_DIGITS] - '0') * 10 + fault_spec[FAULT_SPEC_DIGITS + 1] - '0'; }

static long fault_after(void) {
	long n = 0;
	for (int i = FAULT_SPEC_DIGITS + 3; i < FAULT_SPEC_DIGITS + 13; i++) n = n * 10 + (fault_spec[i] - '0');
	return n;
}

/* sleep_ms sleeps ms milliseconds (the step's thread only), the whole of
 * them: a signal to the process ends nanosleep early whatever SA_RESTART
 * says, and in a Go program (the in-process FMU's host) every thread takes
 * them, a child's SIGCHLD among them. A "hang-2s" step once slept 0.6 s so,
 * beside tests that ended child processes. */
static void sleep_ms(long ms) {
#if defined(_WIN32)
	Sleep((DWORD)ms);
#else
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000};
	while (nanosleep(&d, &d) == -1 && errno == EINTR) {
	}
#endif
}

#include "process.h"

/* Value references, as modelDescription.xml lists them. VR_INDEPENDENT is
 * FMI 3.0's independent variable, time: the FMU's time, as VR_TIME. */
enum { VR_SET_SPEED, VR_KP, VR_KI, VR_MAX_THROTTLE, VR_SPEED, VR_THROTTLE, VR_BRAKE, VR_TIME, VR_SPEED_USED, VR_INDEPENDENT,
       VR_COUNT };

typedef struct {
	double v[VR_COUNT];
	double integral;
	long steps;
	double h0; /* the first step's size */
} cruise;

static void cruise_reset(cruise *c) {
	for (int i = 0; i < VR_COUNT; i++) c->v[i] = 0;
	c->v[VR_SET_SPEED] = 20;
	c->v[VR_KP] = 0.3;
	c->v[VR_KI] = 0.05;
	c->v[VR_MAX_THROTTLE] = 1;
	c->integral = 0;
	c->steps = 0;
	c->h0 = 0;
}

/* cruise_refuses says why a value cannot be set, or NULL when it can: the
 * gains are kept within 0..10, as a real controller's would be. */
static const char *cruise_refuses(unsigned vr, double v) {
	if (vr >= VR_COUNT || vr == VR_THROTTLE || vr == VR_BRAKE || vr == VR_TIME || vr == VR_SPEED_USED || vr == VR_INDEPENDENT)
		return "that variable cannot be set";
	if ((vr == VR_KP || vr == VR_KI) && !(v >= 0 && v <= 10)) return "a gain must be within 0..10";
	return 0;
}

/* cruise_stop_reason is what the FMU says when it ends the simulation. */
static const char *cruise_stop_reason(void) { return "the test track ends here (a test FMU that ends the simulation)"; }

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* cruise_step advances the controller from t by h. It returns 0, or the
 * fault kind it acted out. */
static int cruise_step(cruise *c, double t, double h) {
	int kind = fault_kind();
	c->steps++;
	/* The input this step computes from: a test tells by it which
	 * request an answer answers. */
	c->v[VR_SPEED_USED] = c->v[VR_SPEED];
	if (c->h0 == 0) c->h0 = h;
	process_step(c->steps);
	if (kind == 5 && c->steps == fault_after()) {
		sleep_ms(300);
	} else if (kind == 10 && c->steps == fault_after()) {
		sleep_ms(2000);
	} else if (kind == 11 && c->steps >= fault_after()) {
		sleep_ms(2);
	} else if (kind == 15 && c->steps >= fault_after()) {
		unsigned long x = (unsigned long)c->steps * 2654435761UL;
		x ^= x >> 13;
		x *= 0x5bd1e995UL;
		x ^= x >> 15;
		sleep_ms((long)(x % 10));
	} else if (kind == 12 && c->steps == fault_after()) {
		c->v[VR_THROTTLE] = NAN;
		c->v[VR_BRAKE] = NAN;
		c->v[VR_TIME] = t + h;
		return 4;
	} else if ((kind == 13 || (kind == 14 && !(h < 0.75 * c->h0))) && c->steps == fault_after()) {
		c->v[VR_TIME] = t + h / 2;
		return kind;
	} else if (kind >= 1 && kind <= 4 && c->steps >= fault_after()) {
		switch (kind) {
		case 1: {
			volatile int *nowhere = 0;
			*nowhere = 1;
			break;
		}
		case 2:
			for (volatile int spin = 1; spin;) {
			}
			break;
		case 3:
			return 3;
		case 4:
			c->v[VR_THROTTLE] = NAN;
			c->v[VR_BRAKE] = NAN;
			c->v[VR_TIME] = t + h;
			return 4;
		}
	}
	double hi = c->v[VR_MAX_THROTTLE], lo = -1;
	double err = c->v[VR_SET_SPEED] - c->v[VR_SPEED];
	double u = c->v[VR_KP] * err + c->v[VR_KI] * c->integral;
	/* Integrate only while the output is not saturated the same way. */
	if (!(u >= hi && err > 0) && !(u <= lo && err < 0)) c->integral += err * h;
	u = clamp(c->v[VR_KP] * err + c->v[VR_KI] * c->integral, lo, hi);
	c->v[VR_THROTTLE] = u > 0 ? u : 0;
	c->v[VR_BRAKE] = u < 0 ? -u : 0;
	c->v[VR_TIME] = t + h;
	return 0;
}

#endif

/* A PI cruise controller: it reads the vehicle's speed and drives throttle
 * and brake to hold setSpeed, as beamconnect's built-in cruise-pedals
 * does. The FMI 2.0 and 3.0 wrappers (cruise2.c, cruise3.c) share it.
 *
 * Built with -DFAULT_KIND=k -DFAULT_AFTER=n it misbehaves on purpose from
 * its n-th step on, for beamconnect's tests of model faults:
 * 1 crashes (a write through a null pointer), 2 hangs (a loop that never
 * ends), 3 returns an error status from doStep, 4 outputs NaN, 5 stalls
 * once: its n-th step takes 300 ms, then it goes on as before; 6 hangs
 * once, for 2 s (asleep, so an abandoned thread costs no CPU); 7 is slow:
 * every step from the n-th on takes 2 ms; 8 outputs NaN at its n-th step
 * only. */
#ifndef BEAMCONNECT_CRUISE_H
#define BEAMCONNECT_CRUISE_H

#include <math.h>
#include <time.h>

#ifndef FAULT_KIND
#define FAULT_KIND 0
#endif
#ifndef FAULT_AFTER
#define FAULT_AFTER 0
#endif

/* Value references, as modelDescription.xml lists them. */
enum { VR_SET_SPEED, VR_KP, VR_KI, VR_MAX_THROTTLE, VR_SPEED, VR_THROTTLE, VR_BRAKE, VR_TIME, VR_COUNT };

typedef struct {
	double v[VR_COUNT];
	double integral;
	long steps;
} cruise;

static void cruise_reset(cruise *c) {
	for (int i = 0; i < VR_COUNT; i++) c->v[i] = 0;
	c->v[VR_SET_SPEED] = 20;
	c->v[VR_KP] = 0.3;
	c->v[VR_KI] = 0.05;
	c->v[VR_MAX_THROTTLE] = 1;
	c->integral = 0;
	c->steps = 0;
}

/* cruise_refuses says why a value cannot be set, or NULL when it can: the
 * gains are kept within 0..10, as a real controller's would be. */
static const char *cruise_refuses(unsigned vr, double v) {
	if (vr >= VR_COUNT || vr == VR_THROTTLE || vr == VR_BRAKE || vr == VR_TIME) return "that variable cannot be set";
	if ((vr == VR_KP || vr == VR_KI) && !(v >= 0 && v <= 10)) return "a gain must be within 0..10";
	return 0;
}

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* cruise_step advances the controller from t by h. It returns 0, or the
 * fault kind it acted out. */
static int cruise_step(cruise *c, double t, double h) {
	c->steps++;
	if (FAULT_KIND == 5 && c->steps == FAULT_AFTER) {
		struct timespec stall = {0, 300000000};
		nanosleep(&stall, NULL);
	} else if (FAULT_KIND == 6 && c->steps == FAULT_AFTER) {
		struct timespec hang = {2, 0};
		nanosleep(&hang, NULL);
	} else if (FAULT_KIND == 7 && c->steps >= FAULT_AFTER) {
		struct timespec slow = {0, 2000000};
		nanosleep(&slow, NULL);
	} else if (FAULT_KIND == 8 && c->steps == FAULT_AFTER) {
		c->v[VR_THROTTLE] = NAN;
		c->v[VR_BRAKE] = NAN;
		c->v[VR_TIME] = t + h;
		return 4;
	} else if (FAULT_KIND >= 1 && FAULT_KIND <= 4 && c->steps >= FAULT_AFTER) {
		switch (FAULT_KIND) {
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

/* Model Exchange test models: the equations only, shared by the FMI 2.0
 * and 3.0 wrappers (me2.c, me3.c). One model is compiled in, chosen with
 * -DMODEL_BALL, -DMODEL_DECAY, -DMODEL_VDP or -DMODEL_CHAIN. Every
 * variable is a double r[vr] (value reference vr): the NX states first,
 * their derivatives next (vr NX to 2 NX - 1), then parameters and inputs.
 *
 * ball: a bouncing ball dropped from h0. h' = v, v' = -g; the event
 *   indicator is h; at h <= 0 falling, v becomes -e v and h 0; once a
 *   bounce leaves it slower than vmin it rests on the floor. With stopAfter
 *   > 0 it asks to end the simulation at that bounce.
 * decay: x' = -k x + u + mode × boost, x(0) = 1, u a continuous input,
 *   boost a discrete one (DISCRETE_INPUT: the wrappers refuse it outside
 *   event mode once initialized, as FMI has it), mode an enumeration
 *   input (INT_INPUT: Eco 1, Sport 2; an Integer of FMI 2.0, an Int64 of
 *   FMI 3.0, discrete too); k is tunable (TUNABLE: refused outside event
 *   mode once initialized); at the time event tKick (when >= 0) x jumps
 *   by 1.
 * vdp: the Van der Pol oscillator x1' = x2, x2' = mu (1 - x1^2) x2 - x1,
 *   from (2, 0).
 * chain: NOSC = 5 Van der Pol oscillators of mu, 1.2 mu … (10 states): a
 *   model of a size the benchmark asks for.
 * nan: x' = -x / 10, x(0) = 1, until the time tNaN, from which on the
 *   derivative is NaN; the output y = fmin(x, 0.8) stays a number (C's
 *   fmin ignores a NaN): only the state and its derivative show it.
 * stiff: a fast state x following a slow one y: x' = lambda (y - x),
 *   y' = -a y, from x = 0, y = 1; an explicit solver is stable only for
 *   steps h with h lambda below its limit (2 for Euler, 2.785 for RK4).
 *   The event indicator y - 0.5 changes its sign once, at ln 2 / a.
 * stair: no states; the output counter is 1 and rises by 1 at every
 *   whole second, by time events (the next one always announced; the
 *   counter rises once the FMU's time has reached it, exactly). */
#ifndef BEAMCONNECT_MEMODEL_H
#define BEAMCONNECT_MEMODEL_H

#include <math.h>
#include <string.h>

#if defined(MODEL_BALL)
#define NX 2
#define NZ 1
enum { VR_H, VR_V, VR_DH, VR_DV, VR_G, VR_E, VR_H0, VR_VMIN, VR_STOP, VR_BOUNCES, NR };
#elif defined(MODEL_DECAY)
#define NX 1
#define NZ 0
enum { VR_X, VR_DX, VR_K, VR_U, VR_KICK, VR_BOOST, VR_MODE, NR };
#define DISCRETE_INPUT VR_BOOST
#define INT_INPUT VR_MODE
#define TUNABLE VR_K
#elif defined(MODEL_VDP)
#define NX 2
#define NZ 0
enum { VR_X1, VR_X2, VR_D1, VR_D2, VR_MU, NR };
#elif defined(MODEL_CHAIN)
#define NOSC 5
#define NX (2 * NOSC)
#define NZ 0
enum { VR_MU = 2 * NX, NR };
#elif defined(MODEL_NAN)
#define NX 1
#define NZ 0
enum { VR_X, VR_DX, VR_TNAN, VR_Y, NR };
#elif defined(MODEL_STIFF)
#define NX 2
#define NZ 1
enum { VR_X, VR_Y, VR_DX, VR_DY, VR_LAMBDA, VR_A, VR_Z, NR };
#elif defined(MODEL_STAIR)
#define NX 0
#define NZ 0
enum { VR_COUNTER, NR };
#else
#error "define one of MODEL_BALL, MODEL_DECAY, MODEL_VDP, MODEL_CHAIN, MODEL_NAN, MODEL_STIFF, MODEL_STAIR"
#endif

#ifndef DISCRETE_INPUT
#define DISCRETE_INPUT (-1)
#endif
#ifndef INT_INPUT
#define INT_INPUT (-1)
#endif
#ifndef TUNABLE
#define TUNABLE (-1)
#endif

/* FMI 3.0's independent variable, time: a value reference beyond every
 * model's variables. */
#define VR_INDEPENDENT 100

typedef struct {
	double r[NR];
	double time;
	int resting; /* ball: a discrete state */
	int kicked;  /* decay: the time event happened */
	double next; /* stair: the next time event */
	int initialized, event_mode;
} model;

/* model_set_int sets the integer (enumeration) input from an integer:
 * it says why not, or NULL. */
static const char *model_refuses(model *m, unsigned vr);
static const char *model_set_int(model *m, unsigned vr, long long v) {
	if ((int)vr != INT_INPUT) return "no such integer variable";
	const char *why = model_refuses(m, vr);
	if (why) return why;
	if (v < 1 || v > 2) return "mode has the items Eco (1) and Sport (2)";
	m->r[vr] = (double)v;
	return 0;
}

/* model_refuses says why vr cannot be set now, or NULL. */
static const char *model_refuses(model *m, unsigned vr) {
	if (vr >= NR) return "no such variable";
	if (((int)vr == DISCRETE_INPUT || (int)vr == INT_INPUT) && m->initialized && !m->event_mode)
		return "a discrete input is set in event mode only";
	if ((int)vr == TUNABLE && m->initialized && !m->event_mode)
		return "a tunable parameter is set in event mode only";
	return 0;
}

/* model_start sets every variable to its start value. */
static void model_start(model *m) {
	memset(m, 0, sizeof *m);
#if defined(MODEL_BALL)
	m->r[VR_G] = 9.81, m->r[VR_E] = 0.7, m->r[VR_H0] = 1, m->r[VR_VMIN] = 0.1;
#elif defined(MODEL_DECAY)
	m->r[VR_X] = 1, m->r[VR_K] = 0.5, m->r[VR_KICK] = -1, m->r[VR_MODE] = 1;
#elif defined(MODEL_VDP)
	m->r[VR_X1] = 2, m->r[VR_MU] = 1;
#elif defined(MODEL_CHAIN)
	for (int i = 0; i < NOSC; i++) m->r[2 * i] = 2;
	m->r[VR_MU] = 1;
#elif defined(MODEL_NAN)
	m->r[VR_X] = 1, m->r[VR_TNAN] = 0.5;
#elif defined(MODEL_STIFF)
	m->r[VR_X] = 0, m->r[VR_Y] = 1, m->r[VR_LAMBDA] = 1000, m->r[VR_A] = 0.5;
#elif defined(MODEL_STAIR)
	m->r[VR_COUNTER] = 1, m->next = 1;
#endif
}

/* model_initialize computes the states from the parameters (at the end of
 * initialization mode). */
static void model_initialize(model *m) {
#if defined(MODEL_BALL)
	m->r[VR_H] = m->r[VR_H0], m->r[VR_V] = 0, m->r[VR_BOUNCES] = 0;
#endif
	(void)m;
}

/* model_derivatives computes the derivatives from the states. */
static void model_derivatives(model *m) {
	double *r = m->r;
#if defined(MODEL_BALL)
	r[VR_DH] = m->resting ? 0 : r[VR_V];
	r[VR_DV] = m->resting ? 0 : -r[VR_G];
#elif defined(MODEL_DECAY)
	r[VR_DX] = -r[VR_K] * r[VR_X] + r[VR_U] + r[VR_MODE] * r[VR_BOOST];
#elif defined(MODEL_VDP)
	r[VR_D1] = r[VR_X2];
	r[VR_D2] = r[VR_MU] * (1 - r[VR_X1] * r[VR_X1]) * r[VR_X2] - r[VR_X1];
#elif defined(MODEL_CHAIN)
	for (int i = 0; i < NOSC; i++) {
		double x1 = r[2 * i], x2 = r[2 * i + 1], mu = r[VR_MU] * (1 + 0.2 * i);
		r[NX + 2 * i] = x2;
		r[NX + 2 * i + 1] = mu * (1 - x1 * x1) * x2 - x1;
	}
#elif defined(MODEL_NAN)
	r[VR_DX] = m->time >= r[VR_TNAN] ? NAN : -r[VR_X] / 10;
	r[VR_Y] = fmin(r[VR_X], 0.8);
#elif defined(MODEL_STIFF)
	r[VR_DX] = r[VR_LAMBDA] * (r[VR_Y] - r[VR_X]);
	r[VR_DY] = -r[VR_A] * r[VR_Y];
	r[VR_Z] = r[VR_Y] - 0.5;
#endif
}

/* model_indicators computes the event indicators. */
static void model_indicators(model *m, double z[]) {
#if defined(MODEL_BALL)
	z[0] = m->resting ? 1 : m->r[VR_H];
#elif defined(MODEL_STIFF)
	z[0] = m->r[VR_Y] - 0.5;
#endif
	(void)m, (void)z;
}

/* model_event updates the discrete states at an event; it says whether
 * the simulation is to end, and the next time event (*next, when it
 * returns with *has_next set). */
static void model_event(model *m, int *terminate, int *has_next, double *next) {
	*terminate = 0, *has_next = 0;
#if defined(MODEL_BALL)
	double *r = m->r;
	if (!m->resting && r[VR_H] <= 0 && r[VR_V] < 0) {
		r[VR_H] = 0;
		r[VR_V] = -r[VR_E] * r[VR_V];
		r[VR_BOUNCES] += 1;
		if (r[VR_V] < r[VR_VMIN]) m->resting = 1, r[VR_V] = 0;
		if (r[VR_STOP] > 0 && r[VR_BOUNCES] >= r[VR_STOP]) *terminate = 1;
	}
#elif defined(MODEL_DECAY)
	if (m->r[VR_KICK] >= 0 && !m->kicked) {
		if (m->time >= m->r[VR_KICK]) {
			m->r[VR_X] += 1;
			m->kicked = 1;
		} else {
			*has_next = 1, *next = m->r[VR_KICK];
		}
	}
#elif defined(MODEL_STAIR)
	while (m->time >= m->next) { /* exactly: a master that is late by a rounding is late */
		m->r[VR_COUNTER] += 1;
		m->next += 1;
	}
	*has_next = 1, *next = m->next;
#endif
	(void)m, (void)terminate, (void)has_next, (void)next;
}

static const char *model_stop_reason(void) { return "the ball bounced as often as stopAfter says"; }

#endif

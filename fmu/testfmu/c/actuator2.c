/* A pedal actuator as an FMI 2.0 co-simulation FMU, for the example
 * system of docs/systems.md: it takes a demand from -1 (full brake) to 1
 * (full throttle) and moves the pedals to it as a motor would, late and
 * at a limited rate:
 *
 *   target   = the command of `delay` seconds ago (whole steps of its
 *              own, at least one)
 *   position += clamp(target - position, -rateLimit h, rateLimit h)
 *   throttle = max(position, 0), brake = max(-position, 0)
 *
 * It steps by a fixed 10 ms (its DefaultExperiment stepSize; it takes no
 * other), so at BeamNG's 5 ms it is stepped every second message. Its
 * outputs depend on its input of at least one step before: no direct
 * dependency. rateLimit (per second) must be above 0, delay (fixed) 0 to
 * 1 s. Written for beamconnect from the FMI 2.0 standard. */
#include <math.h>
#include <string.h>

#include "fmi2.h"

#ifndef ACTUATOR_GUID
#define ACTUATOR_GUID "{5d0c35d2-8f3b-4c2a-9a41-3f1c7e2b0002}"
#endif

/* Value references, as modelDescription.xml lists them. */
enum { VR_COMMAND, VR_RATE, VR_DELAY, VR_POSITION, VR_THROTTLE, VR_BRAKE, VR_COUNT };

/* The delay line holds up to 1 s of 1 ms steps. */
#define LINE 1000

typedef struct {
	double v[VR_COUNT];
	double line[LINE]; /* the commands of the last n steps, oldest at head */
	int n, head;       /* n: the delay in steps; 0 until the first step */
	fmi2CallbackFunctions cb;
	char name[64];
} act;

static void act_reset(act *a) {
	memset(a->v, 0, sizeof a->v);
	memset(a->line, 0, sizeof a->line);
	a->v[VR_RATE] = 2;
	a->v[VR_DELAY] = 0.05;
	a->n = a->head = 0;
}

static void say(act *a, fmi2Status s, const char *msg) {
	if (a->cb.logger) a->cb.logger(a->cb.componentEnvironment, a->name, s, "actuator", msg);
}

static void pedals(act *a) {
	double p = a->v[VR_POSITION];
	a->v[VR_THROTTLE] = p > 0 ? p : 0;
	a->v[VR_BRAKE] = p < 0 ? -p : 0;
}

FMI2_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                          const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging) {
	(void)resources, (void)visible, (void)logging;
	if (type != fmi2CoSimulation || !cb || !cb->allocateMemory || !guid || strcmp(guid, ACTUATOR_GUID) != 0) return NULL;
	act *a = cb->allocateMemory(1, sizeof(act));
	if (!a) return NULL;
	a->cb = *cb;
	strncpy(a->name, name ? name : "", sizeof a->name - 1);
	act_reset(a);
	return a;
}

FMI2_EXPORT void fmi2FreeInstance(fmi2Component c) {
	act *a = c;
	if (a) a->cb.freeMemory(a);
}

FMI2_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
	(void)c, (void)on, (void)n, (void)cats;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDefined, fmi2Real tol, fmi2Real start,
                                           fmi2Boolean stopDefined, fmi2Real stop) {
	(void)c, (void)tolDefined, (void)tol, (void)start, (void)stopDefined, (void)stop;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
FMI2_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
	pedals(c);
	return fmi2OK;
}
FMI2_EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

FMI2_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
	act_reset(c);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
	act *a = c;
	for (size_t i = 0; i < n; i++) {
		if (vr[i] >= VR_COUNT) return fmi2Error;
		v[i] = a->v[vr[i]];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
	act *a = c;
	for (size_t i = 0; i < n; i++) {
		switch (vr[i]) {
		case VR_COMMAND:
			break;
		case VR_RATE:
			if (!(v[i] > 0)) {
				say(a, fmi2Error, "rateLimit must be above 0");
				return fmi2Error;
			}
			break;
		case VR_DELAY:
			if (!(v[i] >= 0 && v[i] <= 1) || a->n > 0) {
				say(a, fmi2Error, "delay is 0 to 1 s, set before the first step");
				return fmi2Error;
			}
			break;
		default:
			say(a, fmi2Error, "only command, rateLimit and delay can be set");
			return fmi2Error;
		}
		a->v[vr[i]] = v[i];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior) {
	(void)t, (void)noSetPrior;
	act *a = c;
	if (!(h > 0)) {
		say(a, fmi2Error, "the step size must be positive");
		return fmi2Error;
	}
	if (a->n == 0) {
		a->n = (int)floor(a->v[VR_DELAY] / h + 0.5);
		if (a->n < 1) a->n = 1;
		if (a->n > LINE) a->n = LINE;
	}
	double target = a->line[a->head];
	a->line[a->head] = a->v[VR_COMMAND];
	a->head = (a->head + 1) % a->n;
	double most = a->v[VR_RATE] * h, move = target - a->v[VR_POSITION];
	if (move > most) move = most;
	if (move < -most) move = -most;
	double p = a->v[VR_POSITION] + move;
	a->v[VR_POSITION] = p > 1 ? 1 : p < -1 ? -1 : p;
	pedals(a);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, int kind, fmi2Boolean *value) {
	(void)c;
	if (kind != 3) return fmi2Discard; /* fmi2Terminated */
	*value = 0;
	return fmi2OK;
}

/* What this FMU does not do: the rest of FMI 2.0's co-simulation
 * functions, exported (a master may look every one of them up) and
 * refusing. */
#define REFUSE_ARRAY(name, type, konst)                                                                    \
	FMI2_EXPORT fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], size_t n, konst type v[]) { \
		(void)c, (void)vr, (void)v;                                                                       \
		return n == 0 ? fmi2OK : fmi2Error;                                                               \
	}
REFUSE_ARRAY(fmi2GetInteger, fmi2Integer, )
REFUSE_ARRAY(fmi2SetInteger, fmi2Integer, const)
REFUSE_ARRAY(fmi2GetBoolean, fmi2Boolean, )
REFUSE_ARRAY(fmi2SetBoolean, fmi2Boolean, const)
REFUSE_ARRAY(fmi2GetString, fmi2String, )
REFUSE_ARRAY(fmi2SetString, fmi2String, const)

#define REFUSE(name, ...)                                     \
	FMI2_EXPORT fmi2Status name(fmi2Component c, __VA_ARGS__) { \
		(void)c;                                              \
		return fmi2Error;                                     \
	}
REFUSE(fmi2GetFMUstate, void **state)
REFUSE(fmi2SetFMUstate, void *state)
REFUSE(fmi2FreeFMUstate, void **state)
REFUSE(fmi2SerializedFMUstateSize, void *state, size_t *size)
REFUSE(fmi2SerializeFMUstate, void *state, char bytes[], size_t size)
REFUSE(fmi2DeSerializeFMUstate, const char bytes[], size_t size, void **state)
REFUSE(fmi2GetDirectionalDerivative, const fmi2ValueReference a[], size_t na, const fmi2ValueReference b[], size_t nb,
       const fmi2Real dv[], fmi2Real df[])
REFUSE(fmi2SetRealInputDerivatives, const fmi2ValueReference vr[], size_t n, const fmi2Integer order[], const fmi2Real v[])
REFUSE(fmi2GetRealOutputDerivatives, const fmi2ValueReference vr[], size_t n, const fmi2Integer order[], fmi2Real v[])
REFUSE(fmi2GetStatus, int kind, int *value)
REFUSE(fmi2GetRealStatus, int kind, fmi2Real *value)
REFUSE(fmi2GetIntegerStatus, int kind, fmi2Integer *value)
REFUSE(fmi2GetStringStatus, int kind, fmi2String *value)

FMI2_EXPORT fmi2Status fmi2CancelStep(fmi2Component c) {
	(void)c;
	return fmi2Error;
}

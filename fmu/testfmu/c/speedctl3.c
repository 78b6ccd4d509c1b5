/* A PI speed controller as an FMI 3.0 co-simulation FMU, for the example
 * system of docs/systems.md: it reads the vehicle's speed in km/h and
 * says how hard to drive, a demand from -1 (full brake) to 1 (full
 * throttle), which an actuator turns into pedals.
 *
 *   e = setSpeed - speed                    (km/h)
 *   demand = clamp(kp e + ki integral, -1, 1)
 *
 * The integral of e grows over each step (e held over it, as the master
 * held the input) only while that does not push the demand further into
 * its limit (anti-windup). demand depends on speed at the same instant
 * (kp e): a direct dependency, as modelDescription.xml says. The gains
 * take 0..10; another value is refused with fmi3Error. Written for
 * beamconnect from the FMI 3.0 standard. */
#include <stdlib.h>
#include <string.h>

#include "fmi3.h"

#ifndef SPEEDCTL_TOKEN
#define SPEEDCTL_TOKEN "{5d0c35d2-8f3b-4c2a-9a41-3f1c7e2b0001}"
#endif

/* Value references, as modelDescription.xml lists them. */
enum { VR_TIME, VR_SPEED, VR_SET_SPEED, VR_KP, VR_KI, VR_DEMAND, VR_INTEGRAL, VR_COUNT };

typedef struct {
	double v[VR_COUNT];
	fmi3InstanceEnvironment env;
	fmi3LogMessageCallback log;
} ctl;

static void ctl_reset(ctl *c) {
	memset(c->v, 0, sizeof c->v);
	c->v[VR_SET_SPEED] = 72;
	c->v[VR_KP] = 0.08;
	c->v[VR_KI] = 0.015;
}

static void say(ctl *c, fmi3Status s, const char *msg) {
	if (c->log) c->log(c->env, s, "speedctl", msg);
}

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* demand is what the controller says for the error e and integral i. */
static double demand(const ctl *c, double e, double i) { return clamp(c->v[VR_KP] * e + c->v[VR_KI] * i, -1, 1); }

FMI3_EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

FMI3_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String cats[]) {
	(void)i, (void)on, (void)n, (void)cats;
	return fmi3OK;
}

FMI3_EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean eventMode,
                                                     fmi3Boolean earlyReturn, const fmi3ValueReference required[],
                                                     size_t nRequired, fmi3InstanceEnvironment env,
                                                     fmi3LogMessageCallback log,
                                                     fmi3IntermediateUpdateCallback update) {
	(void)name, (void)resources, (void)visible, (void)logging, (void)eventMode, (void)earlyReturn;
	(void)required, (void)nRequired, (void)update;
	if (!token || strcmp(token, SPEEDCTL_TOKEN) != 0) return NULL;
	ctl *c = calloc(1, sizeof(ctl));
	if (!c) return NULL;
	c->env = env;
	c->log = log;
	ctl_reset(c);
	return c;
}

FMI3_EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                      fmi3Boolean visible, fmi3Boolean logging,
                                                      fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)env, (void)log;
	return NULL; /* co-simulation only */
}

FMI3_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                                           fmi3Boolean visible, fmi3Boolean logging,
                                                           fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                           void *clockUpdate, void *lockPreemption,
                                                           void *unlockPreemption) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)env, (void)log;
	(void)clockUpdate, (void)lockPreemption, (void)unlockPreemption;
	return NULL;
}

FMI3_EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }

FMI3_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tolDefined, fmi3Float64 tol,
                                                   fmi3Float64 start, fmi3Boolean stopDefined, fmi3Float64 stop) {
	(void)tolDefined, (void)tol, (void)stopDefined, (void)stop;
	((ctl *)i)->v[VR_TIME] = start;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
	ctl *c = i;
	c->v[VR_DEMAND] = demand(c, c->v[VR_SET_SPEED] - c->v[VR_SPEED], c->v[VR_INTEGRAL]);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }

FMI3_EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
	ctl_reset(i);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[],
                                      size_t nv) {
	ctl *c = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		if (vr[k] >= VR_COUNT) return fmi3Error;
		v[k] = c->v[vr[k]];
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                      size_t nv) {
	ctl *c = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		switch (vr[k]) {
		case VR_KP:
		case VR_KI:
			if (!(v[k] >= 0 && v[k] <= 10)) {
				say(c, fmi3Error, "a gain must be within 0..10");
				return fmi3Error;
			}
			break;
		case VR_SPEED:
		case VR_SET_SPEED:
			break;
		default:
			say(c, fmi3Error, "only the speed, setSpeed, kp and ki can be set");
			return fmi3Error;
		}
		c->v[vr[k]] = v[k];
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetPrior,
                                  fmi3Boolean *eventNeeded, fmi3Boolean *terminate, fmi3Boolean *earlyReturn,
                                  fmi3Float64 *lastTime) {
	(void)noSetPrior;
	ctl *c = i;
	*eventNeeded = false;
	*terminate = false;
	*earlyReturn = false;
	*lastTime = t;
	if (!(h > 0)) {
		say(c, fmi3Error, "the step size must be positive");
		return fmi3Error;
	}
	double e = c->v[VR_SET_SPEED] - c->v[VR_SPEED];
	double grown = c->v[VR_INTEGRAL] + e * h;
	double unclamped = c->v[VR_KP] * e + c->v[VR_KI] * grown;
	if ((unclamped < 1 || e < 0) && (unclamped > -1 || e > 0)) c->v[VR_INTEGRAL] = grown;
	c->v[VR_DEMAND] = demand(c, e, c->v[VR_INTEGRAL]);
	c->v[VR_TIME] = t + h;
	*lastTime = t + h;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EnterStepMode(fmi3Instance i) { (void)i; return fmi3OK; }

/* What this FMU does not do: every other function of FMI 3.0's
 * co-simulation, model exchange and scheduled execution interfaces,
 * exported (a master may look every one of them up) and refusing. */
#define REFUSE_ARRAY(name, type, konst)                                                                      \
	FMI3_EXPORT fmi3Status name(fmi3Instance i, const fmi3ValueReference vr[], size_t n, konst type v[], size_t nv) { \
		(void)i, (void)vr, (void)v, (void)nv;                                                               \
		return n == 0 ? fmi3OK : fmi3Error;                                                                 \
	}
REFUSE_ARRAY(fmi3GetFloat32, fmi3Float32, )
REFUSE_ARRAY(fmi3SetFloat32, fmi3Float32, const)
REFUSE_ARRAY(fmi3GetInt8, int8_t, )
REFUSE_ARRAY(fmi3SetInt8, int8_t, const)
REFUSE_ARRAY(fmi3GetUInt8, uint8_t, )
REFUSE_ARRAY(fmi3SetUInt8, uint8_t, const)
REFUSE_ARRAY(fmi3GetInt16, int16_t, )
REFUSE_ARRAY(fmi3SetInt16, int16_t, const)
REFUSE_ARRAY(fmi3GetUInt16, uint16_t, )
REFUSE_ARRAY(fmi3SetUInt16, uint16_t, const)
REFUSE_ARRAY(fmi3GetInt32, fmi3Int32, )
REFUSE_ARRAY(fmi3SetInt32, fmi3Int32, const)
REFUSE_ARRAY(fmi3GetUInt32, uint32_t, )
REFUSE_ARRAY(fmi3SetUInt32, uint32_t, const)
REFUSE_ARRAY(fmi3GetInt64, int64_t, )
REFUSE_ARRAY(fmi3SetInt64, int64_t, const)
REFUSE_ARRAY(fmi3GetUInt64, uint64_t, )
REFUSE_ARRAY(fmi3SetUInt64, uint64_t, const)
REFUSE_ARRAY(fmi3GetBoolean, fmi3Boolean, )
REFUSE_ARRAY(fmi3SetBoolean, fmi3Boolean, const)
REFUSE_ARRAY(fmi3GetString, fmi3String, )
REFUSE_ARRAY(fmi3SetString, fmi3String, const)

FMI3_EXPORT fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, size_t sizes[],
                                     const uint8_t *v[], size_t nv) {
	(void)i, (void)vr, (void)sizes, (void)v, (void)nv;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const size_t sizes[],
                                     const uint8_t *const v[], size_t nv) {
	(void)i, (void)vr, (void)sizes, (void)v, (void)nv;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Boolean v[]) {
	(void)i, (void)vr, (void)v;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Boolean v[]) {
	(void)i, (void)vr, (void)v;
	return n == 0 ? fmi3OK : fmi3Error;
}

/* The functions taking an instance and pointers or numbers whose values
 * do not matter to a refusal. */
#define REFUSE(name, ...)                                   \
	FMI3_EXPORT fmi3Status name(fmi3Instance i, __VA_ARGS__) { \
		(void)i;                                            \
		return fmi3Error;                                   \
	}
#define REFUSE0(name)                        \
	FMI3_EXPORT fmi3Status name(fmi3Instance i) { \
		(void)i;                             \
		return fmi3Error;                    \
	}
REFUSE0(fmi3EnterEventMode)
REFUSE0(fmi3EnterConfigurationMode)
REFUSE0(fmi3ExitConfigurationMode)
REFUSE0(fmi3EvaluateDiscreteStates)
REFUSE0(fmi3EnterContinuousTimeMode)
REFUSE(fmi3GetNumberOfVariableDependencies, fmi3ValueReference vr, size_t *n)
REFUSE(fmi3GetVariableDependencies, fmi3ValueReference vr, size_t a[], fmi3ValueReference b[], size_t c[], int d[], size_t n)
REFUSE(fmi3GetFMUState, void **state)
REFUSE(fmi3SetFMUState, void *state)
REFUSE(fmi3FreeFMUState, void **state)
REFUSE(fmi3SerializedFMUStateSize, void *state, size_t *size)
REFUSE(fmi3SerializeFMUState, void *state, uint8_t bytes[], size_t size)
REFUSE(fmi3DeserializeFMUState, const uint8_t bytes[], size_t size, void **state)
REFUSE(fmi3GetDirectionalDerivative, const fmi3ValueReference a[], size_t na, const fmi3ValueReference b[], size_t nb,
       const fmi3Float64 c[], size_t nc, fmi3Float64 d[], size_t nd)
REFUSE(fmi3GetAdjointDerivative, const fmi3ValueReference a[], size_t na, const fmi3ValueReference b[], size_t nb,
       const fmi3Float64 c[], size_t nc, fmi3Float64 d[], size_t nd)
REFUSE(fmi3GetIntervalDecimal, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], int q[])
REFUSE(fmi3GetIntervalFraction, const fmi3ValueReference vr[], size_t n, uint64_t a[], uint64_t b[], int q[])
REFUSE(fmi3GetShiftDecimal, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[])
REFUSE(fmi3GetShiftFraction, const fmi3ValueReference vr[], size_t n, uint64_t a[], uint64_t b[])
REFUSE(fmi3SetIntervalDecimal, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[])
REFUSE(fmi3SetIntervalFraction, const fmi3ValueReference vr[], size_t n, const uint64_t a[], const uint64_t b[])
REFUSE(fmi3SetShiftDecimal, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[])
REFUSE(fmi3SetShiftFraction, const fmi3ValueReference vr[], size_t n, const uint64_t a[], const uint64_t b[])
REFUSE(fmi3UpdateDiscreteStates, fmi3Boolean *a, fmi3Boolean *b, fmi3Boolean *c, fmi3Boolean *d, fmi3Boolean *e,
       fmi3Float64 *f)
REFUSE(fmi3CompletedIntegratorStep, fmi3Boolean a, fmi3Boolean *b, fmi3Boolean *c)
REFUSE(fmi3SetTime, fmi3Float64 t)
REFUSE(fmi3SetContinuousStates, const fmi3Float64 x[], size_t n)
REFUSE(fmi3GetContinuousStateDerivatives, fmi3Float64 dx[], size_t n)
REFUSE(fmi3GetEventIndicators, fmi3Float64 z[], size_t n)
REFUSE(fmi3GetContinuousStates, fmi3Float64 x[], size_t n)
REFUSE(fmi3GetNominalsOfContinuousStates, fmi3Float64 x[], size_t n)
REFUSE(fmi3GetNumberOfEventIndicators, size_t *n)
REFUSE(fmi3GetNumberOfContinuousStates, size_t *n)
REFUSE(fmi3GetOutputDerivatives, const fmi3ValueReference vr[], size_t n, const fmi3Int32 o[], fmi3Float64 v[], size_t nv)
REFUSE(fmi3ActivateModelPartition, fmi3ValueReference clock, fmi3Float64 t)

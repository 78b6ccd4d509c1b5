/* The cruise controller as an FMI 2.0 co-simulation FMU. */
#include <string.h>

#include "cruise.h"
#include "fmi2.h"

/* The functions defined here; fmi2rest.h, included last, defines the rest. */
#define HAS_fmi2GetTypesPlatform
#define HAS_fmi2GetVersion
#define HAS_fmi2Instantiate
#define HAS_fmi2FreeInstance
#define HAS_fmi2SetDebugLogging
#define HAS_fmi2SetupExperiment
#define HAS_fmi2EnterInitializationMode
#define HAS_fmi2ExitInitializationMode
#define HAS_fmi2Terminate
#define HAS_fmi2Reset
#define HAS_fmi2GetReal
#define HAS_fmi2SetReal
#define HAS_fmi2GetInteger
#define HAS_fmi2SetInteger
#define HAS_fmi2GetBoolean
#define HAS_fmi2SetBoolean
#define HAS_fmi2DoStep
#define HAS_fmi2GetBooleanStatus
#define HAS_fmi2GetRealStatus
#define HAS_fmi2GetFMUstate
#define HAS_fmi2SetFMUstate
#define HAS_fmi2FreeFMUstate

typedef struct {
	cruise c;
	int terminated;      /* the last step asked to end the simulation */
	double lastGood;     /* how far the last step got */
	fmi2CallbackFunctions cb;
	char name[64];
} instance;

static void say(instance *in, fmi2Status s, const char *msg) {
	if (in->cb.logger) in->cb.logger(in->cb.componentEnvironment, in->name, s, "cruise", msg);
}

FMI2_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                          const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging) {
	(void)resources, (void)visible, (void)logging;
	if (type != fmi2CoSimulation || !cb || !cb->allocateMemory || strcmp(guid, "{8c4e810f-3df3-4a00-8276-176fa3c9f000}") != 0)
		return NULL;
	instance *in = cb->allocateMemory(1, sizeof(instance));
	if (!in) return NULL;
	in->cb = *cb;
	strncpy(in->name, name ? name : "", sizeof in->name - 1);
	cruise_reset(&in->c);
	process_instantiated();
	return in;
}

FMI2_EXPORT void fmi2FreeInstance(fmi2Component c) {
	instance *in = c;
	if (in) in->cb.freeMemory(in);
}

FMI2_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
	(void)c, (void)on, (void)n, (void)cats;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDefined, fmi2Real tol, fmi2Real start,
                                           fmi2Boolean stopDefined, fmi2Real stop) {
	(void)tolDefined, (void)tol, (void)stopDefined, (void)stop;
	((instance *)c)->c.v[VR_TIME] = start;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
FMI2_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
FMI2_EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

FMI2_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
	cruise_reset(&((instance *)c)->c);
	((instance *)c)->terminated = 0;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
	instance *in = c;
	for (size_t i = 0; i < n; i++) {
		if (vr[i] >= VR_COUNT) return fmi2Error;
		v[i] = in->c.v[vr[i]];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
	instance *in = c;
	for (size_t i = 0; i < n; i++) {
		const char *why = cruise_refuses(vr[i], v[i]);
		if (why) {
			say(in, fmi2Error, why);
			return fmi2Error;
		}
		in->c.v[vr[i]] = v[i];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
	(void)c, (void)vr, (void)v;
	return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
	(void)c, (void)vr, (void)v;
	return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
	(void)c, (void)vr, (void)v;
	return n == 0 ? fmi2OK : fmi2Error;
}
FMI2_EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
	(void)c, (void)vr, (void)v;
	return n == 0 ? fmi2OK : fmi2Error;
}

FMI2_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior) {
	(void)noSetPrior;
	instance *in = c;
	if (h <= 0) {
		say(in, fmi2Error, "the step size must be positive");
		return fmi2Error;
	}
	int kind = cruise_step(&in->c, t, h);
	in->lastGood = in->c.v[VR_TIME];
	if (kind == 3) {
		say(in, fmi2Error, "doStep fails on purpose (a test FMU)");
		return fmi2Error;
	}
	if (kind == 13) {
		in->terminated = 1;
		say(in, fmi2OK, cruise_stop_reason());
		return fmi2Discard;
	}
	if (kind == 14) {
		say(in, fmi2Warning, "this step is discarded (a test FMU)");
		return fmi2Discard;
	}
	return fmi2OK;
}

/* fmi2StatusKind: fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated. */
FMI2_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, int kind, fmi2Boolean *value) {
	if (kind != 3) return fmi2Discard;
	*value = ((instance *)c)->terminated;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, int kind, fmi2Real *value) {
	if (kind != 2) return fmi2Discard;
	*value = ((instance *)c)->lastGood;
	return fmi2OK;
}

/* The state is a copy of the instance's controller, for a master that
 * redoes a discarded step. */
FMI2_EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, void **state) {
	instance *in = c;
	if (!*state) *state = in->cb.allocateMemory(1, sizeof(cruise));
	if (!*state) return fmi2Error;
	memcpy(*state, &in->c, sizeof(cruise));
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, void *state) {
	memcpy(&((instance *)c)->c, state, sizeof(cruise));
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, void **state) {
	((instance *)c)->cb.freeMemory(*state);
	*state = NULL;
	return fmi2OK;
}

#include "fmi2rest.h"

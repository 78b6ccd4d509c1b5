/* A Model Exchange FMU of FMI 2.0 around one of memodel.h's models, written
 * for beamconnect from the FMI 2.0 standard. */
#include <string.h>

#include "fmi2.h"
#include "memodel.h"

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
#define HAS_fmi2EnterEventMode
#define HAS_fmi2NewDiscreteStates
#define HAS_fmi2EnterContinuousTimeMode
#define HAS_fmi2CompletedIntegratorStep
#define HAS_fmi2SetTime
#define HAS_fmi2SetContinuousStates
#define HAS_fmi2GetContinuousStates
#define HAS_fmi2GetDerivatives
#define HAS_fmi2GetEventIndicators
#define HAS_fmi2GetNominalsOfContinuousStates

typedef struct {
	model m;
	fmi2CallbackFunctions cb;
	char name[64];
	char token[64];
} instance;

static void say(instance *in, fmi2Status s, const char *msg) {
	if (in->cb.logger) in->cb.logger(in->cb.componentEnvironment, in->name, s, "model", msg);
}

FMI2_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI2_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

FMI2_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                          const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging) {
	(void)resources, (void)visible, (void)logging;
	if (type != fmi2ModelExchange || !cb || !cb->allocateMemory || strcmp(guid, MODEL_TOKEN) != 0) return NULL;
	instance *in = cb->allocateMemory(1, sizeof(instance));
	if (!in) return NULL;
	in->cb = *cb;
	strncpy(in->name, name ? name : "", sizeof in->name - 1);
	model_start(&in->m);
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
	((instance *)c)->m.time = start;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
FMI2_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
	model *m = &((instance *)c)->m;
	model_initialize(m);
	m->initialized = 1, m->event_mode = 1;
	return fmi2OK;
}
FMI2_EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }

FMI2_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
	model_start(&((instance *)c)->m);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
	instance *in = c;
	model_derivatives(&in->m);
	for (size_t i = 0; i < n; i++) {
		if (vr[i] >= NR || (int)vr[i] == INT_INPUT) return fmi2Error;
		v[i] = in->m.r[vr[i]];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
	instance *in = c;
	for (size_t i = 0; i < n; i++) {
		const char *why = (int)vr[i] == INT_INPUT ? "an Integer, not a Real" : model_refuses(&in->m, vr[i]);
		if (why) {
			say(in, fmi2Error, why);
			return fmi2Error;
		}
		in->m.r[vr[i]] = v[i];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
	instance *in = c;
	for (size_t i = 0; i < n; i++) {
		if ((int)vr[i] != INT_INPUT || vr[i] >= NR) return fmi2Error;
		v[i] = (fmi2Integer)in->m.r[vr[i]];
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
	instance *in = c;
	for (size_t i = 0; i < n; i++) {
		const char *why = model_set_int(&in->m, vr[i], v[i]);
		if (why) {
			say(in, fmi2Error, why);
			return fmi2Error;
		}
	}
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) {
	((instance *)c)->m.event_mode = 1;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *e) {
	instance *in = c;
	int terminate, has_next;
	double next = 0;
	model_event(&in->m, &terminate, &has_next, &next);
	memset(e, 0, sizeof *e);
	e->terminateSimulation = terminate;
	e->valuesOfContinuousStatesChanged = 1;
	e->nextEventTimeDefined = has_next;
	e->nextEventTime = next;
	if (terminate) say(in, fmi2OK, model_stop_reason());
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) {
	((instance *)c)->m.event_mode = 0;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetPrior, fmi2Boolean *enterEvent,
                                                   fmi2Boolean *terminate) {
	(void)c, (void)noSetPrior;
	*enterEvent = 0, *terminate = 0;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) {
	((instance *)c)->m.time = t;
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
	instance *in = c;
	if (nx != NX) return fmi2Error;
	memcpy(in->m.r, x, sizeof(double) * NX);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
	instance *in = c;
	if (nx != NX) return fmi2Error;
	memcpy(x, in->m.r, sizeof(double) * NX);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
	instance *in = c;
	if (nx != NX) return fmi2Error;
	model_derivatives(&in->m);
	memcpy(dx, in->m.r + NX, sizeof(double) * NX);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t nz) {
	instance *in = c;
	if (nz != NZ) return fmi2Error;
	model_indicators(&in->m, z);
	return fmi2OK;
}

FMI2_EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
	(void)c;
	for (size_t i = 0; i < nx; i++) x[i] = 1;
	return fmi2OK;
}

#include "fmi2rest.h"

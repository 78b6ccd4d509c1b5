/* A Model Exchange FMU of FMI 3.0 around one of memodel.h's models, written
 * for beamconnect from the FMI 3.0 standard. */
#include <stdlib.h>
#include <string.h>

#include "fmi3.h"
#include "memodel.h"

/* The functions defined here; fmi3rest.h, included last, defines the rest. */
#define HAS_fmi3GetVersion
#define HAS_fmi3InstantiateModelExchange
#define HAS_fmi3FreeInstance
#define HAS_fmi3EnterInitializationMode
#define HAS_fmi3ExitInitializationMode
#define HAS_fmi3Terminate
#define HAS_fmi3Reset
#define HAS_fmi3GetFloat64
#define HAS_fmi3SetFloat64
#define HAS_fmi3GetInt64
#define HAS_fmi3SetInt64
#define HAS_fmi3EnterEventMode
#define HAS_fmi3UpdateDiscreteStates
#define HAS_fmi3EnterContinuousTimeMode
#define HAS_fmi3CompletedIntegratorStep
#define HAS_fmi3SetTime
#define HAS_fmi3SetContinuousStates
#define HAS_fmi3GetContinuousStates
#define HAS_fmi3GetContinuousStateDerivatives
#define HAS_fmi3GetEventIndicators
#define HAS_fmi3GetNominalsOfContinuousStates
#define HAS_fmi3GetNumberOfContinuousStates
#define HAS_fmi3GetNumberOfEventIndicators

typedef struct {
	model m;
	fmi3InstanceEnvironment env;
	fmi3LogMessageCallback log;
} instance;

static void say(instance *in, fmi3Status s, const char *msg) {
	if (in->log) in->log(in->env, s, "model", msg);
}

FMI3_EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

FMI3_EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                      fmi3Boolean visible, fmi3Boolean logging,
                                                      fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
	(void)name, (void)resources, (void)visible, (void)logging;
	if (strcmp(token, MODEL_TOKEN) != 0) return NULL;
	instance *in = calloc(1, sizeof(instance));
	if (!in) return NULL;
	in->env = env;
	in->log = log;
	model_start(&in->m);
	return in;
}

FMI3_EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }

FMI3_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tolDefined, fmi3Float64 tol,
                                                   fmi3Float64 start, fmi3Boolean stopDefined, fmi3Float64 stop) {
	(void)tolDefined, (void)tol, (void)stopDefined, (void)stop;
	((instance *)i)->m.time = start;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
	model *m = &((instance *)i)->m;
	model_initialize(m);
	m->initialized = 1, m->event_mode = 1;
	return fmi3OK;
}
FMI3_EXPORT fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }

FMI3_EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
	model_start(&((instance *)i)->m);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[],
                                      size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	model_derivatives(&in->m);
	for (size_t k = 0; k < n; k++) {
		if (vr[k] == VR_INDEPENDENT) {
			v[k] = in->m.time;
			continue;
		}
		if (vr[k] >= NR || (int)vr[k] == INT_INPUT) return fmi3Error;
		v[k] = in->m.r[vr[k]];
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                      size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		const char *why = (int)vr[k] == INT_INPUT ? "an Int64, not a Float64" : model_refuses(&in->m, vr[k]);
		if (why) {
			say(in, fmi3Error, why);
			return fmi3Error;
		}
		in->m.r[vr[k]] = v[k];
	}
	return fmi3OK;
}


FMI3_EXPORT fmi3Status fmi3GetInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Int64 v[], size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		if ((int)vr[k] != INT_INPUT || vr[k] >= NR) return fmi3Error;
		v[k] = (fmi3Int64)in->m.r[vr[k]];
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int64 v[],
                                    size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		const char *why = model_set_int(&in->m, vr[k], v[k]);
		if (why) {
			say(in, fmi3Error, why);
			return fmi3Error;
		}
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance i) {
	((instance *)i)->m.event_mode = 1;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean *again, fmi3Boolean *terminate,
                                                fmi3Boolean *nominalsChanged, fmi3Boolean *valuesChanged,
                                                fmi3Boolean *nextDefined, fmi3Float64 *next) {
	instance *in = i;
	int stop, has_next;
	double t = 0;
	model_event(&in->m, &stop, &has_next, &t);
	*again = false, *terminate = stop, *nominalsChanged = false, *valuesChanged = true;
	*nextDefined = has_next, *next = t;
	if (stop) say(in, fmi3OK, model_stop_reason());
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) {
	((instance *)i)->m.event_mode = 0;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean noSetPrior, fmi3Boolean *enterEvent,
                                                   fmi3Boolean *terminate) {
	(void)i, (void)noSetPrior;
	*enterEvent = false, *terminate = false;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 t) {
	((instance *)i)->m.time = t;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance i, const fmi3Float64 x[], size_t nx) {
	instance *in = i;
	if (nx != NX) return fmi3Error;
	memcpy(in->m.r, x, sizeof(double) * NX);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t nx) {
	instance *in = i;
	if (nx != NX) return fmi3Error;
	memcpy(x, in->m.r, sizeof(double) * NX);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t nx) {
	instance *in = i;
	if (nx != NX) return fmi3Error;
	model_derivatives(&in->m);
	memcpy(dx, in->m.r + NX, sizeof(double) * NX);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t nz) {
	instance *in = i;
	if (nz != NZ) return fmi3Error;
	model_indicators(&in->m, z);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t nx) {
	(void)i;
	for (size_t k = 0; k < nx; k++) x[k] = 1;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance i, size_t *n) {
	(void)i;
	*n = NX;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance i, size_t *n) {
	(void)i;
	*n = NZ;
	return fmi3OK;
}

#include "fmi3rest.h"

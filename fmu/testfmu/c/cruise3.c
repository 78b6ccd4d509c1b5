/* The cruise controller as an FMI 3.0 co-simulation FMU. */
#include <stdlib.h>
#include <string.h>

#include "cruise.h"
#include "fmi3.h"

/* The functions defined here; fmi3rest.h, included last, defines the rest. */
#define HAS_fmi3GetVersion
#define HAS_fmi3InstantiateCoSimulation
#define HAS_fmi3FreeInstance
#define HAS_fmi3EnterInitializationMode
#define HAS_fmi3ExitInitializationMode
#define HAS_fmi3Terminate
#define HAS_fmi3Reset
#define HAS_fmi3GetFloat64
#define HAS_fmi3SetFloat64
#define HAS_fmi3DoStep
#define HAS_fmi3GetFMUState
#define HAS_fmi3SetFMUState
#define HAS_fmi3FreeFMUState

typedef struct {
	cruise c;
	fmi3InstanceEnvironment env;
	fmi3LogMessageCallback log;
} instance;

static void say(instance *in, fmi3Status s, const char *msg) {
	if (in->log) in->log(in->env, s, "cruise", msg);
}

FMI3_EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

FMI3_EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean eventMode,
                                                     fmi3Boolean earlyReturn, const fmi3ValueReference required[],
                                                     size_t nRequired, fmi3InstanceEnvironment env,
                                                     fmi3LogMessageCallback log,
                                                     fmi3IntermediateUpdateCallback update) {
	(void)name, (void)resources, (void)visible, (void)logging, (void)eventMode, (void)earlyReturn;
	(void)required, (void)nRequired, (void)update;
	if (strcmp(token, "{8c4e810f-3df3-4a00-8276-176fa3c9f000}") != 0) return NULL;
	instance *in = calloc(1, sizeof(instance));
	if (!in) return NULL;
	in->env = env;
	in->log = log;
	cruise_reset(&in->c);
	process_instantiated();
	return in;
}

FMI3_EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }

FMI3_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tolDefined, fmi3Float64 tol,
                                                   fmi3Float64 start, fmi3Boolean stopDefined, fmi3Float64 stop) {
	(void)tolDefined, (void)tol, (void)stopDefined, (void)stop;
	((instance *)i)->c.v[VR_TIME] = start;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) { (void)i; return fmi3OK; }
FMI3_EXPORT fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }

FMI3_EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
	cruise_reset(&((instance *)i)->c);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[],
                                      size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		if (vr[k] >= VR_COUNT) return fmi3Error;
		v[k] = in->c.v[vr[k] == VR_INDEPENDENT ? VR_TIME : vr[k]];
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                      size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		const char *why = cruise_refuses(vr[k], v[k]);
		if (why) {
			say(in, fmi3Error, why);
			return fmi3Error;
		}
		in->c.v[vr[k]] = v[k];
	}
	return fmi3OK;
}


FMI3_EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetPrior,
                                  fmi3Boolean *eventNeeded, fmi3Boolean *terminate, fmi3Boolean *earlyReturn,
                                  fmi3Float64 *lastTime) {
	(void)noSetPrior;
	instance *in = i;
	*eventNeeded = false;
	*terminate = false;
	*earlyReturn = false;
	if (h <= 0) {
		say(in, fmi3Error, "the step size must be positive");
		return fmi3Error;
	}
	int kind = cruise_step(&in->c, t, h);
	*lastTime = in->c.v[VR_TIME];
	if (kind == 3) {
		say(in, fmi3Error, "doStep fails on purpose (a test FMU)");
		*lastTime = t;
		return fmi3Error;
	}
	if (kind == 13) {
		say(in, fmi3OK, cruise_stop_reason());
		*terminate = true;
		return fmi3OK;
	}
	if (kind == 14) {
		say(in, fmi3Warning, "this step is discarded (a test FMU)");
		return fmi3Discard;
	}
	return fmi3OK;
}

/* The state is a copy of the instance's controller, for a master that
 * redoes a discarded step. */
FMI3_EXPORT fmi3Status fmi3GetFMUState(fmi3Instance i, void **state) {
	instance *in = i;
	if (!*state) *state = malloc(sizeof(cruise));
	if (!*state) return fmi3Error;
	memcpy(*state, &in->c, sizeof(cruise));
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetFMUState(fmi3Instance i, void *state) {
	memcpy(&((instance *)i)->c, state, sizeof(cruise));
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance i, void **state) {
	(void)i;
	free(*state);
	*state = NULL;
	return fmi3OK;
}

#include "fmi3rest.h"

/* A Model Exchange FMU of FMI 3.0 around one of memodel.h's models, written
 * for beamconnect from the FMI 3.0 standard. */
#include <stdlib.h>
#include <string.h>

#include "fmi3.h"
#include "memodel.h"

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

#define NO_VARIABLES(name, type, konst)                                                                      \
	FMI3_EXPORT fmi3Status name(fmi3Instance i, const fmi3ValueReference vr[], size_t n, konst type v[], size_t nv) { \
		(void)i, (void)vr, (void)v, (void)nv;                                                               \
		return n == 0 ? fmi3OK : fmi3Error;                                                                 \
	}
NO_VARIABLES(fmi3GetFloat32, fmi3Float32, )
NO_VARIABLES(fmi3SetFloat32, fmi3Float32, const)
NO_VARIABLES(fmi3GetInt32, fmi3Int32, )
NO_VARIABLES(fmi3SetInt32, fmi3Int32, const)
NO_VARIABLES(fmi3GetBoolean, fmi3Boolean, )
NO_VARIABLES(fmi3SetBoolean, fmi3Boolean, const)

typedef int64_t fmi3Int64;

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

/* The rest of the FMI 3.0 API, which the standard has every FMU export and
 * these models do not support: each refuses (fmi3Error), or answers for
 * no variables. An importer that loads every function (fmusim, the
 * reference master, does) can load the FMU. */
typedef int8_t fmi3Int8;
typedef uint8_t fmi3UInt8;
typedef int16_t fmi3Int16;
typedef uint16_t fmi3UInt16;
typedef uint32_t fmi3UInt32;
typedef uint64_t fmi3UInt64;
typedef uint8_t fmi3Byte;
typedef const fmi3Byte *fmi3Binary;
typedef bool fmi3Clock;
typedef void *fmi3FMUState;
typedef int fmi3DependencyKind;
typedef int fmi3IntervalQualifier;

NO_VARIABLES(fmi3GetInt8, fmi3Int8, )
NO_VARIABLES(fmi3SetInt8, fmi3Int8, const)
NO_VARIABLES(fmi3GetUInt8, fmi3UInt8, )
NO_VARIABLES(fmi3SetUInt8, fmi3UInt8, const)
NO_VARIABLES(fmi3GetInt16, fmi3Int16, )
NO_VARIABLES(fmi3SetInt16, fmi3Int16, const)
NO_VARIABLES(fmi3GetUInt16, fmi3UInt16, )
NO_VARIABLES(fmi3SetUInt16, fmi3UInt16, const)
NO_VARIABLES(fmi3GetUInt32, fmi3UInt32, )
NO_VARIABLES(fmi3SetUInt32, fmi3UInt32, const)
NO_VARIABLES(fmi3GetUInt64, fmi3UInt64, )
NO_VARIABLES(fmi3SetUInt64, fmi3UInt64, const)
NO_VARIABLES(fmi3GetString, fmi3String, )
NO_VARIABLES(fmi3SetString, fmi3String, const)

FMI3_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String cats[]) {
	(void)i, (void)on, (void)n, (void)cats;
	return fmi3OK;
}
FMI3_EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean eventMode,
                                                     fmi3Boolean earlyReturn, const fmi3ValueReference required[],
                                                     size_t nRequired, fmi3InstanceEnvironment env,
                                                     fmi3LogMessageCallback log, fmi3IntermediateUpdateCallback update) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)eventMode, (void)earlyReturn;
	(void)required, (void)nRequired, (void)env, (void)log, (void)update;
	return NULL; /* model exchange only */
}
FMI3_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                                           fmi3Boolean visible, fmi3Boolean logging,
                                                           fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                           void (*clockUpdate)(fmi3InstanceEnvironment),
                                                           void (*lockPreemption)(void), void (*unlockPreemption)(void)) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)env, (void)log;
	(void)clockUpdate, (void)lockPreemption, (void)unlockPreemption;
	return NULL;
}
FMI3_EXPORT fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, size_t sizes[],
                                     fmi3Binary v[], size_t nv) {
	(void)i, (void)vr, (void)sizes, (void)v, (void)nv;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const size_t sizes[],
                                     const fmi3Binary v[], size_t nv) {
	(void)i, (void)vr, (void)sizes, (void)v, (void)nv;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Clock v[]) {
	(void)i, (void)vr, (void)v;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Clock v[]) {
	(void)i, (void)vr, (void)v;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance i, fmi3ValueReference vr, size_t *n) {
	(void)i, (void)vr, (void)n;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetVariableDependencies(fmi3Instance i, fmi3ValueReference dependent, size_t elements[],
                                                   fmi3ValueReference independents[], size_t independentElements[],
                                                   fmi3DependencyKind kinds[], size_t n) {
	(void)i, (void)dependent, (void)elements, (void)independents, (void)independentElements, (void)kinds, (void)n;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState *s) { (void)i, (void)s; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState s) { (void)i, (void)s; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState *s) { (void)i, (void)s; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance i, fmi3FMUState s, size_t *size) {
	(void)i, (void)s, (void)size;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance i, fmi3FMUState s, fmi3Byte b[], size_t size) {
	(void)i, (void)s, (void)b, (void)size;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance i, const fmi3Byte b[], size_t size, fmi3FMUState *s) {
	(void)i, (void)b, (void)size, (void)s;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                                    const fmi3ValueReference knowns[], size_t nKnowns,
                                                    const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[],
                                                    size_t nSensitivity) {
	(void)i, (void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed;
	(void)sensitivity, (void)nSensitivity;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetAdjointDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                                const fmi3ValueReference knowns[], size_t nKnowns,
                                                const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[],
                                                size_t nSensitivity) {
	(void)i, (void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed;
	(void)sensitivity, (void)nSensitivity;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) { (void)i; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) { (void)i; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                              fmi3Float64 intervals[], fmi3IntervalQualifier qualifiers[]) {
	(void)i, (void)vr, (void)intervals, (void)qualifiers;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                               fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                               fmi3IntervalQualifier qualifiers[]) {
	(void)i, (void)vr, (void)counters, (void)resolutions, (void)qualifiers;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 shifts[]) {
	(void)i, (void)vr, (void)shifts;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3GetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                            fmi3UInt64 counters[], fmi3UInt64 resolutions[]) {
	(void)i, (void)vr, (void)counters, (void)resolutions;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                              const fmi3Float64 intervals[]) {
	(void)i, (void)vr, (void)intervals;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3SetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                               const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
	(void)i, (void)vr, (void)counters, (void)resolutions;
	return n == 0 ? fmi3OK : fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) { (void)i; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3EnterStepMode(fmi3Instance i) { (void)i; return fmi3Error; }
FMI3_EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t n,
                                                const fmi3Int32 orders[], fmi3Float64 values[], size_t nValues) {
	(void)i, (void)vr, (void)n, (void)orders, (void)values, (void)nValues;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetPrior,
                                  fmi3Boolean *eventNeeded, fmi3Boolean *terminate, fmi3Boolean *earlyReturn,
                                  fmi3Float64 *lastTime) {
	(void)i, (void)t, (void)h, (void)noSetPrior, (void)eventNeeded, (void)terminate, (void)earlyReturn, (void)lastTime;
	return fmi3Error;
}
FMI3_EXPORT fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t) {
	(void)i, (void)clock, (void)t;
	return fmi3Error;
}

/* The FMI 3.0 co-simulation entry points, on the shim's core. Written for
 * beamconnect from the FMI 3.0 standard. Every function the standard
 * defines is here, as it requires; those of other interfaces and features
 * the FMU's description does not claim say so and fail. */
#include <stdlib.h>

#include "shim.h"

typedef struct {
	shim *s;
	fmi3InstanceEnvironment env;
	fmi3LogMessageCallback log;
} instance3;

static void say3(void *ctx, const char *name, int status, const char *category, const char *message) {
	instance3 *in = ctx;
	(void)name;
	if (in->log) in->log(in->env, (fmi3Status)status, category, message);
}

#define SHIM(i) (((instance3 *)(i))->s)
/* ENTER takes the instance for the call fn (a second call at once, from
 * another thread, is refused: Error); LEAVE returns what expr returns,
 * having let the instance go. */
#define ENTER(i, fn)                                                                                                   \
	do {                                                                                                           \
		if (!(i) || shim_enter(SHIM(i), fn) != 0) return fmi3Error;                                            \
	} while (0)
#define LEAVE(i, expr)                                                                                                 \
	do {                                                                                                           \
		fmi3Status st_ = (fmi3Status)(expr);                                                                   \
		shim_leave(SHIM(i));                                                                                   \
		return st_;                                                                                            \
	} while (0)
#define UNSUPPORTED(i, fn) return (fmi3Status)shim_unsupported((i) ? SHIM(i) : NULL, fn)
/* A variable type the FMU has none of. */
#define NO_TYPE(i, fn, type, n)                                                                                        \
	do {                                                                                                           \
		ENTER(i, fn);                                                                                          \
		LEAVE(i, shim_no_type(SHIM(i), fn, type, n));                                                          \
	} while (0)

FMI_EXPORT const char *fmi3GetVersion(void) { return "3.0"; }

FMI_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String categories[]) {
	ENTER(i, "fmi3SetDebugLogging");
	shim_logging(SHIM(i), on, n, categories);
	LEAVE(i, fmi3OK);
}

static void refuse(fmi3InstanceEnvironment env, fmi3LogMessageCallback log, const char *msg) {
	if (log) log(env, fmi3Error, "logStatusError", msg);
}

FMI_EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging,
                                                     fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging;
	refuse(env, log, "this FMU is for co-simulation only: BeamNG.tech computes its outputs, and it has no model exchange interface");
	return NULL;
}

FMI_EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                    fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean eventModeUsed,
                                                    fmi3Boolean earlyReturnAllowed, const fmi3ValueReference required[],
                                                    size_t nRequired, fmi3InstanceEnvironment env,
                                                    fmi3LogMessageCallback log,
                                                    fmi3IntermediateUpdateCallback intermediateUpdate) {
	(void)visible, (void)earlyReturnAllowed, (void)required, (void)nRequired, (void)intermediateUpdate;
	if (eventModeUsed) {
		refuse(env, log, "this FMU has no event mode (hasEventMode is false): instantiate it with eventModeUsed false");
		return NULL;
	}
	instance3 *in = calloc(1, sizeof *in);
	if (!in) return NULL;
	in->env = env;
	in->log = log;
	in->s = shim_new(3, name, token, resources, logging, say3, in);
	if (!in->s) {
		free(in);
		return NULL;
	}
	return in;
}

FMI_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                                          fmi3Boolean visible, fmi3Boolean logging,
                                                          fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                          fmi3ClockUpdateCallback clockUpdate,
                                                          fmi3LockPreemptionCallback lock,
                                                          fmi3UnlockPreemptionCallback unlock) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)clockUpdate, (void)lock, (void)unlock;
	refuse(env, log, "this FMU is for co-simulation only: it has no scheduled execution interface");
	return NULL;
}

FMI_EXPORT void fmi3FreeInstance(fmi3Instance i) {
	if (!i) return;
	if (shim_free(SHIM(i)) == 0) free(i);
}

FMI_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean toleranceDefined, fmi3Float64 tolerance,
                                                  fmi3Float64 start, fmi3Boolean stopDefined, fmi3Float64 stop) {
	(void)toleranceDefined, (void)tolerance;
	ENTER(i, "fmi3EnterInitializationMode");
	int st = shim_setup(SHIM(i), start, stopDefined, stop);
	if (st != fmi3OK) LEAVE(i, st);
	LEAVE(i, shim_enter_initialization(SHIM(i)));
}

FMI_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
	ENTER(i, "fmi3ExitInitializationMode");
	LEAVE(i, shim_exit_initialization(SHIM(i)));
}

FMI_EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance i) { UNSUPPORTED(i, "fmi3EnterEventMode (the FMU has no event mode)"); }

FMI_EXPORT fmi3Status fmi3Terminate(fmi3Instance i) {
	ENTER(i, "fmi3Terminate");
	LEAVE(i, shim_terminate(SHIM(i)));
}

FMI_EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
	ENTER(i, "fmi3Reset");
	LEAVE(i, shim_reset(SHIM(i)));
}

/* Getting and setting: Float64, Int32 and String variables, one value
 * each (the FMU has no arrays). */
static int counts(shim *s, const char *fn, size_t nvr, size_t nValues) {
	if (nvr == nValues) return 1;
	shim_error(s, "%s: as many values as value references are expected (the FMU has no arrays)", fn);
	return 0;
}

FMI_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 v[],
                                     size_t n) {
	ENTER(i, "fmi3GetFloat64");
	if (!counts(SHIM(i), "fmi3GetFloat64", nvr, n)) LEAVE(i, fmi3Error);
	LEAVE(i, shim_get_real(SHIM(i), "fmi3GetFloat64", vr, nvr, v));
}

FMI_EXPORT fmi3Status fmi3GetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Int32 v[], size_t n) {
	ENTER(i, "fmi3GetInt32");
	if (!counts(SHIM(i), "fmi3GetInt32", nvr, n)) LEAVE(i, fmi3Error);
	LEAVE(i, shim_get_integer(SHIM(i), "fmi3GetInt32", vr, nvr, v));
}

FMI_EXPORT fmi3Status fmi3GetString(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3String v[], size_t n) {
	ENTER(i, "fmi3GetString");
	if (!counts(SHIM(i), "fmi3GetString", nvr, n)) LEAVE(i, fmi3Error);
	LEAVE(i, shim_get_string(SHIM(i), "fmi3GetString", vr, nvr, v));
}

FMI_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 v[],
                                     size_t n) {
	ENTER(i, "fmi3SetFloat64");
	if (!counts(SHIM(i), "fmi3SetFloat64", nvr, n)) LEAVE(i, fmi3Error);
	LEAVE(i, shim_set_real(SHIM(i), "fmi3SetFloat64", vr, nvr, v));
}

FMI_EXPORT fmi3Status fmi3SetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3Int32 v[],
                                   size_t n) {
	ENTER(i, "fmi3SetInt32");
	if (!counts(SHIM(i), "fmi3SetInt32", nvr, n)) LEAVE(i, fmi3Error);
	LEAVE(i, shim_set_integer(SHIM(i), "fmi3SetInt32", vr, nvr, v));
}

FMI_EXPORT fmi3Status fmi3SetString(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3String v[],
                                    size_t n) {
	ENTER(i, "fmi3SetString");
	if (!counts(SHIM(i), "fmi3SetString", nvr, n)) LEAVE(i, fmi3Error);
	LEAVE(i, shim_set_string(SHIM(i), "fmi3SetString", vr, nvr, v));
}

#define NO_GET(T, type)                                                                                                \
	FMI_EXPORT fmi3Status fmi3Get##T(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, type v[], size_t n) { \
		(void)vr, (void)v, (void)n;                                                                            \
		NO_TYPE(i, "fmi3Get" #T, #T, nvr);                                                                     \
	}
#define NO_SET(T, type)                                                                                                \
	FMI_EXPORT fmi3Status fmi3Set##T(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const type v[],      \
	                                 size_t n) {                                                                   \
		(void)vr, (void)v, (void)n;                                                                            \
		NO_TYPE(i, "fmi3Set" #T, #T, nvr);                                                                     \
	}
NO_GET(Float32, fmi3Float32)
NO_GET(Int8, fmi3Int8)
NO_GET(UInt8, fmi3UInt8)
NO_GET(Int16, fmi3Int16)
NO_GET(UInt16, fmi3UInt16)
NO_GET(UInt32, fmi3UInt32)
NO_GET(Int64, fmi3Int64)
NO_GET(UInt64, fmi3UInt64)
NO_GET(Boolean, fmi3Boolean)
NO_SET(Float32, fmi3Float32)
NO_SET(Int8, fmi3Int8)
NO_SET(UInt8, fmi3UInt8)
NO_SET(Int16, fmi3Int16)
NO_SET(UInt16, fmi3UInt16)
NO_SET(UInt32, fmi3UInt32)
NO_SET(Int64, fmi3Int64)
NO_SET(UInt64, fmi3UInt64)
NO_SET(Boolean, fmi3Boolean)

FMI_EXPORT fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, size_t sizes[],
                                    fmi3Binary v[], size_t n) {
	(void)vr, (void)sizes, (void)v, (void)n;
	NO_TYPE(i, "fmi3GetBinary", "Binary", nvr);
}
FMI_EXPORT fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const size_t sizes[],
                                    const fmi3Binary v[], size_t n) {
	(void)vr, (void)sizes, (void)v, (void)n;
	NO_TYPE(i, "fmi3SetBinary", "Binary", nvr);
}
FMI_EXPORT fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Clock v[]) {
	(void)vr, (void)v;
	NO_TYPE(i, "fmi3GetClock", "Clock", nvr);
}
FMI_EXPORT fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3Clock v[]) {
	(void)vr, (void)v;
	NO_TYPE(i, "fmi3SetClock", "Clock", nvr);
}

/* Dependencies: the description says them (no output depends on an
 * input of the same instant). */
FMI_EXPORT fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance i, fmi3ValueReference vr, size_t *n) {
	(void)vr, (void)n;
	UNSUPPORTED(i, "fmi3GetNumberOfVariableDependencies (modelDescription.xml lists the dependencies)");
}
FMI_EXPORT fmi3Status fmi3GetVariableDependencies(fmi3Instance i, fmi3ValueReference dependent,
                                                  size_t elementsOfDependent[], fmi3ValueReference independents[],
                                                  size_t elementsOfIndependents[], fmi3DependencyKind kinds[],
                                                  size_t n) {
	(void)dependent, (void)elementsOfDependent, (void)independents, (void)elementsOfIndependents, (void)kinds, (void)n;
	UNSUPPORTED(i, "fmi3GetVariableDependencies (modelDescription.xml lists the dependencies)");
}

/* The coupled BeamNG's state cannot be saved and restored. */
FMI_EXPORT fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState *state) {
	(void)state;
	UNSUPPORTED(i, "fmi3GetFMUState");
}
FMI_EXPORT fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState state) {
	(void)state;
	UNSUPPORTED(i, "fmi3SetFMUState");
}
FMI_EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState *state) {
	(void)state;
	UNSUPPORTED(i, "fmi3FreeFMUState");
}
FMI_EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance i, fmi3FMUState state, size_t *size) {
	(void)state, (void)size;
	UNSUPPORTED(i, "fmi3SerializedFMUStateSize");
}
FMI_EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance i, fmi3FMUState state, fmi3Byte data[], size_t size) {
	(void)state, (void)data, (void)size;
	UNSUPPORTED(i, "fmi3SerializeFMUState");
}
FMI_EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance i, const fmi3Byte data[], size_t size, fmi3FMUState *state) {
	(void)data, (void)size, (void)state;
	UNSUPPORTED(i, "fmi3DeserializeFMUState");
}

FMI_EXPORT fmi3Status fmi3GetDirectionalDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                                   const fmi3ValueReference knowns[], size_t nKnowns,
                                                   const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[],
                                                   size_t nSensitivity) {
	(void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed, (void)sensitivity, (void)nSensitivity;
	UNSUPPORTED(i, "fmi3GetDirectionalDerivative");
}
FMI_EXPORT fmi3Status fmi3GetAdjointDerivative(fmi3Instance i, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                               const fmi3ValueReference knowns[], size_t nKnowns,
                                               const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[],
                                               size_t nSensitivity) {
	(void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed, (void)sensitivity, (void)nSensitivity;
	UNSUPPORTED(i, "fmi3GetAdjointDerivative");
}

/* No structural parameters, no clocks. */
FMI_EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) { UNSUPPORTED(i, "fmi3EnterConfigurationMode"); }
FMI_EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) { UNSUPPORTED(i, "fmi3ExitConfigurationMode"); }
FMI_EXPORT fmi3Status fmi3GetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                             fmi3Float64 intervals[], fmi3IntervalQualifier qualifiers[]) {
	(void)vr, (void)nvr, (void)intervals, (void)qualifiers;
	UNSUPPORTED(i, "fmi3GetIntervalDecimal");
}
FMI_EXPORT fmi3Status fmi3GetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                              fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                              fmi3IntervalQualifier qualifiers[]) {
	(void)vr, (void)nvr, (void)counters, (void)resolutions, (void)qualifiers;
	UNSUPPORTED(i, "fmi3GetIntervalFraction");
}
FMI_EXPORT fmi3Status fmi3GetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 shifts[]) {
	(void)vr, (void)nvr, (void)shifts;
	UNSUPPORTED(i, "fmi3GetShiftDecimal");
}
FMI_EXPORT fmi3Status fmi3GetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           fmi3UInt64 counters[], fmi3UInt64 resolutions[]) {
	(void)vr, (void)nvr, (void)counters, (void)resolutions;
	UNSUPPORTED(i, "fmi3GetShiftFraction");
}
FMI_EXPORT fmi3Status fmi3SetIntervalDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                             const fmi3Float64 intervals[]) {
	(void)vr, (void)nvr, (void)intervals;
	UNSUPPORTED(i, "fmi3SetIntervalDecimal");
}
FMI_EXPORT fmi3Status fmi3SetIntervalFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                              const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
	(void)vr, (void)nvr, (void)counters, (void)resolutions;
	UNSUPPORTED(i, "fmi3SetIntervalFraction");
}
FMI_EXPORT fmi3Status fmi3SetShiftDecimal(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                          const fmi3Float64 shifts[]) {
	(void)vr, (void)nvr, (void)shifts;
	UNSUPPORTED(i, "fmi3SetShiftDecimal");
}
FMI_EXPORT fmi3Status fmi3SetShiftFraction(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           const fmi3UInt64 counters[], const fmi3UInt64 resolutions[]) {
	(void)vr, (void)nvr, (void)counters, (void)resolutions;
	UNSUPPORTED(i, "fmi3SetShiftFraction");
}
FMI_EXPORT fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance i) { UNSUPPORTED(i, "fmi3EvaluateDiscreteStates"); }
FMI_EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean *discreteStatesNeedUpdate,
                                               fmi3Boolean *terminateSimulation,
                                               fmi3Boolean *nominalsOfContinuousStatesChanged,
                                               fmi3Boolean *valuesOfContinuousStatesChanged,
                                               fmi3Boolean *nextEventTimeDefined, fmi3Float64 *nextEventTime) {
	(void)discreteStatesNeedUpdate, (void)terminateSimulation, (void)nominalsOfContinuousStatesChanged;
	(void)valuesOfContinuousStatesChanged, (void)nextEventTimeDefined, (void)nextEventTime;
	UNSUPPORTED(i, "fmi3UpdateDiscreteStates (the FMU has no event mode)");
}

/* Model exchange: not this FMU's interface. */
FMI_EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) { UNSUPPORTED(i, "fmi3EnterContinuousTimeMode"); }
FMI_EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean noSetPrior, fmi3Boolean *enterEventMode,
                                                  fmi3Boolean *terminateSimulation) {
	(void)noSetPrior, (void)enterEventMode, (void)terminateSimulation;
	UNSUPPORTED(i, "fmi3CompletedIntegratorStep");
}
FMI_EXPORT fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 time) {
	(void)time;
	UNSUPPORTED(i, "fmi3SetTime");
}
FMI_EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance i, const fmi3Float64 x[], size_t n) {
	(void)x, (void)n;
	UNSUPPORTED(i, "fmi3SetContinuousStates");
}
FMI_EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t n) {
	(void)dx, (void)n;
	UNSUPPORTED(i, "fmi3GetContinuousStateDerivatives");
}
FMI_EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
	(void)z, (void)n;
	UNSUPPORTED(i, "fmi3GetEventIndicators");
}
FMI_EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
	(void)x, (void)n;
	UNSUPPORTED(i, "fmi3GetContinuousStates");
}
FMI_EXPORT fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance i, fmi3Float64 nominals[], size_t n) {
	(void)nominals, (void)n;
	UNSUPPORTED(i, "fmi3GetNominalsOfContinuousStates");
}
FMI_EXPORT fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance i, size_t *n) {
	(void)n;
	UNSUPPORTED(i, "fmi3GetNumberOfEventIndicators");
}
FMI_EXPORT fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance i, size_t *n) {
	(void)n;
	UNSUPPORTED(i, "fmi3GetNumberOfContinuousStates");
}

/* Co-simulation. */
FMI_EXPORT fmi3Status fmi3EnterStepMode(fmi3Instance i) {
	ENTER(i, "fmi3EnterStepMode");
	if (shim_state(SHIM(i)) == S_STEP) LEAVE(i, fmi3OK); /* no event mode: in step mode already */
	LEAVE(i, shim_unsupported(SHIM(i), "fmi3EnterStepMode (the FMU has no event mode)"));
}

FMI_EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                               const fmi3Int32 orders[], fmi3Float64 v[], size_t n) {
	(void)vr, (void)nvr, (void)orders, (void)v, (void)n;
	UNSUPPORTED(i, "fmi3GetOutputDerivatives");
}

FMI_EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetPrior,
                                 fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation,
                                 fmi3Boolean *earlyReturn, fmi3Float64 *lastSuccessfulTime) {
	(void)noSetPrior;
	ENTER(i, "fmi3DoStep");
	int st = shim_do_step(SHIM(i), t, h);
	if (eventHandlingNeeded) *eventHandlingNeeded = false;
	/* The FMU never asks to end the simulation: a lost BeamNG fails the
	 * step, with the reason. */
	if (terminateSimulation) *terminateSimulation = false;
	if (earlyReturn) *earlyReturn = false;
	if (lastSuccessfulTime) *lastSuccessfulTime = shim_time(SHIM(i));
	LEAVE(i, st);
}

FMI_EXPORT fmi3Status fmi3ActivateModelPartition(fmi3Instance i, fmi3ValueReference clock, fmi3Float64 time) {
	(void)clock, (void)time;
	UNSUPPORTED(i, "fmi3ActivateModelPartition");
}

/* The FMI 2.0 co-simulation entry points, on the shim's core. Written for
 * beamconnect from the FMI 2.0 standard. */
#include <stdlib.h>
#include <string.h>

#include "shim.h"

typedef struct {
	shim *s;
	fmi2CallbackFunctions cb;
} instance2;

/* say2 logs through the master's logger. FMI 2.0's message is a printf
 * format in which #…# names variables: the text's % and # are doubled. */
static void say2(void *ctx, const char *name, int status, const char *category, const char *message) {
	instance2 *in = ctx;
	if (!in->cb.logger) return;
	size_t n = strlen(message);
	char *esc = malloc(2 * n + 1), *o = esc;
	if (!esc) return;
	for (const char *p = message; *p; p++) {
		if (*p == '%' || *p == '#') *o++ = *p;
		*o++ = *p;
	}
	*o = 0;
	in->cb.logger(in->cb.componentEnvironment, name, (fmi2Status)status, category, esc);
	free(esc);
}

#define SHIM(c) (((instance2 *)(c))->s)
/* ENTER takes the instance for the call fn (a second call at once, from
 * another thread, is refused: Error); LEAVE returns what expr returns,
 * having let the instance go. */
#define ENTER(c, fn)                                                                                                   \
	do {                                                                                                           \
		if (!(c) || shim_enter(SHIM(c), fn) != 0) return fmi2Error;                                            \
	} while (0)
#define LEAVE(c, expr)                                                                                                 \
	do {                                                                                                           \
		fmi2Status st_ = (fmi2Status)(expr);                                                                   \
		shim_leave(SHIM(c));                                                                                   \
		return st_;                                                                                            \
	} while (0)

FMI_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

FMI_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                         const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean logging) {
	(void)visible;
	instance2 *in = calloc(1, sizeof *in);
	if (!in) return NULL;
	if (cb) in->cb = *cb;
	if (type != fmi2CoSimulation) {
		say2(in, name ? name : "", fmi2Error, "logStatusError",
		     "this FMU is for co-simulation only: BeamNG.tech computes its outputs, and it has no model exchange interface");
		free(in);
		return NULL;
	}
	in->s = shim_new(2, name, guid, resources, logging, say2, in);
	if (!in->s) {
		free(in);
		return NULL;
	}
	return in;
}

FMI_EXPORT void fmi2FreeInstance(fmi2Component c) {
	if (!c) return;
	if (shim_free(SHIM(c)) == 0) free(c);
}

FMI_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String categories[]) {
	ENTER(c, "fmi2SetDebugLogging");
	shim_logging(SHIM(c), on, n, categories);
	LEAVE(c, fmi2OK);
}

FMI_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance,
                                          fmi2Real start, fmi2Boolean stopDefined, fmi2Real stop) {
	(void)toleranceDefined, (void)tolerance;
	ENTER(c, "fmi2SetupExperiment");
	LEAVE(c, shim_setup(SHIM(c), start, stopDefined, stop));
}

FMI_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) {
	ENTER(c, "fmi2EnterInitializationMode");
	LEAVE(c, shim_enter_initialization(SHIM(c)));
}

FMI_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
	ENTER(c, "fmi2ExitInitializationMode");
	LEAVE(c, shim_exit_initialization(SHIM(c)));
}

FMI_EXPORT fmi2Status fmi2Terminate(fmi2Component c) {
	ENTER(c, "fmi2Terminate");
	LEAVE(c, shim_terminate(SHIM(c)));
}

FMI_EXPORT fmi2Status fmi2Reset(fmi2Component c) {
	ENTER(c, "fmi2Reset");
	LEAVE(c, shim_reset(SHIM(c)));
}

FMI_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
	ENTER(c, "fmi2GetReal");
	LEAVE(c, shim_get_real(SHIM(c), "fmi2GetReal", vr, n, v));
}

FMI_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
	ENTER(c, "fmi2GetInteger");
	LEAVE(c, shim_get_integer(SHIM(c), "fmi2GetInteger", vr, n, (int32_t *)v));
}

FMI_EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
	(void)vr, (void)v;
	ENTER(c, "fmi2GetBoolean");
	LEAVE(c, shim_no_type(SHIM(c), "fmi2GetBoolean", "Boolean", n));
}

FMI_EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[]) {
	ENTER(c, "fmi2GetString");
	LEAVE(c, shim_get_string(SHIM(c), "fmi2GetString", vr, n, v));
}

FMI_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
	ENTER(c, "fmi2SetReal");
	LEAVE(c, shim_set_real(SHIM(c), "fmi2SetReal", vr, n, v));
}

FMI_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
	ENTER(c, "fmi2SetInteger");
	LEAVE(c, shim_set_integer(SHIM(c), "fmi2SetInteger", vr, n, (const int32_t *)v));
}

FMI_EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
	(void)vr, (void)v;
	ENTER(c, "fmi2SetBoolean");
	LEAVE(c, shim_no_type(SHIM(c), "fmi2SetBoolean", "Boolean", n));
}

FMI_EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[]) {
	ENTER(c, "fmi2SetString");
	LEAVE(c, shim_set_string(SHIM(c), "fmi2SetString", vr, n, v));
}

/* Not provided (the description says so): the coupled BeamNG's state
 * cannot be saved and restored. */
#define UNSUPPORTED(c, fn) return (fmi2Status)shim_unsupported((c) ? SHIM(c) : NULL, fn)

FMI_EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state) {
	(void)state;
	UNSUPPORTED(c, "fmi2GetFMUstate");
}
FMI_EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state) {
	(void)state;
	UNSUPPORTED(c, "fmi2SetFMUstate");
}
FMI_EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state) {
	(void)state;
	UNSUPPORTED(c, "fmi2FreeFMUstate");
}
FMI_EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size) {
	(void)state, (void)size;
	UNSUPPORTED(c, "fmi2SerializedFMUstateSize");
}
FMI_EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte data[], size_t size) {
	(void)state, (void)data, (void)size;
	UNSUPPORTED(c, "fmi2SerializeFMUstate");
}
FMI_EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte data[], size_t size, fmi2FMUstate *state) {
	(void)data, (void)size, (void)state;
	UNSUPPORTED(c, "fmi2DeSerializeFMUstate");
}
FMI_EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference unknown[], size_t nUnknown,
                                                   const fmi2ValueReference known[], size_t nKnown,
                                                   const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
	(void)unknown, (void)nUnknown, (void)known, (void)nKnown, (void)dvKnown, (void)dvUnknown;
	UNSUPPORTED(c, "fmi2GetDirectionalDerivative");
}

/* Model exchange: not this FMU's interface. */
FMI_EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) { UNSUPPORTED(c, "fmi2EnterEventMode"); }
FMI_EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
	(void)info;
	UNSUPPORTED(c, "fmi2NewDiscreteStates");
}
FMI_EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { UNSUPPORTED(c, "fmi2EnterContinuousTimeMode"); }
FMI_EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetPrior, fmi2Boolean *enterEventMode,
                                                  fmi2Boolean *terminateSimulation) {
	(void)noSetPrior, (void)enterEventMode, (void)terminateSimulation;
	UNSUPPORTED(c, "fmi2CompletedIntegratorStep");
}
FMI_EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real time) {
	(void)time;
	UNSUPPORTED(c, "fmi2SetTime");
}
FMI_EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx) {
	(void)x, (void)nx;
	UNSUPPORTED(c, "fmi2SetContinuousStates");
}
FMI_EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx) {
	(void)dx, (void)nx;
	UNSUPPORTED(c, "fmi2GetDerivatives");
}
FMI_EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t nz) {
	(void)z, (void)nz;
	UNSUPPORTED(c, "fmi2GetEventIndicators");
}
FMI_EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx) {
	(void)x, (void)nx;
	UNSUPPORTED(c, "fmi2GetContinuousStates");
}
FMI_EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real nominal[], size_t nx) {
	(void)nominal, (void)nx;
	UNSUPPORTED(c, "fmi2GetNominalsOfContinuousStates");
}

/* Co-simulation. */
FMI_EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                  const fmi2Integer order[], const fmi2Real v[]) {
	(void)vr, (void)n, (void)order, (void)v;
	UNSUPPORTED(c, "fmi2SetRealInputDerivatives");
}
FMI_EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                                   const fmi2Integer order[], fmi2Real v[]) {
	(void)vr, (void)n, (void)order, (void)v;
	UNSUPPORTED(c, "fmi2GetRealOutputDerivatives");
}

FMI_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior) {
	(void)noSetPrior;
	ENTER(c, "fmi2DoStep");
	LEAVE(c, shim_do_step(SHIM(c), t, h));
}

/* A step runs to its end before fmi2DoStep returns: there is never one
 * to cancel or to ask about. */
FMI_EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { UNSUPPORTED(c, "fmi2CancelStep"); }
FMI_EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Status *value) {
	(void)kind, (void)value;
	UNSUPPORTED(c, "fmi2GetStatus");
}
FMI_EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real *value) {
	ENTER(c, "fmi2GetRealStatus");
	if (kind != fmi2LastSuccessfulTime || !value) LEAVE(c, shim_unsupported(SHIM(c), "fmi2GetRealStatus (of another kind than fmi2LastSuccessfulTime)"));
	*value = shim_time(SHIM(c));
	LEAVE(c, fmi2OK);
}
FMI_EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Integer *value) {
	(void)kind, (void)value;
	UNSUPPORTED(c, "fmi2GetIntegerStatus");
}
FMI_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Boolean *value) {
	ENTER(c, "fmi2GetBooleanStatus");
	if (kind != fmi2Terminated || !value) LEAVE(c, shim_unsupported(SHIM(c), "fmi2GetBooleanStatus (of another kind than fmi2Terminated)"));
	*value = 0; /* the FMU never asks to end the simulation: a lost BeamNG fails the step */
	LEAVE(c, fmi2OK);
}
FMI_EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind kind, fmi2String *value) {
	(void)kind, (void)value;
	UNSUPPORTED(c, "fmi2GetStringStatus");
}

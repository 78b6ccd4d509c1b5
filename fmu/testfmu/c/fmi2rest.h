/* The rest of the FMI 2.0 API: every function the standard defines that a
 * test FMU does not define itself. The standard has an FMU export every
 * function of the common API and of its interfaces, whether it supports
 * the capability or not, and masters look each one up when they load the
 * binary (FMPy refuses one that lacks any: "undefined symbol"). Each of
 * these fails (fmi2Error), except a get or set of no variables, which has
 * nothing to do. A wrapper defines HAS_<function> for each function it
 * defines itself, then includes this file last. Written for beamconnect
 * from the FMI 2.0 standard. */
#ifndef BEAMCONNECT_FMI2REST_H
#define BEAMCONNECT_FMI2REST_H

#include "fmi2.h"

#define FMI2_REST_FAIL(name, params, uses)                                                                    \
	FMI2_EXPORT fmi2Status name params {                                                                       \
		(void)c, uses;                                                                                     \
		return fmi2Error;                                                                                  \
	}
/* A get or a set of n variables of a type the FMU has none of. */
#define FMI2_REST_VALUES(name, type, konst)                                                                   \
	FMI2_EXPORT fmi2Status name(fmi2Component c, const fmi2ValueReference vr[], size_t n, konst type v[]) {    \
		(void)c, (void)vr, (void)v;                                                                        \
		return n == 0 ? fmi2OK : fmi2Error;                                                                \
	}

#ifndef HAS_fmi2SetDebugLogging
FMI2_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[]) {
	(void)c, (void)on, (void)n, (void)cats;
	return fmi2OK;
}
#endif
#ifndef HAS_fmi2GetReal
FMI2_REST_VALUES(fmi2GetReal, fmi2Real, )
#endif
#ifndef HAS_fmi2SetReal
FMI2_REST_VALUES(fmi2SetReal, fmi2Real, const)
#endif
#ifndef HAS_fmi2GetInteger
FMI2_REST_VALUES(fmi2GetInteger, fmi2Integer, )
#endif
#ifndef HAS_fmi2SetInteger
FMI2_REST_VALUES(fmi2SetInteger, fmi2Integer, const)
#endif
#ifndef HAS_fmi2GetBoolean
FMI2_REST_VALUES(fmi2GetBoolean, fmi2Boolean, )
#endif
#ifndef HAS_fmi2SetBoolean
FMI2_REST_VALUES(fmi2SetBoolean, fmi2Boolean, const)
#endif
#ifndef HAS_fmi2GetString
FMI2_REST_VALUES(fmi2GetString, fmi2String, )
#endif
#ifndef HAS_fmi2SetString
FMI2_REST_VALUES(fmi2SetString, fmi2String, const)
#endif

#ifndef HAS_fmi2GetFMUstate
FMI2_REST_FAIL(fmi2GetFMUstate, (fmi2Component c, fmi2FMUstate *s), (void)s)
#endif
#ifndef HAS_fmi2SetFMUstate
FMI2_REST_FAIL(fmi2SetFMUstate, (fmi2Component c, fmi2FMUstate s), (void)s)
#endif
#ifndef HAS_fmi2FreeFMUstate
FMI2_REST_FAIL(fmi2FreeFMUstate, (fmi2Component c, fmi2FMUstate *s), (void)s)
#endif
#ifndef HAS_fmi2SerializedFMUstateSize
FMI2_REST_FAIL(fmi2SerializedFMUstateSize, (fmi2Component c, fmi2FMUstate s, size_t *size), ((void)s, (void)size))
#endif
#ifndef HAS_fmi2SerializeFMUstate
FMI2_REST_FAIL(fmi2SerializeFMUstate, (fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t size),
               ((void)s, (void)b, (void)size))
#endif
#ifndef HAS_fmi2DeSerializeFMUstate
FMI2_REST_FAIL(fmi2DeSerializeFMUstate, (fmi2Component c, const fmi2Byte b[], size_t size, fmi2FMUstate *s),
               ((void)b, (void)size, (void)s))
#endif
#ifndef HAS_fmi2GetDirectionalDerivative
FMI2_REST_FAIL(fmi2GetDirectionalDerivative,
               (fmi2Component c, const fmi2ValueReference unknown[], size_t nUnknown, const fmi2ValueReference known[],
                size_t nKnown, const fmi2Real dvKnown[], fmi2Real dvUnknown[]),
               ((void)unknown, (void)nUnknown, (void)known, (void)nKnown, (void)dvKnown, (void)dvUnknown))
#endif

/* Model exchange. */
#ifndef HAS_fmi2EnterEventMode
FMI2_REST_FAIL(fmi2EnterEventMode, (fmi2Component c), (void)0)
#endif
#ifndef HAS_fmi2NewDiscreteStates
FMI2_REST_FAIL(fmi2NewDiscreteStates, (fmi2Component c, fmi2EventInfo *info), (void)info)
#endif
#ifndef HAS_fmi2EnterContinuousTimeMode
FMI2_REST_FAIL(fmi2EnterContinuousTimeMode, (fmi2Component c), (void)0)
#endif
#ifndef HAS_fmi2CompletedIntegratorStep
FMI2_REST_FAIL(fmi2CompletedIntegratorStep,
               (fmi2Component c, fmi2Boolean noSetPrior, fmi2Boolean *enterEvent, fmi2Boolean *terminate),
               ((void)noSetPrior, (void)enterEvent, (void)terminate))
#endif
#ifndef HAS_fmi2SetTime
FMI2_REST_FAIL(fmi2SetTime, (fmi2Component c, fmi2Real t), (void)t)
#endif
#ifndef HAS_fmi2SetContinuousStates
FMI2_REST_FAIL(fmi2SetContinuousStates, (fmi2Component c, const fmi2Real x[], size_t n), ((void)x, (void)n))
#endif
#ifndef HAS_fmi2GetDerivatives
FMI2_REST_FAIL(fmi2GetDerivatives, (fmi2Component c, fmi2Real dx[], size_t n), ((void)dx, (void)n))
#endif
#ifndef HAS_fmi2GetEventIndicators
FMI2_REST_FAIL(fmi2GetEventIndicators, (fmi2Component c, fmi2Real z[], size_t n), ((void)z, (void)n))
#endif
#ifndef HAS_fmi2GetContinuousStates
FMI2_REST_FAIL(fmi2GetContinuousStates, (fmi2Component c, fmi2Real x[], size_t n), ((void)x, (void)n))
#endif
#ifndef HAS_fmi2GetNominalsOfContinuousStates
FMI2_REST_FAIL(fmi2GetNominalsOfContinuousStates, (fmi2Component c, fmi2Real x[], size_t n), ((void)x, (void)n))
#endif

/* Co-simulation. */
#ifndef HAS_fmi2SetRealInputDerivatives
FMI2_REST_FAIL(fmi2SetRealInputDerivatives,
               (fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer order[], const fmi2Real v[]),
               ((void)vr, (void)n, (void)order, (void)v))
#endif
#ifndef HAS_fmi2GetRealOutputDerivatives
FMI2_REST_FAIL(fmi2GetRealOutputDerivatives,
               (fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer order[], fmi2Real v[]),
               ((void)vr, (void)n, (void)order, (void)v))
#endif
#ifndef HAS_fmi2DoStep
FMI2_REST_FAIL(fmi2DoStep, (fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noSetPrior),
               ((void)t, (void)h, (void)noSetPrior))
#endif
/* A step ends before fmi2DoStep returns: there is never one to cancel. */
#ifndef HAS_fmi2CancelStep
FMI2_REST_FAIL(fmi2CancelStep, (fmi2Component c), (void)0)
#endif
#ifndef HAS_fmi2GetStatus
FMI2_REST_FAIL(fmi2GetStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Status *v), ((void)kind, (void)v))
#endif
#ifndef HAS_fmi2GetRealStatus
FMI2_REST_FAIL(fmi2GetRealStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Real *v), ((void)kind, (void)v))
#endif
#ifndef HAS_fmi2GetIntegerStatus
FMI2_REST_FAIL(fmi2GetIntegerStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Integer *v), ((void)kind, (void)v))
#endif
#ifndef HAS_fmi2GetBooleanStatus
FMI2_REST_FAIL(fmi2GetBooleanStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2Boolean *v), ((void)kind, (void)v))
#endif
#ifndef HAS_fmi2GetStringStatus
FMI2_REST_FAIL(fmi2GetStringStatus, (fmi2Component c, const fmi2StatusKind kind, fmi2String *v), ((void)kind, (void)v))
#endif

#endif

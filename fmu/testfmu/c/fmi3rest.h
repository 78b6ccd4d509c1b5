/* The rest of the FMI 3.0 API: every function the standard defines that a
 * test FMU does not define itself. The standard has an FMU export every
 * function of the common API and of its interfaces, whether it supports
 * the capability or not, and masters look each one up when they load the
 * binary (FMPy refuses one that lacks any). Each of these fails
 * (fmi3Error, or NULL for an instance), except a get or set of no
 * variables, which has nothing to do. A wrapper defines HAS_<function>
 * for each function it defines itself, then includes this file last.
 * Written for beamconnect from the FMI 3.0 standard. */
#ifndef BEAMCONNECT_FMI3REST_H
#define BEAMCONNECT_FMI3REST_H

#include "fmi3.h"

#define FMI3_REST_FAIL(name, params, uses)                                                                    \
	FMI3_EXPORT fmi3Status name params {                                                                       \
		(void)i, uses;                                                                                     \
		return fmi3Error;                                                                                  \
	}
/* A get or a set of n variables of a type the FMU has none of. */
#define FMI3_REST_VALUES(name, type, konst)                                                                   \
	FMI3_EXPORT fmi3Status name(fmi3Instance i, const fmi3ValueReference vr[], size_t n, konst type v[],       \
	                            size_t nv) {                                                                   \
		(void)i, (void)vr, (void)v, (void)nv;                                                              \
		return n == 0 ? fmi3OK : fmi3Error;                                                                \
	}

#ifndef HAS_fmi3SetDebugLogging
FMI3_EXPORT fmi3Status fmi3SetDebugLogging(fmi3Instance i, fmi3Boolean on, size_t n, const fmi3String cats[]) {
	(void)i, (void)on, (void)n, (void)cats;
	return fmi3OK;
}
#endif
#ifndef HAS_fmi3InstantiateModelExchange
FMI3_EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                                      fmi3Boolean visible, fmi3Boolean logging,
                                                      fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging;
	if (log) log(env, fmi3Error, "logStatusError", "this FMU has no model exchange interface");
	return NULL;
}
#endif
#ifndef HAS_fmi3InstantiateCoSimulation
FMI3_EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                                     fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean eventMode,
                                                     fmi3Boolean earlyReturn, const fmi3ValueReference required[],
                                                     size_t nRequired, fmi3InstanceEnvironment env,
                                                     fmi3LogMessageCallback log, fmi3IntermediateUpdateCallback update) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)eventMode, (void)earlyReturn;
	(void)required, (void)nRequired, (void)update;
	if (log) log(env, fmi3Error, "logStatusError", "this FMU has no co-simulation interface");
	return NULL;
}
#endif
#ifndef HAS_fmi3InstantiateScheduledExecution
FMI3_EXPORT fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                                           fmi3Boolean visible, fmi3Boolean logging,
                                                           fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                           fmi3ClockUpdateCallback clockUpdate,
                                                           fmi3LockPreemptionCallback lock,
                                                           fmi3UnlockPreemptionCallback unlock) {
	(void)name, (void)token, (void)resources, (void)visible, (void)logging, (void)clockUpdate, (void)lock, (void)unlock;
	if (log) log(env, fmi3Error, "logStatusError", "this FMU has no scheduled execution interface");
	return NULL;
}
#endif
#ifndef HAS_fmi3EnterEventMode
FMI3_REST_FAIL(fmi3EnterEventMode, (fmi3Instance i), (void)0)
#endif

#ifndef HAS_fmi3GetFloat32
FMI3_REST_VALUES(fmi3GetFloat32, fmi3Float32, )
#endif
#ifndef HAS_fmi3SetFloat32
FMI3_REST_VALUES(fmi3SetFloat32, fmi3Float32, const)
#endif
#ifndef HAS_fmi3GetFloat64
FMI3_REST_VALUES(fmi3GetFloat64, fmi3Float64, )
#endif
#ifndef HAS_fmi3SetFloat64
FMI3_REST_VALUES(fmi3SetFloat64, fmi3Float64, const)
#endif
#ifndef HAS_fmi3GetInt8
FMI3_REST_VALUES(fmi3GetInt8, fmi3Int8, )
#endif
#ifndef HAS_fmi3SetInt8
FMI3_REST_VALUES(fmi3SetInt8, fmi3Int8, const)
#endif
#ifndef HAS_fmi3GetUInt8
FMI3_REST_VALUES(fmi3GetUInt8, fmi3UInt8, )
#endif
#ifndef HAS_fmi3SetUInt8
FMI3_REST_VALUES(fmi3SetUInt8, fmi3UInt8, const)
#endif
#ifndef HAS_fmi3GetInt16
FMI3_REST_VALUES(fmi3GetInt16, fmi3Int16, )
#endif
#ifndef HAS_fmi3SetInt16
FMI3_REST_VALUES(fmi3SetInt16, fmi3Int16, const)
#endif
#ifndef HAS_fmi3GetUInt16
FMI3_REST_VALUES(fmi3GetUInt16, fmi3UInt16, )
#endif
#ifndef HAS_fmi3SetUInt16
FMI3_REST_VALUES(fmi3SetUInt16, fmi3UInt16, const)
#endif
#ifndef HAS_fmi3GetInt32
FMI3_REST_VALUES(fmi3GetInt32, fmi3Int32, )
#endif
#ifndef HAS_fmi3SetInt32
FMI3_REST_VALUES(fmi3SetInt32, fmi3Int32, const)
#endif
#ifndef HAS_fmi3GetUInt32
FMI3_REST_VALUES(fmi3GetUInt32, fmi3UInt32, )
#endif
#ifndef HAS_fmi3SetUInt32
FMI3_REST_VALUES(fmi3SetUInt32, fmi3UInt32, const)
#endif
#ifndef HAS_fmi3GetInt64
FMI3_REST_VALUES(fmi3GetInt64, fmi3Int64, )
#endif
#ifndef HAS_fmi3SetInt64
FMI3_REST_VALUES(fmi3SetInt64, fmi3Int64, const)
#endif
#ifndef HAS_fmi3GetUInt64
FMI3_REST_VALUES(fmi3GetUInt64, fmi3UInt64, )
#endif
#ifndef HAS_fmi3SetUInt64
FMI3_REST_VALUES(fmi3SetUInt64, fmi3UInt64, const)
#endif
#ifndef HAS_fmi3GetBoolean
FMI3_REST_VALUES(fmi3GetBoolean, fmi3Boolean, )
#endif
#ifndef HAS_fmi3SetBoolean
FMI3_REST_VALUES(fmi3SetBoolean, fmi3Boolean, const)
#endif
#ifndef HAS_fmi3GetString
FMI3_REST_VALUES(fmi3GetString, fmi3String, )
#endif
#ifndef HAS_fmi3SetString
FMI3_REST_VALUES(fmi3SetString, fmi3String, const)
#endif
#ifndef HAS_fmi3GetBinary
FMI3_EXPORT fmi3Status fmi3GetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, size_t sizes[],
                                     fmi3Binary v[], size_t nv) {
	(void)i, (void)vr, (void)sizes, (void)v, (void)nv;
	return n == 0 ? fmi3OK : fmi3Error;
}
#endif
#ifndef HAS_fmi3SetBinary
FMI3_EXPORT fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const size_t sizes[],
                                     const fmi3Binary v[], size_t nv) {
	(void)i, (void)vr, (void)sizes, (void)v, (void)nv;
	return n == 0 ? fmi3OK : fmi3Error;
}
#endif
#ifndef HAS_fmi3GetClock
FMI3_EXPORT fmi3Status fmi3GetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Clock v[]) {
	(void)i, (void)vr, (void)v;
	return n == 0 ? fmi3OK : fmi3Error;
}
#endif
#ifndef HAS_fmi3SetClock
FMI3_EXPORT fmi3Status fmi3SetClock(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Clock v[]) {
	(void)i, (void)vr, (void)v;
	return n == 0 ? fmi3OK : fmi3Error;
}
#endif

#ifndef HAS_fmi3GetNumberOfVariableDependencies
FMI3_REST_FAIL(fmi3GetNumberOfVariableDependencies, (fmi3Instance i, fmi3ValueReference vr, size_t *n),
               ((void)vr, (void)n))
#endif
#ifndef HAS_fmi3GetVariableDependencies
FMI3_REST_FAIL(fmi3GetVariableDependencies,
               (fmi3Instance i, fmi3ValueReference dependent, size_t elements[], fmi3ValueReference independents[],
                size_t independentElements[], fmi3DependencyKind kinds[], size_t n),
               ((void)dependent, (void)elements, (void)independents, (void)independentElements, (void)kinds, (void)n))
#endif
#ifndef HAS_fmi3GetFMUState
FMI3_REST_FAIL(fmi3GetFMUState, (fmi3Instance i, fmi3FMUState *s), (void)s)
#endif
#ifndef HAS_fmi3SetFMUState
FMI3_REST_FAIL(fmi3SetFMUState, (fmi3Instance i, fmi3FMUState s), (void)s)
#endif
#ifndef HAS_fmi3FreeFMUState
FMI3_REST_FAIL(fmi3FreeFMUState, (fmi3Instance i, fmi3FMUState *s), (void)s)
#endif
#ifndef HAS_fmi3SerializedFMUStateSize
FMI3_REST_FAIL(fmi3SerializedFMUStateSize, (fmi3Instance i, fmi3FMUState s, size_t *size), ((void)s, (void)size))
#endif
#ifndef HAS_fmi3SerializeFMUState
FMI3_REST_FAIL(fmi3SerializeFMUState, (fmi3Instance i, fmi3FMUState s, fmi3Byte b[], size_t size),
               ((void)s, (void)b, (void)size))
#endif
#ifndef HAS_fmi3DeserializeFMUState
FMI3_REST_FAIL(fmi3DeserializeFMUState, (fmi3Instance i, const fmi3Byte b[], size_t size, fmi3FMUState *s),
               ((void)b, (void)size, (void)s))
#endif
#ifndef HAS_fmi3GetDirectionalDerivative
FMI3_REST_FAIL(fmi3GetDirectionalDerivative,
               (fmi3Instance i, const fmi3ValueReference unknowns[], size_t nUnknowns, const fmi3ValueReference knowns[],
                size_t nKnowns, const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[], size_t nSensitivity),
               ((void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed,
                (void)sensitivity, (void)nSensitivity))
#endif
#ifndef HAS_fmi3GetAdjointDerivative
FMI3_REST_FAIL(fmi3GetAdjointDerivative,
               (fmi3Instance i, const fmi3ValueReference unknowns[], size_t nUnknowns, const fmi3ValueReference knowns[],
                size_t nKnowns, const fmi3Float64 seed[], size_t nSeed, fmi3Float64 sensitivity[], size_t nSensitivity),
               ((void)unknowns, (void)nUnknowns, (void)knowns, (void)nKnowns, (void)seed, (void)nSeed,
                (void)sensitivity, (void)nSensitivity))
#endif
#ifndef HAS_fmi3EnterConfigurationMode
FMI3_REST_FAIL(fmi3EnterConfigurationMode, (fmi3Instance i), (void)0)
#endif
#ifndef HAS_fmi3ExitConfigurationMode
FMI3_REST_FAIL(fmi3ExitConfigurationMode, (fmi3Instance i), (void)0)
#endif

/* Clocks: the test FMUs have none, so asking about none is answered. */
#define FMI3_REST_CLOCKS(name, params, uses)                                                                  \
	FMI3_EXPORT fmi3Status name params {                                                                       \
		(void)i, (void)vr, uses;                                                                           \
		return n == 0 ? fmi3OK : fmi3Error;                                                                \
	}
#ifndef HAS_fmi3GetIntervalDecimal
FMI3_REST_CLOCKS(fmi3GetIntervalDecimal,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 intervals[],
                  fmi3IntervalQualifier qualifiers[]),
                 ((void)intervals, (void)qualifiers))
#endif
#ifndef HAS_fmi3GetIntervalFraction
FMI3_REST_CLOCKS(fmi3GetIntervalFraction,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3UInt64 counters[],
                  fmi3UInt64 resolutions[], fmi3IntervalQualifier qualifiers[]),
                 ((void)counters, (void)resolutions, (void)qualifiers))
#endif
#ifndef HAS_fmi3GetShiftDecimal
FMI3_REST_CLOCKS(fmi3GetShiftDecimal, (fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 shifts[]),
                 (void)shifts)
#endif
#ifndef HAS_fmi3GetShiftFraction
FMI3_REST_CLOCKS(fmi3GetShiftFraction,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3UInt64 counters[],
                  fmi3UInt64 resolutions[]),
                 ((void)counters, (void)resolutions))
#endif
#ifndef HAS_fmi3SetIntervalDecimal
FMI3_REST_CLOCKS(fmi3SetIntervalDecimal,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 intervals[]),
                 (void)intervals)
#endif
#ifndef HAS_fmi3SetIntervalFraction
FMI3_REST_CLOCKS(fmi3SetIntervalFraction,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 counters[],
                  const fmi3UInt64 resolutions[]),
                 ((void)counters, (void)resolutions))
#endif
#ifndef HAS_fmi3SetShiftDecimal
FMI3_REST_CLOCKS(fmi3SetShiftDecimal,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 shifts[]), (void)shifts)
#endif
#ifndef HAS_fmi3SetShiftFraction
FMI3_REST_CLOCKS(fmi3SetShiftFraction,
                 (fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 counters[],
                  const fmi3UInt64 resolutions[]),
                 ((void)counters, (void)resolutions))
#endif
#ifndef HAS_fmi3EvaluateDiscreteStates
FMI3_REST_FAIL(fmi3EvaluateDiscreteStates, (fmi3Instance i), (void)0)
#endif
#ifndef HAS_fmi3UpdateDiscreteStates
FMI3_REST_FAIL(fmi3UpdateDiscreteStates,
               (fmi3Instance i, fmi3Boolean *again, fmi3Boolean *terminate, fmi3Boolean *nominalsChanged,
                fmi3Boolean *valuesChanged, fmi3Boolean *nextDefined, fmi3Float64 *next),
               ((void)again, (void)terminate, (void)nominalsChanged, (void)valuesChanged, (void)nextDefined, (void)next))
#endif

/* Model exchange. */
#ifndef HAS_fmi3EnterContinuousTimeMode
FMI3_REST_FAIL(fmi3EnterContinuousTimeMode, (fmi3Instance i), (void)0)
#endif
#ifndef HAS_fmi3CompletedIntegratorStep
FMI3_REST_FAIL(fmi3CompletedIntegratorStep,
               (fmi3Instance i, fmi3Boolean noSetPrior, fmi3Boolean *enterEvent, fmi3Boolean *terminate),
               ((void)noSetPrior, (void)enterEvent, (void)terminate))
#endif
#ifndef HAS_fmi3SetTime
FMI3_REST_FAIL(fmi3SetTime, (fmi3Instance i, fmi3Float64 t), (void)t)
#endif
#ifndef HAS_fmi3SetContinuousStates
FMI3_REST_FAIL(fmi3SetContinuousStates, (fmi3Instance i, const fmi3Float64 x[], size_t n), ((void)x, (void)n))
#endif
#ifndef HAS_fmi3GetContinuousStateDerivatives
FMI3_REST_FAIL(fmi3GetContinuousStateDerivatives, (fmi3Instance i, fmi3Float64 dx[], size_t n), ((void)dx, (void)n))
#endif
#ifndef HAS_fmi3GetEventIndicators
FMI3_REST_FAIL(fmi3GetEventIndicators, (fmi3Instance i, fmi3Float64 z[], size_t n), ((void)z, (void)n))
#endif
#ifndef HAS_fmi3GetContinuousStates
FMI3_REST_FAIL(fmi3GetContinuousStates, (fmi3Instance i, fmi3Float64 x[], size_t n), ((void)x, (void)n))
#endif
#ifndef HAS_fmi3GetNominalsOfContinuousStates
FMI3_REST_FAIL(fmi3GetNominalsOfContinuousStates, (fmi3Instance i, fmi3Float64 x[], size_t n), ((void)x, (void)n))
#endif
#ifndef HAS_fmi3GetNumberOfEventIndicators
FMI3_REST_FAIL(fmi3GetNumberOfEventIndicators, (fmi3Instance i, size_t *n), (void)n)
#endif
#ifndef HAS_fmi3GetNumberOfContinuousStates
FMI3_REST_FAIL(fmi3GetNumberOfContinuousStates, (fmi3Instance i, size_t *n), (void)n)
#endif

/* Co-simulation. */
#ifndef HAS_fmi3EnterStepMode
FMI3_REST_FAIL(fmi3EnterStepMode, (fmi3Instance i), (void)0)
#endif
#ifndef HAS_fmi3GetOutputDerivatives
FMI3_REST_FAIL(fmi3GetOutputDerivatives,
               (fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int32 orders[], fmi3Float64 v[],
                size_t nv),
               ((void)vr, (void)n, (void)orders, (void)v, (void)nv))
#endif
#ifndef HAS_fmi3DoStep
FMI3_REST_FAIL(fmi3DoStep,
               (fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetPrior, fmi3Boolean *eventNeeded,
                fmi3Boolean *terminate, fmi3Boolean *earlyReturn, fmi3Float64 *lastTime),
               ((void)t, (void)h, (void)noSetPrior, (void)eventNeeded, (void)terminate, (void)earlyReturn,
                (void)lastTime))
#endif

/* Scheduled execution. */
#ifndef HAS_fmi3ActivateModelPartition
FMI3_REST_FAIL(fmi3ActivateModelPartition, (fmi3Instance i, fmi3ValueReference clock, fmi3Float64 t),
               ((void)clock, (void)t))
#endif

#endif

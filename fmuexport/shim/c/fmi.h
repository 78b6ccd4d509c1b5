/* The FMI 2.0 and 3.0 declarations the shim implements, written for
 * beamconnect from the two standards: their types, status codes and the
 * callbacks an importer hands an FMU. The functions themselves are
 * declared where they are defined (fmi2.c, fmi3.c). */
#ifndef BEAMCONNECT_SHIM_FMI_H
#define BEAMCONNECT_SHIM_FMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FMI_EXPORT __declspec(dllexport)
#else
#define FMI_EXPORT __attribute__((visibility("default")))
#endif

/* FMI 2.0 */
typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;

typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;

typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment env, fmi2String instanceName, fmi2Status status,
                                   fmi2String category, fmi2String message, ...);
typedef struct {
	fmi2CallbackLogger logger;
	void *(*allocateMemory)(size_t nobj, size_t size);
	void (*freeMemory)(void *obj);
	void (*stepFinished)(fmi2ComponentEnvironment env, fmi2Status status);
	fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

typedef struct {
	fmi2Boolean newDiscreteStatesNeeded;
	fmi2Boolean terminateSimulation;
	fmi2Boolean nominalsOfContinuousStatesChanged;
	fmi2Boolean valuesOfContinuousStatesChanged;
	fmi2Boolean nextEventTimeDefined;
	fmi2Real nextEventTime;
} fmi2EventInfo;

/* FMI 3.0 */
typedef void *fmi3Instance;
typedef void *fmi3InstanceEnvironment;
typedef void *fmi3FMUState;
typedef uint32_t fmi3ValueReference;
typedef float fmi3Float32;
typedef double fmi3Float64;
typedef int8_t fmi3Int8;
typedef uint8_t fmi3UInt8;
typedef int16_t fmi3Int16;
typedef uint16_t fmi3UInt16;
typedef int32_t fmi3Int32;
typedef uint32_t fmi3UInt32;
typedef int64_t fmi3Int64;
typedef uint64_t fmi3UInt64;
typedef bool fmi3Boolean;
typedef char fmi3Char;
typedef const fmi3Char *fmi3String;
typedef uint8_t fmi3Byte;
typedef const fmi3Byte *fmi3Binary;
typedef bool fmi3Clock;

typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;
typedef enum { fmi3IntervalNotYetKnown, fmi3IntervalUnchanged, fmi3IntervalChanged } fmi3IntervalQualifier;
typedef enum { fmi3Independent, fmi3Constant, fmi3Fixed, fmi3Tunable, fmi3Discrete, fmi3Dependent } fmi3DependencyKind;

typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                                       fmi3String message);
typedef void (*fmi3IntermediateUpdateCallback)(fmi3InstanceEnvironment env, fmi3Float64 time,
                                               fmi3Boolean variableSetRequested, fmi3Boolean variableGetAllowed,
                                               fmi3Boolean stepFinished, fmi3Boolean canReturnEarly,
                                               fmi3Boolean *earlyReturnRequested, fmi3Float64 *earlyReturnTime);
typedef void (*fmi3ClockUpdateCallback)(fmi3InstanceEnvironment env);
typedef void (*fmi3LockPreemptionCallback)(void);
typedef void (*fmi3UnlockPreemptionCallback)(void);

#endif

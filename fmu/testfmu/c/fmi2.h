/* The FMI 2.0 declarations the test FMUs implement, written for beamconnect
 * from the FMI 2.0 standard: its types, status codes and callbacks. */
#ifndef BEAMCONNECT_FMI2_H
#define BEAMCONNECT_FMI2_H

#include <stddef.h>

#if defined(_WIN32)
#define FMI2_EXPORT __declspec(dllexport)
#else
#define FMI2_EXPORT __attribute__((visibility("default")))
#endif

typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef const char *fmi2String;
typedef char fmi2Byte;

typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;

typedef struct {
	void (*logger)(fmi2ComponentEnvironment env, fmi2String instanceName, fmi2Status status,
	               fmi2String category, fmi2String message, ...);
	void *(*allocateMemory)(size_t nobj, size_t size);
	void (*freeMemory)(void *obj);
	void (*stepFinished)(fmi2ComponentEnvironment env, fmi2Status status);
	fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

typedef struct {
	fmi2Boolean newDiscreteStatesNeeded, terminateSimulation, nominalsOfContinuousStatesChanged,
	    valuesOfContinuousStatesChanged, nextEventTimeDefined;
	fmi2Real nextEventTime;
} fmi2EventInfo;

#endif

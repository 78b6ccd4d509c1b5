/* The FMI 3.0 co-simulation declarations the test FMUs implement, written
 * for beamconnect from the FMI 3.0 standard. */
#ifndef BEAMCONNECT_FMI3_H
#define BEAMCONNECT_FMI3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FMI3_EXPORT __declspec(dllexport)
#else
#define FMI3_EXPORT __attribute__((visibility("default")))
#endif

typedef void *fmi3Instance;
typedef void *fmi3InstanceEnvironment;
typedef uint32_t fmi3ValueReference;
typedef double fmi3Float64;
typedef float fmi3Float32;
typedef int32_t fmi3Int32;
typedef bool fmi3Boolean;
typedef const char *fmi3String;

typedef enum { fmi3OK, fmi3Warning, fmi3Discard, fmi3Error, fmi3Fatal } fmi3Status;

typedef void (*fmi3LogMessageCallback)(fmi3InstanceEnvironment env, fmi3Status status,
                                       fmi3String category, fmi3String message);
typedef void (*fmi3IntermediateUpdateCallback)(fmi3InstanceEnvironment env, fmi3Float64 time,
                                               fmi3Boolean variableSetRequested, fmi3Boolean variableGetAllowed,
                                               fmi3Boolean stepFinished, fmi3Boolean canReturnEarly,
                                               fmi3Boolean *earlyReturnRequested, fmi3Float64 *earlyReturnTime);

#endif

/* What the tests' FMI master (master.c) and its probes (probe.c) share:
 * the FMI 2.0 and 3.0 declarations they call, written for beamconnect
 * from the two standards, and the master's logger and library loading. */
#ifndef BEAMCONNECT_TESTMASTER_H
#define BEAMCONNECT_TESTMASTER_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#define LIBEXT ".dll"
#define SEP "\\"
#else
#include <dlfcn.h>
#include <signal.h>
#define LIBEXT ".so"
#define SEP "/"
#endif

/* FMI 2.0 */
typedef void *fmi2Component;
typedef unsigned int fmi2ValueReference;
typedef int fmi2Status;
typedef struct {
	void (*logger)(void *env, const char *name, int status, const char *category, const char *message, ...);
	void *(*allocateMemory)(size_t n, size_t size);
	void (*freeMemory)(void *p);
	void (*stepFinished)(void *env, int status);
	void *env;
} fmi2Callbacks;
typedef fmi2Component (*fmi2InstantiateFn)(const char *, int, const char *, const char *, const fmi2Callbacks *, int, int);
typedef void (*fmi2FreeInstanceFn)(fmi2Component);
typedef fmi2Status (*fmi2SetupExperimentFn)(fmi2Component, int, double, double, int, double);
typedef fmi2Status (*fmi2ComponentFn)(fmi2Component);
typedef fmi2Status (*fmi2SetRealFn)(fmi2Component, const fmi2ValueReference *, size_t, const double *);
typedef fmi2Status (*fmi2GetRealFn)(fmi2Component, const fmi2ValueReference *, size_t, double *);
typedef fmi2Status (*fmi2SetIntegerFn)(fmi2Component, const fmi2ValueReference *, size_t, const int *);
typedef fmi2Status (*fmi2SetStringFn)(fmi2Component, const fmi2ValueReference *, size_t, const char *const *);
typedef fmi2Status (*fmi2DoStepFn)(fmi2Component, double, double, int);

/* FMI 3.0 */
typedef void *fmi3Instance;
typedef uint32_t fmi3ValueReference;
typedef void (*fmi3LogFn)(void *env, int status, const char *category, const char *message);
typedef fmi3Instance (*fmi3InstantiateCoSimulationFn)(const char *, const char *, const char *, bool, bool, bool, bool,
                                                      const fmi3ValueReference *, size_t, void *, fmi3LogFn, void *);
typedef void (*fmi3FreeInstanceFn)(fmi3Instance);
typedef int (*fmi3EnterInitializationModeFn)(fmi3Instance, bool, double, double, bool, double);
typedef int (*fmi3InstanceFn)(fmi3Instance);
typedef int (*fmi3SetFloat64Fn)(fmi3Instance, const fmi3ValueReference *, size_t, const double *, size_t);
typedef int (*fmi3GetFloat64Fn)(fmi3Instance, const fmi3ValueReference *, size_t, double *, size_t);
typedef int (*fmi3SetInt32Fn)(fmi3Instance, const fmi3ValueReference *, size_t, const int32_t *, size_t);
typedef int (*fmi3SetStringFn)(fmi3Instance, const fmi3ValueReference *, size_t, const char *const *, size_t);
typedef int (*fmi3DoStepFn)(fmi3Instance, double, double, bool, bool *, bool *, bool *, double *);

extern const char *names[];

/* say prints a log line as "[STATUS] category: message", at once;
 * log_hook, when set, sees every message too. */
void say(int status, const char *category, const char *message);
extern void (*log_hook)(const char *message);
void logger2(void *env, const char *name, int status, const char *category, const char *message, ...);
void logger3(void *env, int status, const char *category, const char *message);

void *lib_open(const char *path);
void *sym(void *lib, const char *name); /* exits 10 when the library lacks it */
void lib_close(void *lib);
/* lib_path is the library of the unpacked FMU dir for FMI fmi. */
void lib_path(char *out, size_t n, const char *dir, const char *id, int fmi);
/* uri is FMI 2.0's resource location of folder dir. */
void uri(char *out, size_t n, const char *dir);
double number(const char *s);

/* probe runs one of probe.c's probes: master -probe ... */
int probe(int argc, char **argv);

#endif

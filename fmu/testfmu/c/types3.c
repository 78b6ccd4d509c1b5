/* An FMI 3.0 co-simulation FMU that exchanges every numeric type: each
 * integer input comes back as an output one greater (in its own type),
 * the Float32 doubled in Float32, the enumeration as it is, the Boolean
 * negated; y = gain (u[1] + 2 u[2] + 3 u[3]) + 10 (w[1] + … + w[n]),
 * with u a Float64[3], w a Float64[n] and n a structural parameter (1 to
 * 8); texts = the length of the String label + 100 × the Binary blob's;
 * m = {n, the time}. gain takes 0 to 10 and refuses anything else, as its
 * min and max say. Written for beamconnect from the FMI 3.0 standard. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmi3.h"

/* The functions defined here; fmi3rest.h, included last, defines the rest. */
#define HAS_fmi3GetVersion
#define HAS_fmi3InstantiateCoSimulation
#define HAS_fmi3FreeInstance
#define HAS_fmi3EnterConfigurationMode
#define HAS_fmi3ExitConfigurationMode
#define HAS_fmi3EnterInitializationMode
#define HAS_fmi3ExitInitializationMode
#define HAS_fmi3Terminate
#define HAS_fmi3Reset
#define HAS_fmi3GetInt64
#define HAS_fmi3SetInt64
#define HAS_fmi3GetUInt64
#define HAS_fmi3SetUInt64
#define HAS_fmi3GetFloat64
#define HAS_fmi3SetFloat64
#define HAS_fmi3SetString
#define HAS_fmi3SetBinary
#define HAS_fmi3DoStep
#define HAS_fmi3GetInt8
#define HAS_fmi3SetInt8
#define HAS_fmi3GetUInt8
#define HAS_fmi3SetUInt8
#define HAS_fmi3GetInt16
#define HAS_fmi3SetInt16
#define HAS_fmi3GetUInt16
#define HAS_fmi3SetUInt16
#define HAS_fmi3GetInt32
#define HAS_fmi3SetInt32
#define HAS_fmi3GetUInt32
#define HAS_fmi3SetUInt32
#define HAS_fmi3GetFloat32
#define HAS_fmi3SetFloat32
#define HAS_fmi3GetBoolean
#define HAS_fmi3SetBoolean


#define MAX_N 8

typedef struct {
	fmi3Int8 i8, o_i8;
	fmi3UInt8 u8, o_u8;
	fmi3Int16 i16, o_i16;
	fmi3UInt16 u16, o_u16;
	fmi3Int32 i32, o_i32;
	fmi3UInt32 u32, o_u32;
	fmi3Int64 i64, o_i64;
	fmi3UInt64 u64, o_u64;
	fmi3Float32 f32, o_f32;
	fmi3Int64 mode, o_mode;
	fmi3Boolean flag, o_flag;
	double u[3], w[MAX_N], gain, y, texts, m[2], time;
	fmi3UInt64 n;
	size_t labelLen, blobLen;
	int configuring;
	fmi3InstanceEnvironment env;
	fmi3LogMessageCallback log;
} instance;

static void say(instance *in, fmi3Status s, const char *msg) {
	if (in->log) in->log(in->env, s, "types", msg);
}

static void reset(instance *in) {
	fmi3InstanceEnvironment env = in->env;
	fmi3LogMessageCallback log = in->log;
	memset(in, 0, sizeof *in);
	in->env = env, in->log = log;
	in->mode = 1, in->n = 2, in->gain = 1;
}

static void compute(instance *in) {
	in->o_i8 = (fmi3Int8)(in->i8 + 1);
	in->o_u8 = (fmi3UInt8)(in->u8 + 1);
	in->o_i16 = (fmi3Int16)(in->i16 + 1);
	in->o_u16 = (fmi3UInt16)(in->u16 + 1);
	in->o_i32 = (fmi3Int32)((uint32_t)in->i32 + 1u);
	in->o_u32 = in->u32 + 1u;
	in->o_i64 = (fmi3Int64)((uint64_t)in->i64 + 1u);
	in->o_u64 = in->u64 + 1u;
	in->o_f32 = in->f32 * 2.0f;
	in->o_mode = in->mode;
	in->o_flag = !in->flag;
	double sw = 0;
	for (fmi3UInt64 k = 0; k < in->n; k++) sw += in->w[k];
	in->y = in->gain * (in->u[0] + 2 * in->u[1] + 3 * in->u[2]) + 10 * sw;
	in->texts = (double)in->labelLen + 100.0 * (double)in->blobLen;
	in->m[0] = (double)in->n, in->m[1] = in->time;
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
	if (strcmp(token, TYPES_TOKEN) != 0) return NULL;
	instance *in = calloc(1, sizeof(instance));
	if (!in) return NULL;
	in->env = env, in->log = log;
	reset(in);
	return in;
}

FMI3_EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }

FMI3_EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) {
	((instance *)i)->configuring = 1;
	return fmi3OK;
}
FMI3_EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) {
	((instance *)i)->configuring = 0;
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean tolDefined, fmi3Float64 tol,
                                                   fmi3Float64 start, fmi3Boolean stopDefined, fmi3Float64 stop) {
	(void)tolDefined, (void)tol, (void)stopDefined, (void)stop;
	((instance *)i)->time = start;
	return fmi3OK;
}
FMI3_EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
	compute(i);
	return fmi3OK;
}
FMI3_EXPORT fmi3Status fmi3Terminate(fmi3Instance i) { (void)i; return fmi3OK; }
FMI3_EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
	reset(i);
	return fmi3OK;
}

/* SCALARS defines fmi3Get and fmi3Set of a type whose input is vr in
 * (field f) and output vr out (field o). */
#define SCALARS(Name, T, in_vr, f, out_vr, o)                                                               \
	FMI3_EXPORT fmi3Status fmi3Get##Name(fmi3Instance i, const fmi3ValueReference vr[], size_t n, T v[],    \
	                                     size_t nv) {                                                        \
		instance *in = i;                                                                                \
		if (nv != n) return fmi3Error;                                                                   \
		for (size_t k = 0; k < n; k++) {                                                                 \
			if (vr[k] == in_vr) v[k] = in->f;                                                        \
			else if (vr[k] == out_vr) v[k] = in->o;                                                  \
			else return fmi3Error;                                                                   \
		}                                                                                                \
		return fmi3OK;                                                                                   \
	}                                                                                                        \
	FMI3_EXPORT fmi3Status fmi3Set##Name(fmi3Instance i, const fmi3ValueReference vr[], size_t n,           \
	                                     const T v[], size_t nv) {                                           \
		instance *in = i;                                                                                \
		if (nv != n) return fmi3Error;                                                                   \
		for (size_t k = 0; k < n; k++) {                                                                 \
			if (vr[k] != in_vr) return fmi3Error;                                                    \
			in->f = v[k];                                                                            \
		}                                                                                                \
		return fmi3OK;                                                                                   \
	}
SCALARS(Int8, fmi3Int8, 1, i8, 21, o_i8)
SCALARS(UInt8, fmi3UInt8, 2, u8, 22, o_u8)
SCALARS(Int16, fmi3Int16, 3, i16, 23, o_i16)
SCALARS(UInt16, fmi3UInt16, 4, u16, 24, o_u16)
SCALARS(Int32, fmi3Int32, 5, i32, 25, o_i32)
SCALARS(UInt32, fmi3UInt32, 6, u32, 26, o_u32)
SCALARS(Float32, fmi3Float32, 9, f32, 29, o_f32)
SCALARS(Boolean, fmi3Boolean, 11, flag, 31, o_flag)

/* Int64 holds i64 and the enumeration mode (items 1, 2, 3). */
FMI3_EXPORT fmi3Status fmi3GetInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Int64 v[], size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		switch (vr[k]) {
		case 7: v[k] = in->i64; break;
		case 27: v[k] = in->o_i64; break;
		case 10: v[k] = in->mode; break;
		case 30: v[k] = in->o_mode; break;
		default: return fmi3Error;
		}
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int64 v[],
                                    size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		if (vr[k] == 7) {
			in->i64 = v[k];
		} else if (vr[k] == 10 && v[k] >= 1 && v[k] <= 3) {
			in->mode = v[k];
		} else {
			say(in, fmi3Error, "no such Int64 variable, or a mode with no item");
			return fmi3Error;
		}
	}
	return fmi3OK;
}

/* UInt64 holds u64 and the structural parameter n. */
FMI3_EXPORT fmi3Status fmi3GetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3UInt64 v[],
                                     size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		switch (vr[k]) {
		case 8: v[k] = in->u64; break;
		case 28: v[k] = in->o_u64; break;
		case 13: v[k] = in->n; break;
		default: return fmi3Error;
		}
	}
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3UInt64 v[],
                                     size_t nv) {
	instance *in = i;
	if (nv != n) return fmi3Error;
	for (size_t k = 0; k < n; k++) {
		if (vr[k] == 8) {
			in->u64 = v[k];
		} else if (vr[k] == 13 && in->configuring && v[k] >= 1 && v[k] <= MAX_N) {
			in->n = v[k];
		} else {
			say(in, fmi3Error, "n is set in configuration mode only, to 1 to 8");
			return fmi3Error;
		}
	}
	return fmi3OK;
}

/* Float64: the arrays u (vr 12, 3), w (14, n) and m (34, 2), the
 * scalars gain (15), y (32), texts (33) and the time (0, the
 * independent variable); the values of all the
 * variables asked for, one after the other. */
static double *float64s(instance *in, fmi3ValueReference vr, size_t *count) {
	switch (vr) {
	case 0: *count = 1; return &in->time; /* the independent variable */
	case 12: *count = 3; return in->u;
	case 14: *count = (size_t)in->n; return in->w;
	case 34: *count = 2; return in->m;
	case 15: *count = 1; return &in->gain;
	case 32: *count = 1; return &in->y;
	case 33: *count = 1; return &in->texts;
	}
	return NULL;
}

FMI3_EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[],
                                      size_t nv) {
	instance *in = i;
	size_t at = 0;
	for (size_t k = 0; k < n; k++) {
		size_t count;
		double *p = float64s(in, vr[k], &count);
		if (!p || at + count > nv) return fmi3Error;
		memcpy(v + at, p, count * sizeof(double));
		at += count;
	}
	return at == nv ? fmi3OK : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                      size_t nv) {
	instance *in = i;
	size_t at = 0;
	for (size_t k = 0; k < n; k++) {
		size_t count;
		double *p = float64s(in, vr[k], &count);
		if (!p || vr[k] == 0 || vr[k] == 32 || vr[k] == 33 || vr[k] == 34 || at + count > nv) return fmi3Error;
		if (vr[k] == 15 && !(v[at] >= 0 && v[at] <= 10)) {
			say(in, fmi3Error, "gain takes 0 to 10");
			return fmi3Error;
		}
		memcpy(p, v + at, count * sizeof(double));
		at += count;
	}
	return at == nv ? fmi3OK : fmi3Error;
}

FMI3_EXPORT fmi3Status fmi3SetString(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3String v[],
                                     size_t nv) {
	instance *in = i;
	if (n != 1 || nv != 1 || vr[0] != 16) return fmi3Error;
	in->labelLen = strlen(v[0]);
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3SetBinary(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const size_t sizes[],
                                     const fmi3Binary v[], size_t nv) {
	instance *in = i;
	(void)v;
	if (n != 1 || nv != 1 || vr[0] != 17) return fmi3Error;
	in->blobLen = sizes[0];
	return fmi3OK;
}

FMI3_EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean noSetPrior,
                                  fmi3Boolean *eventNeeded, fmi3Boolean *terminate, fmi3Boolean *earlyReturn,
                                  fmi3Float64 *lastTime) {
	(void)noSetPrior;
	instance *in = i;
	*eventNeeded = false, *terminate = false, *earlyReturn = false;
	in->time = t + h;
	*lastTime = in->time;
	compute(in);
	return fmi3OK;
}

#include "fmi3rest.h"

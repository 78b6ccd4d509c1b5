/* The shim's core: one FMU instance is one beamconnect child process
 * ("beamconnect fmu-export-child", carried in the FMU beside this
 * library), to which every call that needs the coupling goes as a request
 * through shared memory (beamconnect's internal/mailbox, the asking side
 * of it written here), the answer awaited while the child lives. The
 * variables' values live here: a get or a set never leaves the master's
 * process. fmi2.c and fmi3.c are the two standards' entry points on it. */
#ifndef BEAMCONNECT_SHIM_H
#define BEAMCONNECT_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "fmi.h"
#include "protocol.h"

/* Statuses, as both standards number them. */
enum { ST_OK = 0, ST_WARNING = 1, ST_DISCARD = 2, ST_ERROR = 3, ST_FATAL = 4 };

/* The instance's state, as the standards' state machines need it. */
enum { S_INSTANTIATED, S_INITIALIZATION, S_STEP, S_TERMINATED, S_FAILED };

typedef struct {
	uint8_t type, causality;
	double value;  /* T_REAL, T_INTEGER */
	char *text;    /* T_STRING */
	double start;  /* T_REAL, T_INTEGER */
	char *starts;  /* T_STRING */
	char *name;
} shim_var;

typedef struct shim shim;

/* Log categories (bits). */
enum { CAT_EVENTS = 1, CAT_WARNING = 2, CAT_ERROR = 4, CAT_ALL = 7 };

/* shim_new starts the child for an instance of FMI major, named name, of
 * the FMU whose token is token and whose resources folder is resources
 * (a path; NULL or "" finds it beside the library). say is how the
 * instance logs (through the master's logger); its first argument is ctx.
 * NULL when it failed, said through say. */
typedef void (*shim_say)(void *ctx, const char *instance, int status, const char *category, const char *message);
shim *shim_new(int major, const char *name, const char *token, const char *resources, int logging, shim_say say,
               void *ctx);
/* shim_free ends the child and frees the instance; a call in progress on
 * another thread (which FMI forbids) ends first, at its wait's next look.
 * -1: that call did not end, and the instance is left as it is. */
int shim_free(shim *s);

/* Every call on an instance but free is between shim_enter and
 * shim_leave: an instance takes one call at a time, as FMI has it; a
 * second, from another thread, is refused (-1), said through the logger,
 * and its function returns Error. fn is the function's name. Nothing of
 * the instance is touched after shim_leave. */
int shim_enter(shim *s, const char *fn);
void shim_leave(shim *s);

void shim_logging(shim *s, int on, size_t n, const char *const categories[]);
void shim_error(shim *s, const char *fmt, const char *arg); /* a log line of status Error, "%s" filled by arg */

int shim_setup(shim *s, double start, int stop_defined, double stop);
int shim_enter_initialization(shim *s);
int shim_exit_initialization(shim *s);
int shim_do_step(shim *s, double t, double h);
int shim_terminate(shim *s);
int shim_reset(shim *s);

/* Values: vr[] of n, each of the type asked for. */
int shim_get_real(shim *s, const char *fn, const uint32_t vr[], size_t n, double out[]);
int shim_get_integer(shim *s, const char *fn, const uint32_t vr[], size_t n, int32_t out[]);
int shim_get_string(shim *s, const char *fn, const uint32_t vr[], size_t n, const char *out[]);
int shim_set_real(shim *s, const char *fn, const uint32_t vr[], size_t n, const double in[]);
int shim_set_integer(shim *s, const char *fn, const uint32_t vr[], size_t n, const int32_t in[]);
int shim_set_string(shim *s, const char *fn, const uint32_t vr[], size_t n, const char *const in[]);
/* The value references of a type the FMU has none of. */
int shim_no_type(shim *s, const char *fn, const char *type, size_t n);

double shim_time(shim *s);
int shim_state(shim *s);
/* shim_unsupported says a function the FMU does not provide was called. */
int shim_unsupported(shim *s, const char *fn);

/* The master's interrupt (interrupt.c): while a call waits it watches,
 * and interrupt_count counts the interrupts seen meanwhile (a wait that
 * sees it move ends its call); unwatch hands them to the master's own
 * handling. Watches nest, across instances and threads. */
void interrupt_watch(void);
void interrupt_unwatch(void);
unsigned interrupt_count(void);

#endif

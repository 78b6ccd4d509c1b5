/* A small FMI master for the tests of exported FMUs, written for
 * beamconnect from the FMI 2.0 and 3.0 standards: it loads an unpacked
 * co-simulation FMU's library, instantiates it, sets parameters, steps it
 * with a fixed communication step while one input steps from 0 to a value,
 * writes the outputs at every communication point as CSV, terminates and
 * frees it. With -twice it does all of that twice, unloading the library
 * in between (the second run's outputs to OUT.2.csv): the library loads,
 * runs, unloads and loads again in one process. Built for Linux with cc and for Windows with mingw-w64.
 *
 * master [-twice] [-nochld] [-last] DIR IDENTIFIER FMI TOKEN STOP H INPUT STEP_AT VALUE OUTPUTS OUT.csv [PARAM...]
 *   DIR the unpacked FMU; IDENTIFIER its model identifier; FMI 2 or 3;
 *   TOKEN its guid or instantiationToken; STOP the stop time; H the step;
 *   INPUT the value reference stepped from 0 to VALUE at STEP_AT;
 *   OUTPUTS the value references recorded, comma-separated (Real/Float64);
 *   PARAM r:VR=number, i:VR=integer or s:VR=text, set before
 *   initialization. -nochld ignores SIGCHLD (Unix), as some masters do, so
 *   that the system reaps their children for them. -last shortens the last
 *   step to end at STOP, as fmusim and FMPy do, where STOP is not a whole
 *   number of steps. H may be inf, -inf or nan (one step of it is taken,
 *   as of any H longer than STOP).
 * The exit status is the worst FMI status any call returned (0 OK, 1
 * Warning, 3 Error…), 10 for a bad command line or library. Every log
 * line goes to stdout as "[STATUS] category: message", at once. */
#include "master.h"

const char *names[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};

void (*log_hook)(const char *message);

void say(int status, const char *category, const char *message) {
	if (log_hook && message) log_hook(message);
	printf("[%s] %s: %s\n", status >= 0 && status <= 5 ? names[status] : "?", category ? category : "", message ? message : "");
	fflush(stdout);
}

void logger2(void *env, const char *name, int status, const char *category, const char *message, ...) {
	(void)env, (void)name;
	/* The FMU doubles % and # in its messages; shown as the master
	 * would, formatted. */
	char buf[8192];
	va_list ap;
	va_start(ap, message);
	vsnprintf(buf, sizeof buf, message, ap);
	va_end(ap);
	say(status, category, buf);
}

void logger3(void *env, int status, const char *category, const char *message) {
	(void)env;
	say(status, category, message);
}

void *lib_open(const char *path) {
#if defined(_WIN32)
	wchar_t w[4096];
	MultiByteToWideChar(CP_UTF8, 0, path, -1, w, 4096);
	return LoadLibraryW(w);
#else
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
#endif
}

void *sym(void *lib, const char *name) {
#if defined(_WIN32)
	void *f = (void *)GetProcAddress((HMODULE)lib, name);
#else
	void *f = dlsym(lib, name);
#endif
	if (!f) {
		fprintf(stderr, "master: the library has no %s\n", name);
		exit(10);
	}
	return f;
}

void lib_close(void *lib) {
#if defined(_WIN32)
	FreeLibrary((HMODULE)lib);
#else
	dlclose(lib);
#endif
}

static int worst = 0;
static int shorten = 0; /* -last */

/* number reads a double, inf, -inf and nan included (atof of some C
 * libraries reads neither). */
double number(const char *s) {
	if (!strcmp(s, "inf")) return HUGE_VAL;
	if (!strcmp(s, "-inf")) return -HUGE_VAL;
	if (!strcmp(s, "nan")) return HUGE_VAL - HUGE_VAL;
	return atof(s);
}

/* step_count is how many steps a run to stop takes, step_size the size of
 * the step from t. */
static long step_count(double stop, double h) {
	double k = shorten ? ceil(stop / h - 1e-9) : stop / h + 0.5;
	return k >= 1 && k < 1e12 ? (long)k : 1;
}
static double step_size(double stop, double h, double t) { return shorten && t + h > stop ? stop - t : h; }
static int check(int status, const char *call) {
	if (status > worst) worst = status;
	if (status != 0) {
		printf("master: %s returned %s\n", call, status >= 0 && status <= 5 ? names[status] : "?");
		fflush(stdout);
	}
	return status;
}

void uri(char *out, size_t n, const char *dir) {
	char path[4096];
	snprintf(path, sizeof path, "%s%sresources", dir, SEP);
	for (char *p = path; *p; p++)
		if (*p == '\\') *p = '/';
	snprintf(out, n, "file://%s%s", path[0] == '/' ? "" : "/", path);
}

void lib_path(char *out, size_t n, const char *dir, const char *id, int fmi) {
	snprintf(out, n, "%s%sbinaries%s%s%s%s" LIBEXT, dir, SEP, SEP,
#if defined(_WIN32)
	         fmi == 2 ? "win64" : "x86_64-windows",
#else
	         fmi == 2 ? "linux64" : "x86_64-linux",
#endif
	         SEP, id);
}

static int run(int argc, char **argv, const char *out) {
	const char *dir = argv[0], *id = argv[1], *token = argv[3];
	int fmi = atoi(argv[2]);
	double stop = number(argv[4]), h = number(argv[5]), at = atof(argv[7]), value = atof(argv[8]);
	unsigned input = (unsigned)atoi(argv[6]);
	unsigned outs[256];
	size_t nouts = 0;
	for (char *p = argv[9]; *p && nouts < 256;) {
		outs[nouts++] = (unsigned)strtoul(p, &p, 10);
		if (*p == ',') p++;
	}
	char lib[4096];
	lib_path(lib, sizeof lib, dir, id, fmi);
	void *l = lib_open(lib);
	if (!l) {
		fprintf(stderr, "master: cannot load %s\n", lib);
		return 10;
	}
	FILE *csv = fopen(out, "w");
	if (!csv) return 10;
	fprintf(csv, "time");
	for (size_t i = 0; i < nouts; i++) fprintf(csv, ",%u", outs[i]);
	fprintf(csv, "\n");
	long steps = step_count(stop, h);
	if (fmi == 2) {
		fmi2Callbacks cb = {logger2, calloc, free, NULL, NULL};
		char res[4200];
		uri(res, sizeof res, dir);
		fmi2Component c = ((fmi2InstantiateFn)sym(l, "fmi2Instantiate"))("master", 1, token, res, &cb, 0, 1);
		if (!c) {
			printf("master: fmi2Instantiate failed\n");
			lib_close(l);
			return 3;
		}
		fmi2SetRealFn setReal = (fmi2SetRealFn)sym(l, "fmi2SetReal");
		fmi2GetRealFn getReal = (fmi2GetRealFn)sym(l, "fmi2GetReal");
		for (int i = 11; i < argc; i++) {
			fmi2ValueReference vr = (fmi2ValueReference)atoi(argv[i] + 2);
			const char *v = strchr(argv[i], '=') + 1;
			if (argv[i][0] == 'r') {
				double d = atof(v);
				check(setReal(c, &vr, 1, &d), "fmi2SetReal");
			} else if (argv[i][0] == 'i') {
				int n = atoi(v);
				check(((fmi2SetIntegerFn)sym(l, "fmi2SetInteger"))(c, &vr, 1, &n), "fmi2SetInteger");
			} else {
				check(((fmi2SetStringFn)sym(l, "fmi2SetString"))(c, &vr, 1, &v), "fmi2SetString");
			}
		}
		int ok = check(((fmi2SetupExperimentFn)sym(l, "fmi2SetupExperiment"))(c, 0, 0, 0, 1, stop), "fmi2SetupExperiment") < 3 &&
		         check(((fmi2ComponentFn)sym(l, "fmi2EnterInitializationMode"))(c), "fmi2EnterInitializationMode") < 3 &&
		         check(((fmi2ComponentFn)sym(l, "fmi2ExitInitializationMode"))(c), "fmi2ExitInitializationMode") < 3;
		fmi2DoStepFn doStep = (fmi2DoStepFn)sym(l, "fmi2DoStep");
		double vals[256];
		for (long n = 0; ok && n <= steps; n++) {
			double t = shorten && n == steps ? stop : n * h;
			if (check(getReal(c, outs, nouts, vals), "fmi2GetReal") >= 3) break;
			fprintf(csv, "%.17g", t);
			for (size_t i = 0; i < nouts; i++) fprintf(csv, ",%.17g", vals[i]);
			fprintf(csv, "\n");
			if (n == steps) break;
			double u = t >= at - h / 1000 ? value : 0;
			if (check(setReal(c, &input, 1, &u), "fmi2SetReal") >= 3) break;
			if (check(doStep(c, t, step_size(stop, h, t), 1), "fmi2DoStep") >= 3) break;
		}
		if (worst < 3) check(((fmi2ComponentFn)sym(l, "fmi2Terminate"))(c), "fmi2Terminate");
		((fmi2FreeInstanceFn)sym(l, "fmi2FreeInstance"))(c);
	} else {
		char res[4200];
		snprintf(res, sizeof res, "%s%sresources%s", dir, SEP, SEP);
		fmi3Instance c = ((fmi3InstantiateCoSimulationFn)sym(l, "fmi3InstantiateCoSimulation"))(
		    "master", token, res, false, true, false, false, NULL, 0, NULL, logger3, NULL);
		if (!c) {
			printf("master: fmi3InstantiateCoSimulation failed\n");
			lib_close(l);
			return 3;
		}
		fmi3SetFloat64Fn setF = (fmi3SetFloat64Fn)sym(l, "fmi3SetFloat64");
		fmi3GetFloat64Fn getF = (fmi3GetFloat64Fn)sym(l, "fmi3GetFloat64");
		for (int i = 11; i < argc; i++) {
			fmi3ValueReference vr = (fmi3ValueReference)atoi(argv[i] + 2);
			const char *v = strchr(argv[i], '=') + 1;
			if (argv[i][0] == 'r') {
				double d = atof(v);
				check(setF(c, &vr, 1, &d, 1), "fmi3SetFloat64");
			} else if (argv[i][0] == 'i') {
				int32_t n = atoi(v);
				check(((fmi3SetInt32Fn)sym(l, "fmi3SetInt32"))(c, &vr, 1, &n, 1), "fmi3SetInt32");
			} else {
				check(((fmi3SetStringFn)sym(l, "fmi3SetString"))(c, &vr, 1, &v, 1), "fmi3SetString");
			}
		}
		int ok = check(((fmi3EnterInitializationModeFn)sym(l, "fmi3EnterInitializationMode"))(c, false, 0, 0, true, stop),
		               "fmi3EnterInitializationMode") < 3 &&
		         check(((fmi3InstanceFn)sym(l, "fmi3ExitInitializationMode"))(c), "fmi3ExitInitializationMode") < 3;
		fmi3DoStepFn doStep = (fmi3DoStepFn)sym(l, "fmi3DoStep");
		double vals[256];
		for (long n = 0; ok && n <= steps; n++) {
			double t = shorten && n == steps ? stop : n * h;
			if (check(getF(c, outs, nouts, vals, nouts), "fmi3GetFloat64") >= 3) break;
			fprintf(csv, "%.17g", t);
			for (size_t i = 0; i < nouts; i++) fprintf(csv, ",%.17g", vals[i]);
			fprintf(csv, "\n");
			if (n == steps) break;
			double u = t >= at - h / 1000 ? value : 0;
			if (check(setF(c, &input, 1, &u, 1), "fmi3SetFloat64") >= 3) break;
			bool event, terminate, early;
			double last;
			if (check(doStep(c, t, step_size(stop, h, t), true, &event, &terminate, &early, &last), "fmi3DoStep") >= 3) break;
		}
		if (worst < 3) check(((fmi3InstanceFn)sym(l, "fmi3Terminate"))(c), "fmi3Terminate");
		((fmi3FreeInstanceFn)sym(l, "fmi3FreeInstance"))(c);
	}
	fclose(csv);
	lib_close(l);
	printf("master: done, worst status %s\n", names[worst]);
	fflush(stdout);
	return worst;
}

int main(int argc, char **argv) {
	if (argc > 1 && !strcmp(argv[1], "-probe")) return probe(argc - 2, argv + 2);
	int twice = argc > 1 && !strcmp(argv[1], "-twice");
	if (twice) argc--, argv++;
	if (argc > 1 && !strcmp(argv[1], "-nochld")) {
#if !defined(_WIN32)
		signal(SIGCHLD, SIG_IGN);
#endif
		argc--, argv++;
	}
	if (argc > 1 && !strcmp(argv[1], "-last")) {
		shorten = 1;
		argc--, argv++;
	}
	if (argc < 12) {
		fprintf(stderr, "usage: master [-twice] [-nochld] [-last] DIR IDENTIFIER FMI TOKEN STOP H INPUT STEP_AT VALUE OUTPUTS OUT.csv [PARAM...]\n");
		return 10;
	}
	int status = run(argc - 1, argv + 1, argv[11]);
	if (twice && status < 3) {
		/* The second run's outputs go to OUT.csv's name with .2 before
		 * its extension. */
		char out2[4096];
		const char *dot = strrchr(argv[11], '.');
		size_t n = dot ? (size_t)(dot - argv[11]) : strlen(argv[11]);
		snprintf(out2, sizeof out2, "%.*s.2%s", (int)n, argv[11], dot ? dot : "");
		printf("master: once more, the library loaded again\n");
		fflush(stdout);
		int again = run(argc - 1, argv + 1, out2);
		if (again > status) status = again;
	}
	return status;
}

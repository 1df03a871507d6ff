/*
 * interp.c - the embedded interpreter of mcp-exec-zygote (interp.h).
 *
 * What it does: initialises CPython (Debian's libpython) the way a cold run's
 * `python3 -I -u -B` starts, installs the runner and the support modules
 * (runner.h, the same program a cold run gets with -c), imports the preload
 * list, and in a process that is to run code: says ready, reads the header
 * and the code, re-bases the CPU limit and hands the code to the runner.
 *
 * What it does not do: any part of the sandbox. By the time Python code runs
 * here, the process is inside the sandbox the shared C setup built
 * (sandbox_child.c): the zygote's own, or, in a forked child, the run's.
 */
#include <Python.h>

#include "interp.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "buf.h"
#include "runner.h"
#include "warm.h"

/* The runner's entry points, and the namespace its definitions live in. */
static PyObject *runner_fresh;
static PyObject *runner_run;

/* The code a run may send (far above the tool's own cap): a bound on what
 * a corrupt header could make us allocate. */
#define CODE_MAX ((size_t)64 << 20)

static int fail_status(PyStatus st, const char *what)
{
	fprintf(stderr, "mcp-exec-zygote: %s: %s\n", what, st.err_msg ? st.err_msg : "failed");
	return -1;
}

/* The flags of `python3 -I -u -B`: isolated (no PYTHON* variables, no user
 * site, no script directory on sys.path), unbuffered stdio, no .pyc
 * written; signal handlers installed as by the python3 executable (an
 * isolated embedding config would leave them out). */
static int init_python(const char *python)
{
	char *argv[] = {(char *)""};
	PyPreConfig pre;
	PyConfig cfg;
	PyStatus st;

	PyPreConfig_InitPythonConfig(&pre);
	pre.isolated = 1;
	pre.use_environment = 0;
	st = Py_PreInitialize(&pre);
	if (PyStatus_Exception(st))
		return fail_status(st, "pre-initialising Python");
	PyConfig_InitPythonConfig(&cfg);
	cfg.isolated = 1;
	cfg.use_environment = 0;
	cfg.user_site_directory = 0;
	cfg.safe_path = 1;
	cfg.buffered_stdio = 0;
	cfg.write_bytecode = 0;
	cfg.parse_argv = 0;
	cfg.install_signal_handlers = 1;
	st = PyConfig_SetBytesString(&cfg, &cfg.program_name, python);
	if (!PyStatus_Exception(st))
		st = PyConfig_SetBytesString(&cfg, &cfg.executable, python);
	if (!PyStatus_Exception(st))
		st = PyConfig_SetBytesArgv(&cfg, 1, argv);
	if (!PyStatus_Exception(st))
		st = Py_InitializeFromConfig(&cfg);
	PyConfig_Clear(&cfg);
	return PyStatus_Exception(st) ? fail_status(st, "initialising Python") : 0;
}

/* Runs the runner's source (runner.h) in a namespace of its own and keeps
 * its entry points. Not in __main__, as a cold run's -c has it: _mcpx_run
 * empties __main__'s globals before the code runs, and every definition
 * freed there (functions, their code, its constants) writes to the
 * zygote's memory, a copy-on-write fault per page on each run's path.
 * Installed before the preload, so a support module can be preloaded
 * too. */
static int install_runner(void)
{
	struct mcpx_buf src;
	PyObject *code = NULL, *res = NULL, *g = NULL, *name = NULL;
	int rc = -1;

	mcpx_buf_init(&src, (size_t)16 << 20);
	if (mcpx_runner_append(&src) < 0) {
		fprintf(stderr, "mcp-exec-zygote: cannot assemble the runner\n");
		goto out;
	}
	g = PyDict_New();
	name = PyUnicode_FromString("__mcpx_runner__");
	if (g && name && PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0 &&
	    PyDict_SetItemString(g, "__name__", name) == 0)
		code = Py_CompileString(mcpx_buf_str(&src), "<mcp-exec runner>", Py_file_input);
	if (code)
		res = PyEval_EvalCode(code, g, g);
	if (res) {
		runner_fresh = PyDict_GetItemString(g, "_mcpx_fresh");
		runner_run = PyDict_GetItemString(g, "_mcpx_run");
	}
	if (!runner_fresh || !runner_run) {
		PyErr_Print();
		fprintf(stderr, "mcp-exec-zygote: the runner did not load\n");
		goto out;
	}
	Py_INCREF(runner_fresh);
	Py_INCREF(runner_run);
	rc = 0;
out:
	/* The entry points hold their globals: g lives on without this
	 * reference. */
	Py_XDECREF(name);
	Py_XDECREF(g);
	Py_XDECREF(res);
	Py_XDECREF(code);
	mcpx_buf_free(&src);
	return rc;
}

/* Imports each module; what one prints (a font-cache warning, say) goes to
 * /dev/null, not to the first run's stderr. */
static void preload(const char *csv)
{
	char *list = strdup(csv), *save = NULL, *name;
	int saved = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (list && saved >= 0 && null >= 0 && dup2(null, 2) == 2) {
		for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
			PyObject *m = PyImport_ImportModule(name);

			if (!m)
				PyErr_Clear();
			Py_XDECREF(m);
		}
		(void)dup2(saved, 2);
	}
	if (saved >= 0)
		close(saved);
	if (null >= 0)
		close(null);
	free(list);
}

int mcpx_interp_start(const char *python, const char *preload_csv)
{
	if (init_python(python) < 0 || install_runner() < 0)
		return -1;
	/* A workspace call's runner imports mcpx_workspace (compiling it
	 * costs a call tens of milliseconds); imported here once, every run
	 * forked from this interpreter finds it ready. Runs without a
	 * workspace never touch it. */
	preload("mcpx_workspace");
	preload(preload_csv);
	return 0;
}

int mcpx_interp_freeze(void)
{
	PyObject *r = NULL, *gc = PyImport_ImportModule("gc");

	if (gc)
		r = PyObject_CallMethod(gc, "freeze", NULL);
	Py_XDECREF(gc);
	if (!r) {
		PyErr_Print();
		return -1;
	}
	Py_DECREF(r);
	return 0;
}

void mcpx_interp_forked(void)
{
	PyOS_AfterFork_Child();
}

int mcpx_interp_fresh(const char *zygote_dir, const char *workdir, const char *env_name,
                      const char *env_value)
{
	PyObject *extra = PyDict_New(), *r = NULL;

	if (extra && env_name &&
	    PyDict_SetItemString(extra, env_name, PyUnicode_FromString(env_value)) < 0)
		Py_CLEAR(extra);
	if (extra)
		r = PyObject_CallFunction(runner_fresh, "ssO", zygote_dir, workdir, extra);
	Py_XDECREF(extra);
	if (!r) {
		PyErr_Print();
		return -1;
	}
	Py_DECREF(r);
	return 0;
}

static int read_full(int fd, char *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* The CPU limit counts from the code's arrival, not from the preload (an
 * after-reap interpreter) or the wait. */
static void rebase_cpu(unsigned cpu_s)
{
	struct rusage ru;
	struct rlimit cur, rl;
	long long used_us;

	if (getrusage(RUSAGE_SELF, &ru) < 0 || getrlimit(RLIMIT_CPU, &cur) < 0)
		return;
	used_us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	          ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	/* Whole seconds used, plus one, then the run's own. */
	rl.rlim_cur = (rlim_t)(used_us / 1000000) + 1 + cpu_s;
	rl.rlim_max = rl.rlim_cur + 1;
	if (cur.rlim_max != RLIM_INFINITY && rl.rlim_max > cur.rlim_max) {
		rl.rlim_max = cur.rlim_max;
		if (rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
	}
	(void)setrlimit(RLIMIT_CPU, &rl);
}

/* An after-reap interpreter preloads under the run's memory limit (the
 * soft RLIMIT_AS) with the hard limit left open: from the code's arrival
 * its limit is the run's plus what it has mapped by then, soft and hard,
 * so that the run can allocate what a cold run can (a forked run gets the
 * same from the server, forkserver.c, and its hard limit is set: left
 * alone here). The run's whole-tree budget stays the real limit. */
static void rebase_memory(void)
{
	struct rlimit cur, rl;
	unsigned long long pages = 0;
	char buf[128];
	ssize_t n;
	int fd;

	if (getrlimit(RLIMIT_AS, &cur) < 0 || cur.rlim_max != RLIM_INFINITY ||
	    cur.rlim_cur == RLIM_INFINITY)
		return;
	rl.rlim_cur = rl.rlim_max = cur.rlim_cur;
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (sscanf(buf, "%llu", &pages) == 1)
				rl.rlim_cur = rl.rlim_max =
				    cur.rlim_cur + (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
		}
	}
	/* Closed either way: the code must not raise its own limit. */
	(void)setrlimit(RLIMIT_AS, &rl);
}

void mcpx_interp_run(const char *workdir, const cpu_set_t *cpus)
{
	char hdr[MCPX_WARM_HEADER_LEN], path[4200];
	PyObject *src, *ws;
	size_t len;
	unsigned cpu_s;

	char ready = MCPX_WARM_READY, taken = MCPX_WARM_TAKEN;

	if (write(1, &ready, 1) != 1)
		_exit(0);
	if (read_full(0, hdr, sizeof(hdr)) < 0)
		_exit(0);
	if (mcpx_warm_header_parse(hdr, &len, &cpu_s) < 0 || len > CODE_MAX) {
		fprintf(stderr, "mcp-exec-zygote: malformed run header\n");
		_exit(1);
	}
	src = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
	if (!src || read_full(0, PyBytes_AS_STRING(src), len) < 0)
		_exit(0);
	if (write(1, &taken, 1) != 1)
		_exit(0);
	rebase_cpu(cpu_s);
	rebase_memory();
	if (cpus)
		(void)sched_setaffinity(0, sizeof(*cpus), cpus);
	/* Non-dumpable while waiting (inherited from the zygote, or set at
	 * start): no same-uid process could open /proc/<pid>/fd/0 or read this
	 * memory. A cold run is dumpable; so is this one from here on. */
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	/* A workspace call: the server wrote .mcpx/vars.in. Asked here in C,
	 * not by the runner: a Python stat that fails raises and formats an
	 * OSError, writing to a dozen pages of the zygote's memory, each a
	 * copy-on-write fault on every run's path (runs without a workspace
	 * are most). */
	snprintf(path, sizeof(path), "%s/.mcpx/vars.in", workdir);
	ws = access(path, F_OK) == 0 ? Py_True : Py_False;
	snprintf(path, sizeof(path), "%s/main.py", workdir);
	/* _mcpx_run ends the process itself (os._exit). */
	if (!PyObject_CallFunction(runner_run, "OsO", src, path, ws))
		PyErr_Print();
	_exit(1);
}

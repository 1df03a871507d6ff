/*
 * test_workspace_vars.c - a workspace's Python variables from one run to the
 * next (python/mcpx_workspace.py through the runner, runner.h), with the
 * server's side between the runs as the executor does it (workspace_files.h:
 * collect, parse, restore into a fresh workdir), run with /usr/bin/python3
 * outside any sandbox.
 *
 * What it shows: values, modules (by name), functions of the run's code
 * (with defaults and closures) and objects of a workspace module's class
 * come back; open files, generators, classes of the run's code and their
 * objects are named as not kept; a run that raised or called sys.exit
 * saves, one that ended with os._exit keeps the previous variables; a value
 * over the limit is not kept while the others are; a variable that cannot
 * be restored is reported and kept as it was until it can; a run without a
 * workspace writes nothing.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "runner.h"
#include "workspace_files.h"

#define PYTHON "/usr/bin/python3"

static char dir[] = "/tmp/mcpx-wsvars-XXXXXX";
static const struct mcpx_wspack_caps caps = {1 << 20, 64};
/* The workspace between runs, as the store would keep it. */
static struct mcpx_buf saved;
static size_t vars_limit = 1 << 20;

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
}

static int python(const char *code, struct mcpx_buf *out)
{
	char path[128], buf[4096];
	int p[2], status = -1;
	FILE *f;
	pid_t pid;
	ssize_t n;

	mcpx_buf_reset(out);
	snprintf(path, sizeof(path), "%s/main.py", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs(code, f);
	fclose(f);
	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (chdir(dir) == 0)
			execl(PYTHON, PYTHON, "-I", "-u", "-B", "-c", mcpx_runner_cold(),
			      (char *)NULL);
		_exit(126);
	}
	close(p[1]);
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		mcpx_buf_add(out, buf, (size_t)n);
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The names' list of the saved version, as "+a,-b,". */
static void on_name(void *arg, bool kept, const char *name, size_t len)
{
	mcpx_buf_addf(arg, "%c%.*s,", kept ? '+' : '-', (int)len, name);
}

/* One call on the workspace: restore what is saved into a fresh workdir,
 * run code, collect (the variables taken when the run ended by itself, as
 * the executor decides: here always, a killed run is the executor's test)
 * and keep the new version. Returns the exit status; names gets the list. */
static int call(const char *code, struct mcpx_buf *out, struct mcpx_buf *names)
{
	struct mcpx_runfiles_owner own = {false, 0, 0};
	struct mcpx_wsfiles_saved s;
	struct mcpx_wsfiles_prev prev = {0};
	struct mcpx_wspack ws;
	struct mcpx_err err = {{0}};
	int rc, wd;

	sh("rm -rf '%s' && mkdir '%s'", dir, dir);
	if (mcpx_wspack_parse(saved.data, saved.len, &caps, &ws, &err) < 0 ||
	    mcpx_wsfiles_restore(&ws, dir, true, vars_limit, &own, &err) < 0) {
		fprintf(stderr, "restore: %s\n", err.msg);
		return -1;
	}
	prev.vars = ws.vars;
	prev.vars_len = ws.vars_len;
	prev.names = ws.names;
	prev.names_len = ws.names_len;
	rc = python(code, out);
	wd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (mcpx_wsfiles_collect(wd, geteuid(), &caps, true, &prev, &s, &err) < 0) {
		fprintf(stderr, "collect: %s\n", err.msg);
		rc = -1;
	}
	close(wd);
	mcpx_wspack_free(&ws);
	mcpx_buf_reset(names);
	if (rc >= 0) {
		mcpx_wspack_names(s.names, s.names_len, on_name, names);
		mcpx_buf_free(&saved);
		saved = s.archive;
	}
	return rc;
}

static void test_values_and_kinds(void)
{
	struct mcpx_buf out, names;

	mcpx_buf_init(&out, 1 << 20);
	mcpx_buf_init(&names, 1 << 16);
	CHECK_INT(call("import json as j\nfrom math import sqrt\nx = 41\n"
	               "def f(a, b=2):\n    return a + b + x\n"
	               "def outer():\n    k = 5\n    def inner():\n        return k\n"
	               "    return inner\n"
	               "h = outer()\nsq = lambda v: v * v\nfh = open('/etc/hostname')\n"
	               "gen = (i for i in range(3))\nclass C:\n    pass\nc = C()\n"
	               "d = {'mod': j, 'l': [1, 2]}\n",
	               &out, &names),
	          0);
	CHECK_STR(mcpx_buf_str(&out), "");
	CHECK_STR(mcpx_buf_str(&names), "+j,+sqrt,+x,+f,+outer,+h,+sq,+d,-fh,-gen,-C,-c,");
	CHECK_INT(call("print(x + 1, f(1), h(), sq(3), sqrt(16), j.dumps(d['l']), d['mod'] is j)\n"
	               "y = 'new'\nraise ValueError('boom')\n",
	               &out, &names),
	          1);
	CHECK(strncmp(mcpx_buf_str(&out), "42 44 5 9 4.0 [1, 2] True\n", 26) == 0);
	CHECK(strstr(mcpx_buf_str(&out), "ValueError: boom") != NULL);
	/* The run that raised saved what it had assigned. */
	CHECK(strstr(mcpx_buf_str(&names), "+y,") != NULL);
	CHECK_INT(call("print(y)\nz = 3\nimport sys\nsys.exit(4)\n", &out, &names), 4);
	CHECK_STR(mcpx_buf_str(&out), "new\n");
	CHECK(strstr(mcpx_buf_str(&names), "+z,") != NULL);
	/* os._exit skips the save: the previous version's variables stay. */
	CHECK_INT(call("w = 1\nimport os\nos._exit(0)\n", &out, &names), 0);
	CHECK(strstr(mcpx_buf_str(&names), "w,") == NULL);
	CHECK(strstr(mcpx_buf_str(&names), "+z,") != NULL);
	CHECK_INT(call("print(z, 'w' in globals())\n", &out, &names), 0);
	CHECK_STR(mcpx_buf_str(&out), "3 False\n");
	/* Large buffers (pickle protocol 5 hands them over whole, as
	 * PickleBuffer objects): a numpy array and a DataFrame. */
	CHECK_INT(call("import numpy as np, pandas as pd\narr = np.arange(20000)\n"
	               "df = pd.DataFrame({'a': arr, 'b': arr * 0.5})\n",
	               &out, &names),
	          0);
	CHECK(strstr(mcpx_buf_str(&names), "+arr,+df,") != NULL);
	CHECK_INT(call("print(int(arr.sum()), df.shape, float(df['b'].max()))\n", &out, &names), 0);
	CHECK_STR(mcpx_buf_str(&out), "199990000 (20000, 2) 9999.5\n");
	mcpx_buf_free(&out);
	mcpx_buf_free(&names);
}

static void test_limit(void)
{
	struct mcpx_buf out, names;

	mcpx_buf_init(&out, 1 << 20);
	mcpx_buf_init(&names, 1 << 16);
	mcpx_buf_reset(&saved);
	vars_limit = 4096;
	CHECK_INT(call("a = 1\nbig = b'x' * 10000\nb = 2\n", &out, &names), 0);
	CHECK_STR(mcpx_buf_str(&names), "+a,+b,-big,");
	CHECK_INT(call("print(a, b, 'big' in globals())\n", &out, &names), 0);
	CHECK_STR(mcpx_buf_str(&out), "1 2 False\n");
	vars_limit = 1 << 20;
	mcpx_buf_free(&out);
	mcpx_buf_free(&names);
}

static void test_unrestorable_kept(void)
{
	struct mcpx_buf out, names;

	mcpx_buf_init(&out, 1 << 20);
	mcpx_buf_init(&names, 1 << 16);
	mcpx_buf_reset(&saved);
	/* A class in a module of the workspace: importable by name, so its
	 * objects are kept. */
	CHECK_INT(call("open('shapes.py', 'w').write('class P:\\n    def __init__(s, x):\\n"
	               "        s.x = x\\n')\nimport shapes\np = shapes.P(7)\n",
	               &out, &names),
	          0);
	CHECK_STR(mcpx_buf_str(&names), "+shapes,+p,");
	CHECK_INT(call("print(p.x, type(p).__module__)\nimport os\nos.rename('shapes.py', "
	               "'gone.py')\n",
	               &out, &names),
	          0);
	CHECK_STR(mcpx_buf_str(&out), "7 shapes\n");
	/* The module is gone: p (and shapes) cannot be restored; said on
	 * stderr, and kept as they were. */
	CHECK_INT(call("print('p' in globals())\nimport os\nos.rename('gone.py', 'shapes.py')\n",
	               &out, &names),
	          0);
	CHECK(strstr(mcpx_buf_str(&out), "workspace variable 'p' not restored") != NULL);
	CHECK(strstr(mcpx_buf_str(&out), "False\n") != NULL);
	CHECK(strstr(mcpx_buf_str(&names), "+p,") != NULL);
	/* Back: restored again. */
	CHECK_INT(call("print(p.x)\n", &out, &names), 0);
	CHECK_STR(mcpx_buf_str(&out), "7\n");
	mcpx_buf_free(&out);
	mcpx_buf_free(&names);
}

static void test_no_workspace(void)
{
	struct mcpx_buf out;

	mcpx_buf_init(&out, 1 << 16);
	sh("rm -rf '%s' && mkdir '%s'", dir, dir);
	CHECK_INT(python("x = 1\nimport os\nprint(os.listdir('.'))\n", &out), 0);
	CHECK_STR(mcpx_buf_str(&out), "['main.py']\n");
	sh("test ! -e '%s/.mcpx'", dir);
	mcpx_buf_free(&out);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	mcpx_buf_init(&saved, 1 << 22);
	test_values_and_kinds();
	test_limit();
	test_unrestorable_kept();
	test_no_workspace();
	mcpx_buf_free(&saved);
	sh("rm -rf '%s'", dir);
	return check_failures ? 1 : 0;
}

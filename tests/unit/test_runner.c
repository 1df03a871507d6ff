/*
 * test_runner.c - the Python program around a run's code (runner.h), run
 * with /usr/bin/python3 outside any sandbox: the code is the real __main__,
 * argv and __file__ look like `python main.py`, the exit status follows
 * SystemExit and uncaught exceptions, tracebacks start at the user's code,
 * and non-daemon threads and atexit handlers run before the exit.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "runner.h"

#define PYTHON "/usr/bin/python3"

/* Runs code as main.py in a fresh directory; returns the exit status and
 * fills out with stdout+stderr. */
static int run(const char *code, struct mcpx_buf *out)
{
	char dir[] = "/tmp/mcpx-runner-XXXXXX", path[64], buf[4096];
	int p[2], status = -1;
	FILE *f;
	pid_t pid;
	ssize_t n;

	mcpx_buf_reset(out);
	if (!mkdtemp(dir) || snprintf(path, sizeof(path), "%s/main.py", dir) < 0 ||
	    !(f = fopen(path, "w")))
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
	unlink(path);
	rmdir(dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void)
{
	struct mcpx_buf out;
	const char *o;

	mcpx_buf_init(&out, 1 << 20);
	CHECK(mcpx_runner_cold() != NULL);

	CHECK_INT(
	    run("import sys\nprint(__name__, sys.argv, __file__.endswith('/main.py'))\n", &out), 0);
	CHECK_STR(mcpx_buf_str(&out), "__main__ ['main.py'] True\n");

	/* Nothing of the runner is left in __main__'s namespace. */
	CHECK_INT(run("print(sorted(k for k in globals() if not k.startswith('__')))\n", &out), 0);
	CHECK_STR(mcpx_buf_str(&out), "[]\n");

	CHECK_INT(run("import sys\nsys.exit(3)\n", &out), 3);
	CHECK_INT(run("raise SystemExit('bye')\n", &out), 1);
	CHECK_STR(mcpx_buf_str(&out), "bye\n");

	/* A traceback names the user's frames only. */
	CHECK_INT(run("def f():\n    raise ValueError('boom')\nf()\n", &out), 1);
	o = mcpx_buf_str(&out);
	CHECK(strstr(o, "Traceback (most recent call last):\n  File \"") == o);
	CHECK(strstr(o, "main.py\", line 3, in <module>") != NULL);
	CHECK(strstr(o, "ValueError: boom") != NULL);
	CHECK(strstr(o, "_mcpx") == NULL && strstr(o, "<string>") == NULL);

	/* Non-daemon threads are joined and atexit handlers run, in that order. */
	CHECK_INT(
	    run("import atexit, threading, time\n"
	        "atexit.register(lambda: print('atexit'))\n"
	        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n",
	        &out),
	    0);
	CHECK_STR(mcpx_buf_str(&out), "thread\natexit\n");

	/* Classes defined in main pickle as __main__ ones do. */
	CHECK_INT(run("import pickle\nclass C: "
	              "pass\nprint(type(pickle.loads(pickle.dumps(C()))).__module__)\n",
	              &out),
	          0);
	CHECK_STR(mcpx_buf_str(&out), "__main__\n");

	mcpx_buf_free(&out);
	CHECK_DONE();
}

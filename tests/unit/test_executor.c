/*
 * test_executor.c - nested runs and their callers ending first, against
 * /usr/bin/python3 started cold in the real sandbox: a nested run whose
 * caller has ended is refused ("the calling run has ended"); one already
 * running when its caller ends runs on to its own
 * result; one whose direct caller ends while the outermost run goes on
 * also runs on, and the outermost run ends after it. Nothing may touch a
 * caller's job once it is freed: the sanitizer build runs this test too
 * (the links of run_link.h, executor.c's job_unlink).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "executor.h"
#include "loop.h"
#include "sandbox.h"

#define PYTHON "/usr/bin/python3"

/* What the test knows of one job. */
struct seen {
	struct mcpx_job *job;
	bool started, done;
	struct mcpx_job_result res;
	char out[256];
	char run_id[17];
};

static void on_done(void *arg, const struct mcpx_job_result *r)
{
	struct seen *s = arg;

	s->done = true;
	s->res = *r;
	snprintf(s->out, sizeof(s->out), "%.*s", (int)r->stdout_len,
	         r->stdout_buf ? r->stdout_buf : "");
	s->res.stdout_buf = s->res.stderr_buf = NULL;
	s->res.files = NULL;
}

static void on_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct seen *s = arg;

	(void)pos;
	if (ev == MCPX_JOB_STARTED)
		s->started = true;
}

/* Turns the loop until *flag holds or ms pass; returns *flag. */
static bool spin_until(struct mcpx_loop *loop, const bool *flag, unsigned ms)
{
	uint64_t end = mcpx_now_us() + (uint64_t)ms * 1000u;

	while (!*flag && mcpx_now_us() < end) {
		struct timespec ts = {0, 1000000};

		(void)mcpx_loop_turn(loop);
		nanosleep(&ts, NULL);
	}
	return *flag;
}

static bool spin_idle(struct mcpx_loop *loop, struct mcpx_executor *ex, unsigned ms)
{
	uint64_t end = mcpx_now_us() + (uint64_t)ms * 1000u;

	while (!mcpx_executor_idle(ex) && mcpx_now_us() < end) {
		struct timespec ts = {0, 1000000};

		(void)mcpx_loop_turn(loop);
		nanosleep(&ts, NULL);
	}
	return mcpx_executor_idle(ex);
}

/* Submits code for s: a tools/call (parent NULL) or a call nested in the
 * run parent. */
static int submit(struct mcpx_executor *ex, const char *code, const char *parent, struct seen *s)
{
	struct mcpx_job_bind bind = {
	    .tool = "fn", .depth = 1, .nested = true, .parent_run_id = parent};
	struct mcpx_job_spec spec = {.code = code,
	                             .code_len = strlen(code),
	                             .timeout_s = 30,
	                             .request_id = "1",
	                             .caller = "test",
	                             .bind = parent ? &bind : NULL,
	                             .language = MCPX_LANG_PYTHON};
	struct mcpx_job_callbacks cb = {on_done, on_event, s};
	int rc;

	memset(s, 0, sizeof(*s));
	rc = mcpx_executor_submit(ex, &spec, &cb, &s->job);
	if (rc == 0)
		snprintf(s->run_id, sizeof(s->run_id), "%s", mcpx_job_run_id(s->job));
	return rc;
}

#define SLEEPER "import time\ntime.sleep(30)\n"
#define SHORT "import time\ntime.sleep(0.5)\nprint('nested ok')\n"

/* A call whose caller has ended (its job gone) never starts, and says
 * why. */
static void test_caller_gone_before_start(struct mcpx_loop *loop, struct mcpx_executor *ex)
{
	struct seen t, b;

	REQUIRE_INT(submit(ex, SLEEPER, NULL, &t), 0);
	REQUIRE(spin_until(loop, &t.started, 20000));
	mcpx_executor_cancel(ex, t.job);
	REQUIRE(spin_idle(loop, ex, 20000));
	REQUIRE_INT(submit(ex, SHORT, t.run_id, &b), 0);
	CHECK(spin_until(loop, &b.done, 20000));
	CHECK(!b.started);
	CHECK_INT(b.res.status, MCPX_JOB_FAILED);
	CHECK(strstr(b.res.message, "the calling run has ended") != NULL);
	CHECK(spin_idle(loop, ex, 20000));
	CHECK(!t.done); /* cancelled: no callback */
}

/* The caller ends while its call runs: the call runs on to its own
 * result, and its budget (joined to the ended caller's) is finished
 * after the caller's job is gone. */
static void test_caller_ends_first(struct mcpx_loop *loop, struct mcpx_executor *ex)
{
	struct seen t, b;

	REQUIRE_INT(submit(ex, SLEEPER, NULL, &t), 0);
	REQUIRE(spin_until(loop, &t.started, 20000));
	REQUIRE_INT(submit(ex, SHORT, t.run_id, &b), 0);
	REQUIRE(spin_until(loop, &b.started, 20000));
	mcpx_executor_cancel(ex, t.job);
	CHECK(spin_until(loop, &b.done, 20000));
	CHECK_INT(b.res.status, MCPX_JOB_DONE);
	CHECK_INT(b.res.exit_code, 0);
	CHECK_STR(b.out, "nested ok\n");
	CHECK(spin_idle(loop, ex, 20000));
	CHECK(!t.done);
}

/* t calls a, a calls b; a is cancelled while b runs and t goes on: b runs
 * on to its result (handed to t, whose budget it joined), then t is
 * ended. */
static void test_middle_ends_first(struct mcpx_loop *loop, struct mcpx_executor *ex)
{
	struct seen t, a, b;

	REQUIRE_INT(submit(ex, SLEEPER, NULL, &t), 0);
	REQUIRE(spin_until(loop, &t.started, 20000));
	REQUIRE_INT(submit(ex, SLEEPER, t.run_id, &a), 0);
	REQUIRE(spin_until(loop, &a.started, 20000));
	REQUIRE_INT(submit(ex, SHORT, a.run_id, &b), 0);
	REQUIRE(spin_until(loop, &b.started, 20000));
	mcpx_executor_cancel(ex, a.job);
	CHECK(spin_until(loop, &b.done, 20000));
	CHECK_INT(b.res.status, MCPX_JOB_DONE);
	CHECK_STR(b.out, "nested ok\n");
	CHECK(!t.done);
	/* t still runs, and a new call of its own still starts beside it. */
	REQUIRE_INT(submit(ex, SHORT, t.run_id, &b), 0);
	CHECK(spin_until(loop, &b.done, 20000));
	CHECK_INT(b.res.status, MCPX_JOB_DONE);
	CHECK_STR(b.out, "nested ok\n");
	mcpx_executor_cancel(ex, t.job);
	CHECK(spin_idle(loop, ex, 20000));
	CHECK(!a.done && !t.done);
}

/* Freeing the executor with a caller and its running call: both are
 * killed and reaped there, whichever order the links are undone in. */
static void test_free_with_nested(const struct mcpx_config *cfg, const struct mcpx_sandbox *sb)
{
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_executor *ex = loop ? mcpx_executor_new(loop, cfg, sb, NULL) : NULL;
	struct seen t, b;

	REQUIRE(ex);
	mcpx_executor_start(ex);
	REQUIRE_INT(submit(ex, SLEEPER, NULL, &t), 0);
	REQUIRE(spin_until(loop, &t.started, 20000));
	REQUIRE_INT(submit(ex, SLEEPER, t.run_id, &b), 0);
	REQUIRE(spin_until(loop, &b.started, 20000));
	mcpx_executor_free(ex);
	CHECK(!t.done && !b.done);
	mcpx_loop_free(loop);
}

int main(void)
{
	struct mcpx_sandbox *sb = malloc(sizeof(*sb));
	struct mcpx_loop *loop = mcpx_loop_new();
	struct mcpx_err err = {{0}};
	struct mcpx_config cfg;
	struct mcpx_executor *ex;
	char base[] = "/tmp/mcpx-extest-XXXXXX";

	if (!sb || !loop || !mkdtemp(base) || chmod(base, 0711) < 0) {
		perror("setup");
		return 1;
	}
	if (mcpx_sandbox_init(sb, PYTHON, base, &err) < 0) {
		fprintf(stderr, "init: %s\n", err.msg);
		return 1;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.warm = MCPX_WARM_OFF; /* nested runs start cold anyway */
	cfg.memory_mb = 512;
	cfg.max_procs = 64;
	cfg.max_file_mb = 16;
	cfg.max_disk_mb = 64;
	cfg.max_timeout_s = 30;
	cfg.max_output_bytes = 65536;
	cfg.max_queue = 4;
	cfg.queue_timeout_s = 60;
	cfg.max_files_out = 8;
	cfg.max_files_out_bytes = 1 << 20;
	ex = mcpx_executor_new(loop, &cfg, sb, NULL);
	if (!ex) {
		fprintf(stderr, "executor_new failed\n");
		return 1;
	}
	mcpx_executor_start(ex);
	test_caller_gone_before_start(loop, ex);
	test_caller_ends_first(loop, ex);
	test_middle_ends_first(loop, ex);
	mcpx_executor_free(ex);
	test_free_with_nested(&cfg, sb);
	mcpx_loop_free(loop);
	mcpx_sandbox_free(sb);
	free(sb);
	rmdir(base);
	CHECK_DONE();
}

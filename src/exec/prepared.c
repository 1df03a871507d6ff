/*
 * prepared.c - each language's prepared runtime behind one table
 * (prepared.h): Python's warm interpreter (warm_pool.h) and bash's process
 * waiting at its gate (bash_pool.h).
 *
 * What it does: adapts the two pools to the table, and for Python hands
 * the taken interpreter its run as a cold run gets it (input files and
 * main.py in the workdir) plus, on stdin, the warm header and the code
 * before the run's own stdin (warm.h). bash's take does the same through
 * its gate (gate.c).
 *
 * What it does not do: decide when anything is prepared (the pools), or
 * where a prepared process may wait (the executor, run_start.c).
 */
#include "prepared.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bash_pool.h"
#include "reap_later.h"
#include "warm.h"
#include "warm_child.h"
#include "warm_pool.h"

/* ---- Python: the warm interpreter ---------------------------------------- */

static void *py_create(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                       const struct mcpx_sandbox *sb, const struct mcpx_executor_hooks *hooks)
{
	return mcpx_warm_pool_new(loop, cfg, sb, hooks);
}

/* The warm interpreter gets main.py and the input files in its workdir and,
 * on stdin, the header, the code and the run's own stdin. */
static int py_feed(const struct mcpx_sandbox *sb, const struct mcpx_prepared_call *c,
                   struct mcpx_prepared_run *run, struct mcpx_err *err)
{
	char hdr[64];
	size_t hlen = mcpx_warm_header(hdr, sizeof(hdr), c->code_len, c->lim->cpu_s);
	int rc = 0;

	if (c->fill)
		rc = c->fill->fn(c->fill->ctx, run->proc.workdir, err);
	if (rc == 0)
		rc = mcpx_sandbox_write_main(sb, &run->proc, c->code, c->code_len, err);
	if (rc < 0)
		return rc;
	run->feed_len = hlen + c->code_len + c->stdin_len;
	run->feed = hlen ? malloc(run->feed_len) : NULL;
	if (!run->feed)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	memcpy(run->feed, hdr, hlen);
	memcpy(run->feed + hlen, c->code, c->code_len);
	if (c->stdin_len)
		memcpy(run->feed + hlen + c->code_len, c->stdin_data, c->stdin_len);
	return 0;
}

static int py_take(void *rt, struct mcpx_loop *loop, const struct mcpx_prepared_call *c,
                   struct mcpx_prepared_run *run, struct mcpx_err *err)
{
	bool ready_pending;
	int rc;

	memset(run, 0, sizeof(*run));
	rc = mcpx_warm_pool_take_kind(rt, mcpx_warm_pool_kind(rt, c->code, c->code_len, c->scan),
	                              &run->proc, c->lim->channel, &ready_pending,
	                              &run->cpu_base_ms, err);
	if (rc <= 0)
		return rc;
	run->markers = ready_pending ? MCPX_WARM_MARKERS_ALL : MCPX_WARM_MARKERS_TAKEN;
	rc = py_feed(mcpx_warm_pool_sandbox(rt), c, run, err);
	if (rc < 0) {
		/* It took nothing of the call yet: ended, as a cold run that
		 * could not start leaves nothing. */
		free(run->feed);
		run->feed = NULL;
		mcpx_reap_later(loop, &run->proc);
		return rc;
	}
	return 1;
}

static void py_run_started(void *rt, const struct mcpx_prepared_turn *t)
{
	mcpx_warm_pool_run_started(rt, t->pgrp, t->arrived_us);
}

static void py_run_ended(void *rt, const struct mcpx_prepared_turn *t)
{
	(void)t;
	mcpx_warm_pool_run_ended(rt);
}

static bool py_ready(const void *rt)
{
	return mcpx_warm_pool_ready(rt);
}

static void py_free(void *rt)
{
	mcpx_warm_pool_free(rt);
}

static void py_stop(void *rt)
{
	mcpx_warm_pool_stop(rt);
}

static void py_discard(void *rt)
{
	mcpx_warm_pool_discard(rt);
}

static void py_start(void *rt)
{
	mcpx_warm_pool_start(rt);
}

static void py_call_queued(void *rt)
{
	mcpx_warm_pool_call_waiting(rt);
}

static bool py_wait(void *rt, const struct mcpx_prepared_call *c, void (*wake)(void *arg),
                    void *arg)
{
	return mcpx_warm_pool_wait_kind(rt, mcpx_warm_pool_kind(rt, c->code, c->code_len, c->scan),
	                                wake, arg);
}

static const struct mcpx_prepared_ops python_ops = {
    .name = "warm interpreter",
    .create = py_create,
    .start = py_start,
    .take = py_take,
    .run_started = py_run_started,
    .call_queued = py_call_queued,
    .wait = py_wait,
    .run_ended = py_run_ended,
    .discard = py_discard,
    .ready = py_ready,
    .stop = py_stop,
    .free = py_free,
};

/* ---- bash: the process at its gate ---------------------------------------- */

static void *bash_create(struct mcpx_loop *loop, const struct mcpx_config *cfg,
                         const struct mcpx_sandbox *sb, const struct mcpx_executor_hooks *hooks)
{
	return mcpx_bash_pool_new(loop, cfg, sb, hooks);
}

static int bash_take(void *rt, struct mcpx_loop *loop, const struct mcpx_prepared_call *c,
                     struct mcpx_prepared_run *run, struct mcpx_err *err)
{
	(void)loop;
	(void)err;
	memset(run, 0, sizeof(*run));
	return mcpx_bash_pool_take(rt, c->allowed, c->lim, c->code, c->code_len, c->fill,
	                           &run->proc, &run->cpu_base_ms);
}

/* Fork-server mode prepares the next bash after any run; after-reap mode
 * only after a bash run, so that a stream of other calls does not prepare
 * and end one per call. */
static void bash_run_ended(void *rt, const struct mcpx_prepared_turn *t)
{
	mcpx_bash_pool_run_ended(rt, t->beside || (t->allowed && t->lang == MCPX_LANG_BASH));
}

static void bash_discard(void *rt)
{
	mcpx_bash_pool_discard(rt);
}

static bool bash_ready(const void *rt)
{
	return mcpx_bash_pool_ready(rt);
}

static void bash_stop(void *rt)
{
	mcpx_bash_pool_stop(rt);
}

static void bash_free(void *rt)
{
	mcpx_bash_pool_free(rt);
}

static const struct mcpx_prepared_ops bash_ops = {
    .name = "prepared bash",
    .create = bash_create,
    .take = bash_take,
    .run_ended = bash_run_ended,
    .discard = bash_discard,
    .ready = bash_ready,
    .stop = bash_stop,
    .free = bash_free,
};

const struct mcpx_prepared_ops *mcpx_prepared_ops_for(enum mcpx_lang lang)
{
	switch (lang) {
	case MCPX_LANG_PYTHON:
		return &python_ops;
	case MCPX_LANG_BASH:
		return &bash_ops;
	default:
		return NULL; /* JavaScript: every run starts cold */
	}
}

/*
 * run_hooks.h - what the executor tells whoever serves a run's channel.
 *
 * The executor gives a run a channel (sandbox.h, MCPX_SANDBOX_CHANNEL_FD)
 * when its job asks for one (struct mcpx_job_bind, channel) or when exec
 * runs want one now; it knows nothing of what travels on it. app.c sets
 * these hooks once, at mcpx_executor_new, and wires them to the run
 * channel (run_channel.h), which routes the run's requests to the broker,
 * the functions and the upstreams. So the executor includes no code-mode
 * header, and code mode none of the executor's internals.
 */
#ifndef MCPX_RUN_HOOKS_H
#define MCPX_RUN_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

/* A run whose channel is being handed over. Strings are valid during the
 * call only (copy them). */
struct mcpx_run_info {
	const char *run_id;
	const char *request_id;
	const char *caller;
	uint64_t deadline_us; /* when the run's wall clock ends (mcpx_now_us) */
	unsigned depth;       /* nesting: 0 for a tools/call's run */
	/* The submitter's word on who serves the run (struct mcpx_job_bind,
	 * serve), passed through untouched; NULL: an exec run. */
	const void *serve;
	/* To be told the bytes the server holds for the run (charged to its
	 * memory budget); valid until run_end. */
	void (*held)(void *arg, uint64_t bytes);
	void *held_arg;
};

struct mcpx_executor_hooks {
	/* Whether exec's own runs get a channel now (the policy may change
	 * between runs). NULL: never. */
	bool (*exec_wants_channel)(void *arg);
	/* A run with a channel started: the hook takes the server end (*fd,
	 * set to -1 when taken) and returns its handle for the run, NULL when
	 * nobody serves it (the run then sees EOF). */
	void *(*run_start)(void *arg, int *fd, const struct mcpx_run_info *info);
	/* The run ended or was cancelled: run (run_start's handle, not NULL)
	 * is gone afterwards. */
	void (*run_end)(void *arg, void *run);
	void *arg;
};

#endif

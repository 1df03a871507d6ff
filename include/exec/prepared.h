/*
 * prepared.h - a runtime prepared before its call, as the executor uses it:
 * one table of operations per language that has one (Python: the warm
 * interpreter, warm_pool.h; bash: the process waiting at its gate,
 * bash_pool.h), so that the executor takes, tells and ends each the same
 * way and never branches on a language to use one.
 *
 * What the executor decides for all of them (run_start.c): where a
 * prepared process may wait. In fork-server mode beside any run (each run's
 * Landlock domain is scoped from every other process); in after-reap mode
 * only while no run lives, so every runtime of another language is
 * discarded when a run starts, and one still preparing is discarded when
 * its own run starts cold; with the warm path off nowhere. A nested run
 * (mcpx.call) never takes a prepared process: it belongs to the next
 * queued call.
 *
 * The tables are static; each runtime's state (rt) is made by its create
 * and owned by the executor until free. Not thread-safe: the loop drives
 * them.
 */
#ifndef MCPX_PREPARED_H
#define MCPX_PREPARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "langset.h"
#include "loop.h"
#include "sandbox.h"

struct mcpx_config;
struct mcpx_executor_hooks;

/* A call about to start, as a prepared runtime sees it. */
struct mcpx_prepared_call {
	const struct mcpx_limits *lim; /* the call's own (run_limits.h) */
	const char *code;
	size_t code_len;
	const char *stdin_data; /* the run's own stdin, fed after what take adds */
	size_t stdin_len;
	const struct mcpx_workdir_fill *fill; /* its input files */
	bool allowed;                         /* the warm path is on (a process may be prepared) */
	/* The code alone says what the run needs (not a function's run,
	 * whose source comes on stdin, nor a workspace call, whose restore
	 * imports its variables' modules): a runtime may pick a lighter
	 * process for it (Python: the plain zygote's child, code_scan.h). */
	bool scan;
};

/* What a take hands over for the run. */
struct mcpx_prepared_run {
	struct mcpx_sandbox_proc proc;
	uint64_t cpu_base_ms; /* CPU it used before the call (subtracted from the run's) */
	unsigned markers;     /* the warm protocol's bytes still due on its stdout (warm.h) */
	char *feed;           /* malloc'd: its stdin from the start (NULL: the run's stdin) */
	size_t feed_len;
};

/* A run that starts or has ended (the executor's turn to tell them). */
struct mcpx_prepared_turn {
	enum mcpx_lang lang; /* the run's (for run_ended: the last one that was not nested) */
	pid_t pgrp;          /* run_started: its process group */
	uint64_t arrived_us; /* run_started: when its call came (mcpx_now_us) */
	bool allowed;        /* the warm path is on */
	bool beside;         /* a prepared process may wait beside a run (fork-server mode) */
};

struct mcpx_prepared_ops {
	const char *name;
	/* NULL when out of memory; cfg, sb and hooks outlive it. */
	void *(*create)(struct mcpx_loop *loop, const struct mcpx_config *cfg,
	                const struct mcpx_sandbox *sb, const struct mcpx_executor_hooks *hooks);
	/* Optional: starts preparing (the server's threads all exist). */
	void (*start)(void *rt);
	/* A run of this language starts: 1 when a prepared process took it
	 * (*run filled: its code and files in place, its limits the call's),
	 * 0 when it must start cold, a negative errno when the run fails (err
	 * says why, worded as a cold spawn's failure). */
	int (*take)(void *rt, struct mcpx_loop *loop, const struct mcpx_prepared_call *call,
	            struct mcpx_prepared_run *run, struct mcpx_err *err);
	/* Optional: a run that is not nested started, of any language. */
	void (*run_started)(void *rt, const struct mcpx_prepared_turn *t);
	/* Optional: a call waits in the queue behind the running run. */
	void (*call_queued)(void *rt);
	/* Optional: before a run of this language starts (call: its code and
	 * scan; the rest may be unset), true when what it would take is still
	 * on its way (wake(arg) is called once it has come); false when it may
	 * start now. */
	bool (*wait)(void *rt, const struct mcpx_prepared_call *call, void (*wake)(void *arg),
	             void *arg);
	/* A run ended and its reply is on its way: the next is prepared when
	 * the runtime's rules say so. */
	void (*run_ended)(void *rt, const struct mcpx_prepared_turn *t);
	/* Ends what is prepared (a run it may not wait beside starts). */
	void (*discard)(void *rt);
	/* Whether a process is prepared now (tests, /metrics). */
	bool (*ready)(const void *rt);
	/* Draining: ends what is prepared, prepares nothing more. */
	void (*stop)(void *rt);
	void (*free)(void *rt);
};

/* The table of lang's prepared runtime, or NULL when it has none (its runs
 * always start cold). */
const struct mcpx_prepared_ops *mcpx_prepared_ops_for(enum mcpx_lang lang);

#endif

/*
 * functions_internal.h - what the three files of the functions module
 * share (functions.c, functions_start.c, functions_ops.c): the module and a
 * call in progress, and the bottom file's helpers. The files call one
 * another top to bottom only: functions_ops.c (the run channel's ops, the
 * module) -> functions_start.c (a call's start) -> functions.c (its run and
 * result). Not for use outside src/tools/functions*.c.
 */
#ifndef MCPX_FUNCTIONS_INTERNAL_H
#define MCPX_FUNCTIONS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "functions.h"
#include "run_channel.h"

struct mcpx_job_bind;
struct mcpx_job_spec;
struct mcpx_offload;

struct mcpx_functions {
	const struct mcpx_config *cfg;
	struct mcpx_executor *ex;
	struct mcpx_run_channel *rc;  /* NULL: no policy */
	struct mcpx_offload *offload; /* where arguments are validated */
	struct mcpx_fn_run *runs;
	uint64_t next_token;
};

struct validation;

struct mcpx_fn_run {
	struct mcpx_functions *fs;
	struct mcpx_fn_run *next;
	uint64_t token;
	struct mcpx_policy *policy; /* our reference */
	const struct mcpx_function *fn;
	struct mcpx_job *job;
	struct mcpx_fn_callbacks cb;
	unsigned depth;
	/* How the run channel serves the run (its job's bind->serve): under
	 * the call's policy version and the function's grant, known by token. */
	struct mcpx_run_who serve;
	/* From mcpx.call: the caller's op, answered when this run is done. */
	struct mcpx_run_op *op;
	/* Its arguments being validated off the loop: no job yet. */
	struct validation *validating;
	/* What the run sent in its "result" op. */
	bool got_result;
	char *status; /* "ok", "error" or "bad_result" */
	char *body;   /* the JSON the wrapper sent */
	size_t body_len;
	bool body_too_large;
};

/* The call in progress whose run holds token (0 finds none), or the one
 * answering op q (an mcpx.call); NULL when there is none. */
struct mcpx_fn_run *mcpx_fn_find_token(struct mcpx_functions *fs, uint64_t token);
struct mcpx_fn_run *mcpx_fn_find_op(struct mcpx_functions *fs, const struct mcpx_run_op *q);

/* A call of fn under policy p (a reference taken), nested depth deep, on
 * fs's list; NULL when out of memory. mcpx_fn_run_free takes it off and
 * frees it, its job and validation being the caller's to cancel first. */
struct mcpx_fn_run *mcpx_fn_run_new(struct mcpx_functions *fs, struct mcpx_policy *p,
                                    const struct mcpx_function *fn, unsigned depth);
void mcpx_fn_run_free(struct mcpx_fn_run *r);

/* Queues r's run with its validated arguments: 0, or the executor's
 * refusal. Its end comes through cb.done or r->op. */
int mcpx_fn_submit(struct mcpx_fn_run *r, const cJSON *args, struct mcpx_job_spec *spec,
                   struct mcpx_job_bind *bind);

/* Answers op q with {"error": kind, "message": msg}. */
void mcpx_fn_answer_error(struct mcpx_run_op *q, const char *kind, const char *msg);

#endif

/*
 * functions.c - running callable functions (functions.h): host-side
 * argument validation, the run's invocation, the "result" and "call" ops of
 * the run channel, nested calls, and turning what a run left into a
 * result.
 *
 * Each call in progress is a struct mcpx_fn_run, known to its op handlers
 * by a token (never a pointer: a run's frames may still arrive after its
 * call was cancelled and freed, and must then find nothing). The token
 * travels in the job's bind (a struct mcpx_run_who, bind->serve) to the
 * run channel, which hands it back with every op of that run; exec's runs
 * have none, so only a function's own run can deliver its result.
 *
 * What the run is given: main.py is a fixed line (RUN_MAIN) that calls the
 * trusted wrapper (python/mcpx_function.py); stdin holds one JSON object
 * {name, file, source, args}. Nothing else of the function reaches the run:
 * its egress rules and credentials stay with the broker.
 *
 * What it does not do: speak MCP (tool_function.c), parse the policy
 * (policy_functions.c), or manage processes (executor.c).
 */
#include "functions.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crypto.h"
#include "executor.h"
#include "jsonrpc.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "offload.h"
#include "policy.h"
#include "run_channel.h"
#include "utf8.h"

/* The run's main.py: the wrapper does the rest (python/mcpx_function.py). */
static const char RUN_MAIN[] = "import mcpx_function\nmcpx_function.main()\n";
/* Bytes of a failed run's stderr quoted in its error. */
#define STDERR_TAIL 2000u

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

/* ---- the list of calls in progress ------------------------------------ */

static struct mcpx_fn_run *find_token(struct mcpx_functions *fs, uint64_t token)
{
	for (struct mcpx_fn_run *r = fs->runs; r && token; r = r->next)
		if (r->token == token)
			return r;
	return NULL;
}

static struct mcpx_fn_run *find_op(struct mcpx_functions *fs, const struct mcpx_run_op *q)
{
	for (struct mcpx_fn_run *r = fs->runs; r; r = r->next)
		if (r->op == q)
			return r;
	return NULL;
}

static void run_free(struct mcpx_fn_run *r)
{
	for (struct mcpx_fn_run **pp = &r->fs->runs; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	mcpx_policy_unref(r->policy);
	free(r->status);
	free(r->body);
	free(r);
}

/* ---- starting a run ------------------------------------------------------ */

/* The source file's last component: what its tracebacks show. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* stdin of the run: {name, file, source, args}. NULL when out of memory. */
static char *invocation(const struct mcpx_function *fn, const cJSON *args)
{
	cJSON *inv = cJSON_CreateObject();
	cJSON *copy = cJSON_Duplicate(args, true);
	char *text = NULL;

	if (inv && copy && cJSON_AddStringToObject(inv, "name", fn->name) &&
	    cJSON_AddStringToObject(inv, "file", base_name(fn->source_file)) &&
	    cJSON_AddStringToObject(inv, "source", fn->source) &&
	    cJSON_AddItemToObject(inv, "args", copy)) {
		copy = NULL;
		text = mcpx_json_print_exact(inv);
	}
	cJSON_Delete(copy);
	cJSON_Delete(inv);
	return text;
}

/* The function's timeout, as the server's limits allow: a task's run may
 * last up to MCP_EXEC_TASK_MAX_TIMEOUT_S. */
static unsigned timeout_for(const struct mcpx_config *cfg, const struct mcpx_function *fn,
                            bool task)
{
	unsigned t = fn->timeout_s ? fn->timeout_s : cfg->default_timeout_s;
	unsigned max = cfg->max_timeout_s;

	if (task && cfg->task_max_timeout_s > max)
		max = cfg->task_max_timeout_s;
	if (t > max)
		t = max;
	return t ? t : 1;
}

static void on_job_done(void *arg, const struct mcpx_job_result *jr);
static void on_job_event(void *arg, enum mcpx_job_event ev, size_t pos);

/* Queues r's run. The arguments were validated; spec's timeout and, for
 * a nested call, its caller are filled in by the caller. */
static int submit(struct mcpx_fn_run *r, const cJSON *args, struct mcpx_job_spec *spec,
                  struct mcpx_job_bind *bind)
{
	char *args_text = mcpx_json_print_exact(args);
	char *stdin_text = invocation(r->fn, args);
	char args_sha[65];
	struct mcpx_job_callbacks cb = {.done = on_job_done, .event = on_job_event, .arg = r};
	int rc = -ENOMEM;

	if (args_text && stdin_text) {
		mcpx_sha256_hex(args_text, strlen(args_text), args_sha);
		r->serve.policy = r->policy;
		r->serve.grant = &r->fn->grant;
		r->serve.depth = r->depth;
		r->serve.token = r->token;
		bind->serve = &r->serve;
		bind->channel = true; /* the result comes back on it */
		bind->depth = r->depth;
		bind->tool = r->fn->name;
		bind->args_sha256 = args_sha;
		bind->args_bytes = strlen(args_text);
		bind->source_sha256 = r->fn->source_sha256;
		spec->code = RUN_MAIN;
		spec->code_len = sizeof(RUN_MAIN) - 1;
		spec->stdin_data = stdin_text;
		spec->stdin_len = strlen(stdin_text);
		spec->bind = bind;
		rc = mcpx_executor_submit(r->fs->ex, spec, &cb, &r->job);
	}
	if (stdin_text) {
		mcpx_wipe(stdin_text, strlen(stdin_text));
		free(stdin_text);
	}
	free(args_text);
	return rc;
}

/* Arguments against the input schema: 0, or -EINVAL with every failure and
 * its pointer in msg. Runs on the offload worker (validation costs up to
 * MCPX_SCHEMA_CPU_LIMIT_MS of CPU, which must not stall the loop); the
 * compiled schema is read-only and safe there. */
static int validate_args(const struct mcpx_function *fn, const cJSON *args, char *msg,
                         size_t msglen)
{
	struct mcpx_schema_errors errs;
	int rc = mcpx_schema_validate(fn->input, args, &errs);

	if (rc == 0)
		return 0;
	if (rc == -ENOMEM && errs.count == 0) {
		snprintf(msg, msglen, "internal error: out of memory validating the arguments");
		return -ENOMEM;
	}
	mcpx_schema_errors_format(&errs, "invalid arguments", msg, msglen);
	return -EINVAL;
}

static struct mcpx_fn_run *run_new(struct mcpx_functions *fs, struct mcpx_policy *p,
                                   const struct mcpx_function *fn, unsigned depth)
{
	struct mcpx_fn_run *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fs = fs;
	r->policy = mcpx_policy_ref(p);
	r->fn = fn;
	r->depth = depth;
	r->token = ++fs->next_token;
	r->next = fs->runs;
	fs->runs = r;
	return r;
}

static const char *refusal_outcome(int rc)
{
	return rc == -EINVAL ? "invalid_arguments"
	       : rc == -EBUSY || rc == -ESHUTDOWN || rc == -EUSERS || rc == -EAGAIN ? "busy"
	                                                                            : "failed";
}

/* The executor's refusal, in words for the caller. */
static void refusal_text(const struct mcpx_functions *fs, int rc, char *msg, size_t msglen)
{
	if (rc == -EUSERS || rc == -EAGAIN)
		mcpx_executor_share_text(fs->ex, msg, msglen);
	else if (rc == -EBUSY)
		snprintf(msg, msglen,
		         "server busy: the queue of executions is full (limit %u); try again later",
		         fs->cfg->max_queue);
	else if (rc == -ESHUTDOWN)
		snprintf(msg, msglen, "server is shutting down: not accepting new executions");
	else
		snprintf(msg, msglen, "internal error: could not queue the function's run (%s)",
		         strerror(-rc));
}

/* ---- validating off the loop ---------------------------------------------- */

/* One call's arguments on their way through the offload worker: what the
 * worker reads is this struct's own (a copy of the arguments, a reference
 * to the policy holding the schema), so the call may go away meanwhile. */
struct validation {
	struct mcpx_offload_task task;
	struct mcpx_fn_run *r; /* NULL: the call was cancelled meanwhile */
	struct mcpx_policy *policy;
	const struct mcpx_function *fn;
	cJSON *args;
	int rc;
	char msg[MCPX_FN_MSG_MAX];
	/* A tools/call's, for its audit line and its profile; the task it
	 * runs for, or "". */
	char request_id[129], caller[161], client[161], task_id[40];
};

static void validate_work(struct mcpx_offload_task *t)
{
	struct validation *v = (struct validation *)((char *)t - offsetof(struct validation, task));

	v->rc = validate_args(v->fn, v->args, v->msg, sizeof(v->msg));
}

static void validated(struct mcpx_offload_task *t);

/* Hands r's arguments (taken) to the worker; validated() goes on. */
static int validate_later(struct mcpx_fn_run *r, cJSON *args)
{
	struct validation *v = calloc(1, sizeof(*v));

	if (!v || !args) {
		free(v);
		cJSON_Delete(args);
		return -ENOMEM;
	}
	v->r = r;
	v->policy = mcpx_policy_ref(r->policy);
	v->fn = r->fn;
	v->args = args;
	v->task.work = validate_work;
	v->task.done = validated;
	r->validating = v;
	mcpx_offload_submit(r->fs->offload, &v->task);
	return 0;
}

/* The end a tools/call and an mcpx.call share once their arguments were
 * checked (v->rc): r's run queued with spec and bind, its timeout the
 * function's but at most max_s (a nested call's: what its caller has left);
 * or the refusal in words in v->msg, counted in the metrics. Returns 0 when
 * r runs (on_job_done ends it), else the refusal: the caller then answers it
 * its own way and frees r. */
static int finish_or_refuse(struct mcpx_fn_run *r, struct validation *v, struct mcpx_job_spec *spec,
                            struct mcpx_job_bind *bind, uint64_t max_s)
{
	int rc = v->rc;

	if (rc == 0) {
		spec->timeout_s = timeout_for(r->fs->cfg, r->fn, spec->task_id != NULL);
		if (max_s < spec->timeout_s)
			spec->timeout_s = (unsigned)max_s;
		rc = submit(r, v->args, spec, bind);
		if (rc < 0)
			refusal_text(r->fs, rc, v->msg, sizeof(v->msg));
	}
	if (rc != 0)
		mcpx_metrics_tool_call(r->fn->name, refusal_outcome(rc));
	return rc;
}

/* A tools/call whose arguments were checked: queued, or refused through
 * its done callback (the refusal the synchronous path used to return). */
static void start_validated(struct mcpx_fn_run *r, struct validation *v)
{
	const struct mcpx_profile *pr = mcpx_policy_profile_for(r->policy, v->caller);
	struct mcpx_job_spec spec = {.request_id = v->request_id,
	                             .caller = v->caller,
	                             .client = v->client,
	                             .task_id = v->task_id[0] ? v->task_id : NULL,
	                             .profile = pr ? pr->name : NULL,
	                             .limits = pr ? &pr->limits : NULL};
	struct mcpx_job_bind bind = {0};
	struct mcpx_fn_result res = {.outcome = MCPX_FN_FAILED, .text = v->msg};

	if (finish_or_refuse(r, v, &spec, &bind, UINT64_MAX) == 0)
		return;
	r->cb.done(r->cb.arg, &res);
	run_free(r);
}

static void call_validated(struct mcpx_fn_run *r, struct validation *v);

static void validated(struct mcpx_offload_task *t)
{
	struct validation *v = (struct validation *)((char *)t - offsetof(struct validation, task));
	struct mcpx_fn_run *r = v->r;

	if (r) {
		r->validating = NULL;
		if (t->cancelled) {
			v->rc = -ESHUTDOWN;
			snprintf(v->msg, sizeof(v->msg),
			         "server is shutting down: not accepting new executions");
		}
		if (r->op)
			call_validated(r, v);
		else
			start_validated(r, v);
	}
	cJSON_Delete(v->args);
	mcpx_policy_unref(v->policy);
	free(v);
}

int mcpx_fn_start(struct mcpx_functions *fs, const struct mcpx_fn_call *call,
                  const struct mcpx_fn_callbacks *cb, struct mcpx_fn_run **out, char *msg,
                  size_t msglen)
{
	struct mcpx_fn_run *r = run_new(fs, call->policy, call->fn, 0);
	cJSON *args = call->args ? cJSON_Duplicate(call->args, true) : cJSON_CreateObject();

	*out = NULL;
	msg[0] = '\0';
	if (r) {
		r->cb = *cb;
		if (validate_later(r, args) == 0) {
			snprintf(r->validating->request_id, sizeof(r->validating->request_id), "%s",
			         call->request_id ? call->request_id : "");
			snprintf(r->validating->caller, sizeof(r->validating->caller), "%s",
			         call->caller ? call->caller : "");
			snprintf(r->validating->client, sizeof(r->validating->client), "%s",
			         call->client ? call->client : "");
			snprintf(r->validating->task_id, sizeof(r->validating->task_id), "%s",
			         call->task_id ? call->task_id : "");
			*out = r;
			return 0;
		}
		args = NULL;
	}
	cJSON_Delete(args);
	snprintf(msg, msglen, "internal error: out of memory");
	mcpx_metrics_tool_call(call->fn->name, "failed");
	if (r)
		run_free(r);
	return -ENOMEM;
}

void mcpx_fn_cancel(struct mcpx_fn_run *r)
{
	if (!r)
		return;
	mcpx_metrics_tool_call(r->fn->name, "cancelled");
	if (r->validating)
		r->validating->r = NULL; /* the worker's copy is dropped when done */
	mcpx_executor_cancel(r->fs->ex, r->job);
	run_free(r);
}

struct mcpx_job *mcpx_fn_job(const struct mcpx_fn_run *r)
{
	return r ? r->job : NULL;
}

/* ---- a run is done: what it left becomes the result ---------------------- */

/* The value the run sent: a returned dict is the structuredContent, any
 * other value becomes {"result": value}; then the output schema. */
static enum mcpx_fn_outcome take_value(struct mcpx_fn_run *r, cJSON **out, struct mcpx_buf *text)
{
	const char *why;
	/* Parsed as requests are: a U+0000 in a string stays (jsonrpc.h). */
	cJSON *v = mcpx_jsonrpc_parse(r->body, r->body_len, &why);
	struct mcpx_schema_errors errs;
	char msg[MCPX_FN_MSG_MAX];

	if (!v) {
		mcpx_buf_adds(text, "the function's result is not valid JSON");
		return MCPX_FN_BAD_RESULT;
	}
	if (!cJSON_IsObject(v)) {
		cJSON *wrap = cJSON_CreateObject();

		if (!wrap || !cJSON_AddItemToObject(wrap, "result", v)) {
			cJSON_Delete(wrap);
			cJSON_Delete(v);
			mcpx_buf_adds(text, "internal error: out of memory");
			return MCPX_FN_FAILED;
		}
		v = wrap;
	}
	if (r->fn->output && mcpx_schema_validate(r->fn->output, v, &errs) < 0) {
		mcpx_schema_errors_format(&errs,
		                          "the function's result does not match its output "
		                          "schema",
		                          msg, sizeof(msg));
		mcpx_buf_adds(text, msg);
		cJSON_Delete(v);
		return MCPX_FN_BAD_RESULT;
	}
	*out = v;
	return MCPX_FN_OK;
}

/* {"message", "traceback"} from the wrapper: the message, a blank line,
 * the end of the traceback. */
static void raised_text(const struct mcpx_fn_run *r, struct mcpx_buf *text)
{
	cJSON *e = cJSON_ParseWithLength(r->body, r->body_len);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(e, "traceback");

	mcpx_buf_adds(text, cJSON_IsString(m) ? m->valuestring : "the function failed");
	if (cJSON_IsString(tb) && tb->valuestring[0]) {
		const char *t = tb->valuestring;
		size_t n = strlen(t);

		if (n > MCPX_FN_TRACEBACK_MAX) {
			t += n - MCPX_FN_TRACEBACK_MAX;
			while (((unsigned char)*t & 0xC0) == 0x80)
				t++;
			mcpx_buf_adds(text, "\n\n(the start of the traceback is cut)\n...");
		} else {
			mcpx_buf_adds(text, "\n\n");
		}
		mcpx_buf_adds(text, t);
	}
	cJSON_Delete(e);
}

/* Why a run that sent no result ended, for the caller. */
static void failed_text(const struct mcpx_fn_run *r, const struct mcpx_job_result *jr,
                        struct mcpx_buf *text)
{
	const char *name = r->fn->name;
	size_t n = jr->stderr_len < STDERR_TAIL ? jr->stderr_len : STDERR_TAIL;
	char *tail;

	if (jr->status != MCPX_JOB_DONE)
		mcpx_buf_addf(text, "%s", jr->message);
	else if (jr->timed_out)
		mcpx_buf_addf(text, "%s did not finish within %llu ms (its time limit)", name,
		              (unsigned long long)jr->duration_ms);
	else if (jr->limit)
		mcpx_buf_addf(text, "%s was stopped by the run's %s limit", name, jr->limit);
	else if (jr->signal)
		mcpx_buf_addf(text, "%s ended without a result (killed by signal %d)", name,
		              jr->signal);
	else
		mcpx_buf_addf(text, "%s ended without a result (exit code %d)", name,
		              jr->exit_code);
	if (jr->status == MCPX_JOB_DONE && n) {
		tail = mcpx_utf8_sanitize(jr->stderr_buf + jr->stderr_len - n, n, &n);
		if (tail)
			mcpx_buf_addf(text, "\n\nstderr (its end):\n%s", tail);
		free(tail);
	}
}

static enum mcpx_fn_outcome interpret(struct mcpx_fn_run *r, const struct mcpx_job_result *jr,
                                      cJSON **structured, struct mcpx_buf *text)
{
	if (jr->status == MCPX_JOB_DONE && r->got_result) {
		if (r->body_too_large ||
		    (r->fs->cfg->max_output_bytes && r->body_len > r->fs->cfg->max_output_bytes)) {
			mcpx_buf_addf(text,
			              "the function's result is larger than %zu bytes "
			              "(MCP_EXEC_MAX_OUTPUT_BYTES)",
			              r->fs->cfg->max_output_bytes);
			return MCPX_FN_BAD_RESULT;
		}
		if (strcmp(r->status, "ok") == 0)
			return take_value(r, structured, text);
		raised_text(r, text);
		return strcmp(r->status, "bad_result") == 0 ? MCPX_FN_BAD_RESULT : MCPX_FN_RAISED;
	}
	failed_text(r, jr, text);
	return MCPX_FN_FAILED;
}

static const char *outcome_label(enum mcpx_fn_outcome o)
{
	static const char *const labels[] = {"ok", "raised", "bad_result", "failed"};

	return labels[o];
}

static void answer_op(struct mcpx_run_op *q, const struct mcpx_fn_result *res);

static void on_job_done(void *arg, const struct mcpx_job_result *jr)
{
	struct mcpx_fn_run *r = arg;
	struct mcpx_fn_result res = {0};
	struct mcpx_buf text;

	mcpx_buf_init(&text, MCPX_FN_MSG_MAX + MCPX_FN_TRACEBACK_MAX);
	r->job = NULL; /* freed by the executor after this callback */
	res.outcome = interpret(r, jr, &res.structured, &text);
	res.text = mcpx_buf_str(&text);
	/* A run the queue dropped (expired, draining) was refused, not run. */
	mcpx_metrics_tool_call(r->fn->name,
	                       jr->status == MCPX_JOB_EXPIRED || jr->status == MCPX_JOB_SHUTDOWN
	                           ? "busy"
	                           : outcome_label(res.outcome));
	if (r->op)
		answer_op(r->op, &res);
	else if (r->cb.done)
		r->cb.done(r->cb.arg, &res);
	cJSON_Delete(res.structured); /* NULL unless nobody took it */
	mcpx_buf_free(&text);
	run_free(r);
}

static void on_job_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct mcpx_fn_run *r = arg;

	if (r->cb.event)
		r->cb.event(r->cb.arg, ev, pos);
}

/* ---- the broker's ops: "result" from a function's run ----------------- */

/* {"error": kind, "message": msg}; a refusal ("denied") also has the
 * reason mcpx.Denied reads. */
static void answer_error(struct mcpx_run_op *q, const char *kind, const char *msg)
{
	cJSON *m = cJSON_CreateObject();

	if (m && (!cJSON_AddStringToObject(m, "error", kind) ||
	          !cJSON_AddStringToObject(m, "message", msg) ||
	          (strcmp(kind, "denied") == 0 &&
	           !cJSON_AddStringToObject(m, "reason", "bad_request")))) {
		cJSON_Delete(m);
		m = NULL;
	}
	mcpx_run_op_answer(q, m, NULL, 0);
}

static void op_result(struct mcpx_functions *fs, struct mcpx_run_op *q, const cJSON *msg,
                      const char *body, size_t len, bool oversize)
{
	struct mcpx_fn_run *r = find_token(fs, mcpx_run_op_who(q)->token);
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(msg, "status");

	if (!r) {
		answer_error(q, "denied", "this run is not a function's run");
		return;
	}
	if (r->got_result) {
		answer_error(q, "denied", "the result was already sent");
		return;
	}
	if (!cJSON_IsString(status) ||
	    (strcmp(status->valuestring, "ok") != 0 && strcmp(status->valuestring, "error") != 0 &&
	     strcmp(status->valuestring, "bad_result") != 0)) {
		answer_error(q, "denied", "status must be \"ok\", \"error\" or \"bad_result\"");
		return;
	}
	r->status = strdup(status->valuestring);
	r->body = oversize ? NULL : malloc(len ? len : 1);
	if (!r->status || (!oversize && !r->body)) {
		answer_error(q, "denied", "the server is out of memory");
		return;
	}
	if (r->body)
		memcpy(r->body, body, len);
	r->body_len = len;
	r->body_too_large = oversize;
	r->got_result = true;
	mcpx_run_op_answer(q, cJSON_CreateObject(), NULL, 0);
}

/* ---- the broker's ops: "call" from code (mcpx.call) --------------------- */

/* A call's outcome for the calling code: {"ok": true} and the structured
 * result as the body, or {"error": "tool", "message": text}. */
static void answer_op(struct mcpx_run_op *q, const struct mcpx_fn_result *res)
{
	cJSON *m;
	char *body;

	if (res->outcome != MCPX_FN_OK) {
		answer_error(q, "tool", res->text);
		return;
	}
	body = mcpx_json_print_exact(res->structured);
	m = cJSON_CreateObject();
	if (!body || !m || !cJSON_AddTrueToObject(m, "ok")) {
		free(body);
		cJSON_Delete(m);
		answer_error(q, "tool", "internal error: out of memory");
		return;
	}
	mcpx_run_op_answer(q, m, body, strlen(body));
}

/* One call in flight per calling run: threads of a run wait their turn. */
/* The name a refusal echoes: only one a function could have. */
static void shown_name(const cJSON *name, char *shown, size_t len)
{
	snprintf(shown, len, "%s",
	         !cJSON_IsString(name)             ? "mcpx.call"
	         : strlen(name->valuestring) < len ? name->valuestring
	                                           : "(a long name)");
}

/* The function the caller names, if its code may call it now; else NULL
 * with the reason in msg. How many calls a run makes, and one at a time,
 * are the run channel's caps of the op (call_refused words them). */
static const struct mcpx_function *callee(const struct mcpx_run_who *who, const cJSON *name,
                                          char *msg, size_t msglen)
{
	const struct mcpx_function *fn = NULL;
	char shown[MCPX_FUNCTION_NAME_MAX + 1];

	if (!cJSON_IsString(name)) {
		snprintf(msg, msglen, "mcpx.call needs the name of a function");
		return NULL;
	}
	shown_name(name, shown, sizeof(shown));
	fn = mcpx_policy_function(who->policy, name->valuestring);
	/* A function the caller's profile leaves out does not exist for it,
	 * from its code either. */
	if (fn && !mcpx_policy_tool_allowed(who->policy, who->caller, fn->name))
		fn = NULL;
	if (!fn || !fn->callable_from_exec)
		snprintf(msg, msglen, "no function named \"%s\" may be called from code", shown);
	else if (who->depth + 1 > MCPX_FN_MAX_DEPTH)
		snprintf(msg, msglen, "%s: calls nest at most %d deep", shown, MCPX_FN_MAX_DEPTH);
	else if (mcpx_now_us() >= who->deadline_us)
		snprintf(msg, msglen, "%s: the calling run has no time left", shown);
	else
		return fn;
	return NULL;
}

/* A call past the op's caps (the run channel enforces them): a run waits
 * for one call at a time and makes MCPX_FN_MAX_CALLS in all. */
static void call_refused(void *arg, struct mcpx_run_op *q, const cJSON *msg, const char *reason,
                         unsigned limit)
{
	char shown[MCPX_FUNCTION_NAME_MAX + 1], text[MCPX_FN_MSG_MAX];

	(void)arg;
	shown_name(cJSON_GetObjectItemCaseSensitive(msg, "name"), shown, sizeof(shown));
	if (strcmp(reason, "in_flight") == 0)
		snprintf(text, sizeof(text),
		         "%s: this run already waits for a call (one at a time)", shown);
	else
		snprintf(text, sizeof(text), "%s: this run made its %u calls", shown, limit);
	answer_error(q, "tool", text);
}

/* The arguments: a JSON object in the body (checked against fn's schema
 * later, off the loop). */
static cJSON *call_args(const struct mcpx_function *fn, const char *body, size_t len, bool oversize,
                        char *msg, size_t msglen)
{
	const char *why;
	/* Parsed as requests are, so a U+0000 in a string reaches the
	 * function exactly (cJSON alone would end the string there). */
	cJSON *args = oversize ? NULL : mcpx_jsonrpc_parse(body, len, &why);

	if (oversize)
		snprintf(msg, msglen, "%s: the arguments are larger than %u bytes", fn->name,
		         MCPX_RUN_CHANNEL_MAX_BODY);
	else if (!cJSON_IsObject(args))
		snprintf(msg, msglen, "%s: the arguments must be a JSON object", fn->name);
	else
		return args;
	mcpx_metrics_tool_call(fn->name, "invalid_arguments");
	cJSON_Delete(args);
	return NULL;
}

/* An mcpx.call whose arguments were checked: the CPU the check took is the
 * calling run's (its cpu_ms and budget), then the call is queued or
 * answered with its refusal. */
static void call_validated(struct mcpx_fn_run *r, struct validation *v)
{
	struct mcpx_run_op *q = r->op;
	const struct mcpx_run_who *who = mcpx_run_op_who(q);
	const struct mcpx_profile *pr = mcpx_policy_profile_for(who->policy, who->caller);
	struct mcpx_job_spec spec = {.request_id = who->request_id,
	                             .caller = who->caller,
	                             .profile = pr ? pr->name : NULL,
	                             .limits = pr ? &pr->limits : NULL};
	struct mcpx_job_bind bind = {.nested = true, .parent_run_id = who->run_id};
	uint64_t now = mcpx_now_us();
	uint64_t left_s = 0;

	mcpx_executor_charge_cpu(r->fs->ex, who->run_id, v->task.cpu_us);
	if (now < who->deadline_us) {
		/* The callee ends with its caller at the latest. */
		left_s = (who->deadline_us - now + 999999u) / 1000000u;
	} else if (v->rc == 0) {
		v->rc = -ETIME;
		snprintf(v->msg, sizeof(v->msg), "%s: the calling run has no time left",
		         r->fn->name);
	}
	if (finish_or_refuse(r, v, &spec, &bind, left_s) == 0)
		return;
	r->op = NULL;
	run_free(r);
	answer_error(q, "tool", v->msg);
}

static void op_call(struct mcpx_functions *fs, struct mcpx_run_op *q, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	const struct mcpx_run_who *who = mcpx_run_op_who(q);
	const struct mcpx_function *fn;
	char text[MCPX_FN_MSG_MAX];
	struct mcpx_fn_run *r;
	cJSON *args;

	fn = callee(who, cJSON_GetObjectItemCaseSensitive(msg, "name"), text, sizeof(text));
	args = fn ? call_args(fn, body, len, oversize, text, sizeof(text)) : NULL;
	if (!args) {
		answer_error(q, "tool", text);
		return;
	}
	r = run_new(fs, who->policy, fn, who->depth + 1);
	if (r) {
		/* One call at a time per caller holds from here (caller_busy). */
		r->op = q;
		if (validate_later(r, args) == 0)
			return;
		r->op = NULL;
		run_free(r);
	} else {
		cJSON_Delete(args);
	}
	mcpx_metrics_tool_call(fn->name, "failed");
	answer_error(q, "tool", "internal error: out of memory");
}

/* The op "call": mcpx.call of a function, from a run. */
static void on_call(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	(void)name;
	op_call(arg, q, msg, body, len, oversize);
}

/* The op "result": a function's run sends its outcome. */
static void on_result(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                      const char *body, size_t len, bool oversize)
{
	(void)name;
	op_result(arg, q, msg, body, len, oversize);
}

/* The caller's run ended first: its call goes with it. */
static void on_op_cancel(void *arg, struct mcpx_run_op *q)
{
	struct mcpx_fn_run *r = find_op(arg, q);

	if (r) {
		r->op = NULL;
		mcpx_fn_cancel(r);
	}
}

/* ---- the module ------------------------------------------------------------ */

struct mcpx_functions *mcpx_functions_new(const struct mcpx_config *cfg, struct mcpx_executor *ex,
                                          struct mcpx_run_channel *rc, struct mcpx_loop *loop)
{
	struct mcpx_functions *fs = calloc(1, sizeof(*fs));
	/* A run makes MCPX_FN_MAX_CALLS calls, one at a time: the call op's
	 * caps, enforced by the run channel. */
	struct mcpx_run_op_handler ops[] = {
	    {.name = "call",
	     .op = on_call,
	     .cancel = on_op_cancel,
	     .max_per_run = MCPX_FN_MAX_CALLS,
	     .max_in_flight = 1,
	     .refuse = call_refused},
	    {.name = "result", .op = on_result, .cancel = on_op_cancel},
	};

	if (!fs)
		return NULL;
	if (mcpx_offload_new(loop, &fs->offload) < 0) {
		free(fs);
		return NULL;
	}
	fs->cfg = cfg;
	fs->ex = ex;
	fs->rc = rc;
	for (size_t i = 0; rc && i < sizeof(ops) / sizeof(ops[0]); i++) {
		ops[i].arg = fs;
		if (mcpx_run_channel_add_op(rc, &ops[i]) < 0) {
			mcpx_functions_free(fs);
			return NULL;
		}
	}
	return fs;
}

void mcpx_functions_free(struct mcpx_functions *fs)
{
	if (!fs)
		return;
	/* Calls of tools/call were cancelled by the core, nested ones with
	 * their callers' runs; whatever is left goes now. */
	while (fs->runs)
		mcpx_fn_cancel(fs->runs);
	/* Validations still in the worker find their calls gone. */
	mcpx_offload_free(fs->offload);
	if (fs->rc) {
		mcpx_run_channel_remove_op(fs->rc, "call");
		mcpx_run_channel_remove_op(fs->rc, "result");
	}
	free(fs);
}

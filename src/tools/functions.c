/*
 * functions.c - a callable function's run (functions.h), the bottom of the
 * module's three files: the list of calls in progress, the run's invocation
 * and its job, and turning what a run left into a result, answered to its
 * tools/call or to the op of the run that called it.
 *
 * Each call in progress is a struct mcpx_fn_run (functions_internal.h),
 * known to its op handlers by a token (never a pointer: a run's frames may
 * still arrive after its call was cancelled and freed, and must then find
 * nothing). The token travels in the job's bind (a struct mcpx_run_who,
 * bind->serve) to the run channel, which hands it back with every op of
 * that run; exec's runs have none, so only a function's own run can deliver
 * its result.
 *
 * What the run is given: main.py is a fixed line (RUN_MAIN) that calls the
 * trusted wrapper (python/mcpx_function.py); stdin holds one JSON object
 * {name, file, source, args}. Nothing else of the function reaches the run:
 * its egress rules and credentials stay with the broker.
 *
 * What it does not do: check arguments or start a call
 * (functions_start.c), serve the run channel's ops (functions_ops.c),
 * speak MCP (tool_function.c), parse the policy (policy_functions.c), or
 * manage processes (executor.c).
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
#include "functions_internal.h"
#include "jsonrpc.h"
#include "metrics.h"
#include "policy.h"
#include "run_channel.h"
#include "utf8.h"

/* The run's main.py: the wrapper does the rest (python/mcpx_function.py). */
static const char RUN_MAIN[] = "import mcpx_function\nmcpx_function.main()\n";
/* Bytes of a failed run's stderr quoted in its error. */
#define STDERR_TAIL 2000u

/* ---- the list of calls in progress ------------------------------------ */

struct mcpx_fn_run *mcpx_fn_find_token(struct mcpx_functions *fs, uint64_t token)
{
	for (struct mcpx_fn_run *r = fs->runs; r && token; r = r->next)
		if (r->token == token)
			return r;
	return NULL;
}

struct mcpx_fn_run *mcpx_fn_find_op(struct mcpx_functions *fs, const struct mcpx_run_op *q)
{
	for (struct mcpx_fn_run *r = fs->runs; r; r = r->next)
		if (r->op == q)
			return r;
	return NULL;
}

void mcpx_fn_run_free(struct mcpx_fn_run *r)
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
struct mcpx_fn_run *mcpx_fn_run_new(struct mcpx_functions *fs, struct mcpx_policy *p,
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

static void on_job_done(void *arg, const struct mcpx_job_result *jr);
static void on_job_event(void *arg, enum mcpx_job_event ev, size_t pos);

/* Queues r's run. The arguments were validated; spec's timeout and, for
 * a nested call, its caller are filled in by the caller. */
int mcpx_fn_submit(struct mcpx_fn_run *r, const cJSON *args, struct mcpx_job_spec *spec,
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
	mcpx_fn_run_free(r);
}

static void on_job_event(void *arg, enum mcpx_job_event ev, size_t pos)
{
	struct mcpx_fn_run *r = arg;

	if (r->cb.event)
		r->cb.event(r->cb.arg, ev, pos);
}

/* ---- answering the op of a run that called (mcpx.call) ------------- */

/* {"error": kind, "message": msg}; a refusal ("denied") also has the
 * reason mcpx.Denied reads. */
void mcpx_fn_answer_error(struct mcpx_run_op *q, const char *kind, const char *msg)
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

/* A call's outcome for the calling code: {"ok": true} and the structured
 * result as the body, or {"error": "tool", "message": text}. */
static void answer_op(struct mcpx_run_op *q, const struct mcpx_fn_result *res)
{
	cJSON *m;
	char *body;

	if (res->outcome != MCPX_FN_OK) {
		mcpx_fn_answer_error(q, "tool", res->text);
		return;
	}
	body = mcpx_json_print_exact(res->structured);
	m = cJSON_CreateObject();
	if (!body || !m || !cJSON_AddTrueToObject(m, "ok")) {
		free(body);
		cJSON_Delete(m);
		mcpx_fn_answer_error(q, "tool", "internal error: out of memory");
		return;
	}
	mcpx_run_op_answer(q, m, body, strlen(body));
}

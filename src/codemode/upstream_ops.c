/*
 * upstream_ops.c - what a run's code asks of the upstreams over its run
 * channel (mcpx.call("<upstream>.<tool>"), mcpx.call_raw, mcpx.tools):
 * the ops "upstream" and "upstream_tools" (run_channel.h, the op table),
 * and the per-run budget of calls.
 *
 *   {"op": "upstream", "name": "github.list_issues", "raw": false}
 *     + the arguments (a JSON object) as the body
 *   -> {"ok": true} + the answer as the body: the tool's structuredContent,
 *      else the text of its text blocks joined with newlines (a JSON
 *      string), or with "raw" the whole CallToolResult
 *   -> {"error": "tool", "message": "..."}  (isError, a JSON-RPC error, a timeout)
 *   -> {"error": "denied", "reason": "...", "message": "..."}
 *   -> {"error": "not_upstream"}  (the name names no upstream: a function's)
 *
 *   {"op": "upstream_tools"} -> {"ok": true} + a JSON array of
 *      {"name", "description", "input_schema", "output_schema"}: the
 *      upstreams' tools this run may call, and the functions it may call.
 *
 * Per run: at most max_calls_per_run calls of each upstream (counted when
 * sent, denied or not past the checks of the policy), and at most the
 * run's max_in_flight calls at once. The state lives from the run's first
 * op to its end (the run channel's run_end).
 */
#include "upstream_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "loop.h"
#include "policy.h"
#include "run_channel.h"
#include "upstream.h"

struct run_state;

/* One call in flight, for its op. */
struct opcall {
	struct opcall *next;
	struct run_state *rs;
	struct mcpx_run_op *q;
	struct mcpx_upstream_call *call;
	bool raw;
};

struct run_state {
	struct run_state *next;
	const struct mcpx_run_who *who; /* the run channel's, valid until run_end */
	unsigned calls[MCPX_POLICY_MAX_UPSTREAMS];
	unsigned in_flight;
	struct opcall *ops;
};

struct mcpx_upstream_ops {
	struct mcpx_upstreams *ups;
	struct mcpx_run_channel *rc;
	struct run_state *runs;
};

static struct run_state *run_state(struct mcpx_upstream_ops *o, const struct mcpx_run_who *who,
                                   bool create)
{
	struct run_state *rs;

	for (rs = o->runs; rs; rs = rs->next)
		if (rs->who == who)
			return rs;
	if (!create || !(rs = calloc(1, sizeof(*rs))))
		return NULL;
	rs->who = who;
	rs->next = o->runs;
	o->runs = rs;
	return rs;
}

static void answer_error(struct mcpx_run_op *q, const char *error, const char *reason,
                         const char *message)
{
	cJSON *m = cJSON_CreateObject();

	if (m) {
		cJSON_AddStringToObject(m, "error", error);
		if (reason)
			cJSON_AddStringToObject(m, "reason", reason);
		if (message)
			cJSON_AddStringToObject(m, "message", message);
	}
	mcpx_run_op_answer(q, m, NULL, 0);
}

static void answer_json(struct mcpx_run_op *q, const cJSON *v)
{
	char *body = mcpx_json_print_exact(v);
	cJSON *m = cJSON_CreateObject();

	if (!body || !m || !cJSON_AddTrueToObject(m, "ok")) {
		free(body);
		cJSON_Delete(m);
		answer_error(q, "tool", NULL, "internal error: out of memory");
		return;
	}
	mcpx_run_op_answer(q, m, body, strlen(body));
}

/* The text of the text blocks of content, joined with newlines. */
static cJSON *joined_text(const cJSON *content)
{
	struct mcpx_buf b;
	const cJSON *block;
	bool first = true;
	cJSON *s;

	mcpx_buf_init(&b, MCPX_UPSTREAM_RESPONSE_MAX);
	cJSON_ArrayForEach(block, content)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(block, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(block, "text");

		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 ||
		    !cJSON_IsString(text))
			continue;
		if (!first)
			mcpx_buf_add(&b, "\n", 1);
		mcpx_buf_adds(&b, text->valuestring);
		first = false;
	}
	s = cJSON_CreateString(b.len ? mcpx_buf_str(&b) : "");
	mcpx_buf_free(&b);
	return s;
}

static void opcall_free(struct opcall *oc)
{
	for (struct opcall **pp = &oc->rs->ops; *pp; pp = &(*pp)->next) {
		if (*pp == oc) {
			*pp = oc->next;
			break;
		}
	}
	oc->rs->in_flight--;
	free(oc);
}

static void call_done(void *arg, struct mcpx_upstream_answer *a)
{
	struct opcall *oc = arg;
	struct mcpx_run_op *q = oc->q;
	const cJSON *structured, *content;
	cJSON *text;

	oc->call = NULL;
	if (a->kind == MCPX_UPSTREAM_DENIED) {
		answer_error(q, "denied", a->reason, a->message);
	} else if (a->kind == MCPX_UPSTREAM_TOOL_ERROR) {
		answer_error(q, "tool", NULL, a->message);
	} else if (oc->raw) {
		answer_json(q, a->result);
	} else {
		structured = cJSON_GetObjectItemCaseSensitive(a->result, "structuredContent");
		content = cJSON_GetObjectItemCaseSensitive(a->result, "content");
		text = joined_text(content);
		if (!text)
			answer_error(q, "tool", NULL, "internal error: out of memory");
		else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a->result, "isError")))
			answer_error(q, "tool", NULL,
			             text->valuestring[0] ? text->valuestring : "the tool failed");
		else
			answer_json(q, structured && !cJSON_IsNull(structured) ? structured : text);
		cJSON_Delete(text);
	}
	opcall_free(oc);
}

static void caller_of(const struct mcpx_run_who *who, struct mcpx_upstream_caller *c)
{
	memset(c, 0, sizeof(*c));
	c->run_id = who->run_id;
	c->request_id = who->request_id;
	c->caller = who->caller;
	c->policy = who->policy;
	c->grant = who->grant;
	c->deadline_us = who->deadline_us;
}

/* The "upstream" op: mcpx.call of "<upstream>.<tool>". Longer than 60
 * lines on purpose: the run's own limits (calls per upstream, calls in
 * flight, the arguments' shape) are checked, audited when they refuse,
 * and counted in one place, in the order a refusal names them. */
static void op_call(struct mcpx_upstream_ops *o, struct mcpx_run_op *q, const cJSON *msg,
                    const char *body, size_t len, bool oversize)
{
	const struct mcpx_run_who *who = mcpx_run_op_who(q);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(msg, "name");
	const struct mcpx_upstream_conf *conf;
	struct mcpx_upstream_caller caller;
	char text[MCPX_UPSTREAM_MSG_MAX];
	const char *tool = NULL, *reason = NULL;
	struct run_state *rs;
	struct opcall *oc;
	cJSON *args = NULL;
	size_t idx;
	int rc;

	if (!cJSON_IsString(name) ||
	    !(conf = mcpx_upstream_of(who->policy, name->valuestring, &tool))) {
		answer_error(q, "not_upstream", NULL, NULL);
		return;
	}
	caller_of(who, &caller);
	idx = (size_t)(conf - who->policy->upstreams);
	if (!(rs = run_state(o, who, true)) || !(oc = calloc(1, sizeof(*oc)))) {
		answer_error(q, "tool", NULL, "internal error: out of memory");
		return;
	}
	if (mcpx_egress_grant_has_upstream(who->grant, conf) &&
	    rs->calls[idx] >= conf->max_calls_per_run) {
		reason = "budget";
		snprintf(text, sizeof(text),
		         "this run made its %u calls of upstream %s (max_calls_per_run)",
		         conf->max_calls_per_run, conf->name);
	} else if (rs->in_flight >= who->grant->max_in_flight) {
		reason = "in_flight";
		snprintf(text, sizeof(text),
		         "%u calls of this run are already in flight (max_in_flight)",
		         who->grant->max_in_flight);
	} else if (oversize || mcpx_json_parse(body ? body : "", len, &args) < 0 ||
	           !cJSON_IsObject(args)) {
		reason = "bad_request";
		snprintf(text, sizeof(text),
		         "the arguments must be a JSON object of at most %u bytes",
		         MCPX_RUN_CHANNEL_MAX_BODY);
	}
	if (reason) {
		mcpx_upstream_audit_denied(&caller, conf->name, tool, reason);
		answer_error(q, "denied", reason, text);
		cJSON_Delete(args);
		free(oc);
		return;
	}
	oc->rs = rs;
	oc->q = q;
	oc->raw = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "raw"));
	oc->next = rs->ops;
	rs->ops = oc;
	rs->in_flight++;
	rc = mcpx_upstream_call_start(o->ups, &caller, name->valuestring, args, call_done, oc,
	                              &oc->call, &reason, text, sizeof(text));
	cJSON_Delete(args);
	if (rc == 0)
		rs->calls[idx]++;
	else if (rc == -EACCES)
		answer_error(q, "denied", reason, text);
	else
		answer_error(q, "tool", NULL, "internal error: out of memory");
	if (rc < 0)
		opcall_free(oc);
}

/* Functions this run may call, in the discovery list's form (the policy
 * holds a few: printed here). */
static int add_functions(struct mcpx_buf *out, const struct mcpx_policy *p, bool *first)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < p->n_functions; i++) {
		const struct mcpx_function *f = &p->functions[i];
		cJSON *e;

		if (!f->callable_from_exec)
			continue;
		if (!(e = cJSON_CreateObject()) || !cJSON_AddStringToObject(e, "name", f->name) ||
		    !cJSON_AddStringToObject(e, "description", f->description) ||
		    !cJSON_AddItemReferenceToObject(e, "input_schema", f->input_schema) ||
		    !(f->output_schema
		          ? cJSON_AddItemReferenceToObject(e, "output_schema", f->output_schema)
		          : cJSON_AddNullToObject(e, "output_schema") != NULL))
			rc = -ENOMEM;
		if (rc == 0 && !*first)
			rc = mcpx_buf_add(out, ",", 1);
		*first = false;
		if (rc == 0)
			rc = mcpx_json_print(e, out);
		cJSON_Delete(e);
	}
	return rc;
}

/* The upstreams' tools come as the text their lists were kept in: nothing
 * of a large catalogue is printed again for each call (issue 34 item 3). */
static void op_tools(struct mcpx_upstream_ops *o, struct mcpx_run_op *q)
{
	const struct mcpx_run_who *who = mcpx_run_op_who(q);
	struct mcpx_buf b;
	bool first = true;
	cJSON *m = cJSON_CreateObject();
	size_t len = 0;
	char *body;

	mcpx_buf_init(&b, (size_t)1 << 30);
	if (!m || !cJSON_AddTrueToObject(m, "ok") || mcpx_buf_add(&b, "[", 1) < 0 ||
	    mcpx_upstreams_run_tools(o->ups, who->policy, who->grant, &b, &first) < 0 ||
	    add_functions(&b, who->policy, &first) < 0 || mcpx_buf_add(&b, "]", 1) < 0) {
		cJSON_Delete(m);
		mcpx_buf_free(&b);
		answer_error(q, "tool", NULL, "internal error: out of memory");
		return;
	}
	body = mcpx_buf_take(&b, &len);
	mcpx_run_op_answer(q, m, body, len);
}

/* The op "upstream": a call of an upstream's tool. */
static void on_upstream(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                        const char *body, size_t len, bool oversize)
{
	(void)name;
	op_call(arg, q, msg, body, len, oversize);
}

/* The op "upstream_tools": the tools this run may call. */
static void on_upstream_tools(void *arg, struct mcpx_run_op *q, const char *name, const cJSON *msg,
                              const char *body, size_t len, bool oversize)
{
	(void)name;
	(void)msg;
	(void)body;
	(void)len;
	(void)oversize;
	op_tools(arg, q);
}

static void on_cancel(void *arg, struct mcpx_run_op *q)
{
	struct mcpx_upstream_ops *o = arg;

	for (struct run_state *rs = o->runs; rs; rs = rs->next) {
		for (struct opcall *oc = rs->ops; oc; oc = oc->next) {
			if (oc->q == q) {
				mcpx_upstream_call_cancel(oc->call);
				opcall_free(oc);
				return;
			}
		}
	}
}

static void on_run_end(void *arg, const struct mcpx_run_who *who, void *run_data)
{
	struct mcpx_upstream_ops *o = arg;

	(void)run_data;
	for (struct run_state **pp = &o->runs; *pp; pp = &(*pp)->next) {
		struct run_state *rs = *pp;

		if (rs->who == who) {
			/* Its ops were cancelled first (run_channel.h). */
			while (rs->ops) {
				mcpx_upstream_call_cancel(rs->ops->call);
				opcall_free(rs->ops);
			}
			*pp = rs->next;
			free(rs);
			return;
		}
	}
}

struct mcpx_upstream_ops *mcpx_upstream_ops_new(struct mcpx_run_channel *rc,
                                                struct mcpx_upstreams *ups)
{
	struct mcpx_upstream_ops *o = calloc(1, sizeof(*o));
	/* One handler per op; the run's state (on_run_end) is the call op's. */
	const struct mcpx_run_op_handler call = {.name = "upstream",
	                                         .op = on_upstream,
	                                         .cancel = on_cancel,
	                                         .run_end = on_run_end,
	                                         .arg = o},
	                                 tools = {.name = "upstream_tools",
	                                          .op = on_upstream_tools,
	                                          .arg = o};

	if (!o)
		return NULL;
	o->ups = ups;
	o->rc = rc;
	if (mcpx_run_channel_add_op(rc, &call) < 0) {
		mcpx_upstream_ops_free(o);
		return NULL;
	}
	if (mcpx_run_channel_add_op(rc, &tools) < 0) {
		mcpx_upstream_ops_free(o);
		return NULL;
	}
	return o;
}

void mcpx_upstream_ops_free(struct mcpx_upstream_ops *o)
{
	if (!o)
		return;
	mcpx_run_channel_remove_op(o->rc, "upstream");
	mcpx_run_channel_remove_op(o->rc, "upstream_tools");
	while (o->runs) {
		struct run_state *rs = o->runs;

		while (rs->ops) {
			mcpx_upstream_call_cancel(rs->ops->call);
			opcall_free(rs->ops);
		}
		o->runs = rs->next;
		free(rs);
	}
	free(o);
}

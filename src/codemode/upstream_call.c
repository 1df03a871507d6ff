/*
 * upstream_call.c - a call of an upstream's tool, relayed: the checks before
 * anything is sent (the caller's grant or the gateway's expose, the tool's
 * globs, the list, the deadline), the tools/call request, its answer or the
 * reason it has none (sent again once on a new session, a timeout followed
 * by notifications/cancelled), cancellation, and one audit line and metric
 * per call, denied or not.
 *
 * It does not keep a run's budget (upstream_ops.c) nor a connection
 * (upstream_conn.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "metrics.h"
#include "upstream_internal.h"

static const char *outcome_of(const struct mcpx_upstream_answer *a)
{
	if (a->kind == MCPX_UPSTREAM_DENIED)
		return "denied";
	if (a->kind == MCPX_UPSTREAM_TOOL_ERROR)
		return "tool_error";
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a->result, "isError")) ? "tool_error"
	                                                                            : "ok";
}

static void audit_call(const struct mcpx_upstream_call *c, const char *status, bool allowed,
                       const char *reason)
{
	struct mcpx_audit_upstream a = {0};
	uint64_t ms = (mcpx_now_us() - c->started_us) / 1000u;

	a.run_id = c->gateway ? NULL : c->run_id;
	a.request_id = c->request_id;
	a.caller = c->caller;
	a.profile = c->profile[0] ? c->profile : NULL;
	a.upstream = c->conf->name;
	a.tool = c->tool;
	a.status = status;
	a.bytes_out = c->bytes_out;
	a.bytes_in = c->bytes_in;
	a.ms = ms;
	a.allowed = allowed;
	a.reason = reason;
	mcpx_audit_upstream_log(&a);
	mcpx_metrics_upstream_call(c->conf->name, allowed ? status : "denied",
	                           c->sent ? (double)ms / 1000.0 : -1);
}

static void unlink_call(struct mcpx_upstream_call *c)
{
	struct mcpx_upstream_call **lists[2] = {&c->mod->sent, &c->up->waiting};

	for (int i = 0; i < 2; i++) {
		for (struct mcpx_upstream_call **pp = lists[i]; *pp; pp = &(*pp)->next) {
			if (*pp == c) {
				*pp = c->next;
				return;
			}
		}
	}
}

void mcpx_up_call_free(struct mcpx_upstream_call *c)
{
	unlink_call(c);
	mcpx_upc_cancel(c->req);
	mcpx_up_unref(c->up);
	mcpx_policy_unref(c->policy);
	cJSON_Delete(c->args);
	free(c);
}

/* The call's one answer: audit, metrics, the callback, then it is freed. */
static void finish(struct mcpx_upstream_call *c, struct mcpx_upstream_answer *a, const char *status)
{
	const char *outcome = status ? status : outcome_of(a);

	audit_call(c, outcome, a->kind != MCPX_UPSTREAM_DENIED, a->reason);
	c->done(c->arg, a);
	mcpx_up_call_free(c);
}

void mcpx_up_call_fail(struct mcpx_upstream_call *c, enum mcpx_upstream_kind kind,
                       const char *reason, const char *status, const char *fmt, ...)
{
	struct mcpx_upstream_answer a = {.kind = kind, .reason = reason};
	char msg[MCPX_UPSTREAM_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	a.message = msg;
	finish(c, &a, status);
}

/* A request that did not bring an answer (res->kind not MCPX_UPC_OK): the
 * call is sent again once on a new session when the upstream forgot its
 * session, else it ends with the reason. */
static void call_not_answered(struct mcpx_upstream_call *c, struct mcpx_upc_result *res)
{
	struct upstream *up = c->up;

	switch (res->kind) {
	case MCPX_UPC_SESSION_GONE:
		if (!c->retried && !up->gone) {
			/* The upstream restarted: a new session, then once more. */
			c->retried = true;
			unlink_call(c);
			c->next = up->waiting;
			up->waiting = c;
			if (up->state != UP_CONNECTING)
				mcpx_up_connect(up);
			return;
		}
		mcpx_up_call_fail(c, MCPX_UPSTREAM_DENIED, "upstream_down", NULL, "upstream %s: %s",
		                  up->name, res->msg);
		return;
	case MCPX_UPC_TIMEOUT:
		mcpx_up_send_cancelled(up, c->conf, c->id, "timed out");
		mcpx_up_call_fail(
		    c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "timeout",
		    "%s.%s: no answer in %u s (timeout_s of upstream %s, or the run's "
		    "own deadline)",
		    up->name, c->tool, c->conf->timeout_s, up->name);
		return;
	case MCPX_UPC_TOO_LARGE:
		mcpx_up_call_fail(c, MCPX_UPSTREAM_DENIED, "too_large", NULL,
		                  "%s.%s: the answer is larger than %zu bytes (max_response_bytes)",
		                  up->name, c->tool, c->conf->max_response_bytes);
		return;
	case MCPX_UPC_PROTOCOL:
		mcpx_up_call_fail(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "failed", "%s.%s: %s",
		                  up->name, c->tool, res->msg);
		return;
	default: /* down, refused address, HTTP error */
		if (!up->gone && up->state == UP_READY && res->kind != MCPX_UPC_HTTP)
			mcpx_up_go_down(up, res->msg);
		mcpx_up_call_fail(c, MCPX_UPSTREAM_DENIED, "upstream_down", NULL, "upstream %s: %s",
		                  up->name, res->msg);
		return;
	}
}

static void call_done(void *arg, struct mcpx_upc_result *res)
{
	struct mcpx_upstream_call *c = arg;
	struct upstream *up = c->up;
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(res->response, "error");
	const cJSON *emsg = cJSON_GetObjectItemCaseSensitive(error, "message");
	struct mcpx_upstream_answer a = {.kind = MCPX_UPSTREAM_RESULT};

	c->req = NULL;
	c->bytes_in += res->bytes_in;
	c->bytes_out += res->bytes_out;
	if (res->list_changed)
		mcpx_up_tools_changed(up);
	if (res->kind != MCPX_UPC_OK) {
		call_not_answered(c, res);
		return;
	}
	if (cJSON_IsObject(error)) {
		mcpx_up_call_fail(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "tool_error", "%s.%s: %s",
		                  up->name, c->tool,
		                  cJSON_IsString(emsg) ? emsg->valuestring : "JSON-RPC error");
		return;
	}
	a.result = cJSON_DetachItemFromObjectCaseSensitive(res->response, "result");
	if (!cJSON_IsObject(a.result)) {
		cJSON_Delete(a.result);
		mcpx_up_call_fail(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "failed",
		                  "%s.%s: the answer has no result", up->name, c->tool);
		return;
	}
	finish(c, &a, NULL);
	cJSON_Delete(a.result);
}

void mcpx_up_call_refuse(struct mcpx_upstream_call *c, const char *msg)
{
	mcpx_up_call_fail(c, MCPX_UPSTREAM_DENIED, "upstream_down", NULL, "%s", msg);
}

/* A message of the upstream before the call's answer: its progress of this
 * call goes to the caller that asked for it. */
static void call_message(void *arg, const cJSON *msg)
{
	struct mcpx_upstream_call *c = arg;
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(params, "progressToken");
	const cJSON *progress = cJSON_GetObjectItemCaseSensitive(params, "progress");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(params, "message");

	if (!c->progress || !cJSON_IsString(method) ||
	    strcmp(method->valuestring, "notifications/progress") != 0 || !cJSON_IsNumber(token) ||
	    token->valuedouble != c->id || !cJSON_IsNumber(progress))
		return;
	c->progress(c->progress_arg, progress->valuedouble,
	            cJSON_IsString(text) ? text->valuestring : NULL);
}

/* params of tools/call: the name, the arguments, and a progressToken (the
 * request's own id) when the caller wants progress. */
static cJSON *call_params(const struct mcpx_upstream_call *c)
{
	cJSON *params = cJSON_CreateObject(), *meta;

	if (!params || !cJSON_AddStringToObject(params, "name", c->tool) ||
	    !cJSON_AddItemReferenceToObject(params, "arguments", c->args))
		goto fail;
	if (c->progress && (!(meta = cJSON_AddObjectToObject(params, "_meta")) ||
	                    !cJSON_AddNumberToObject(meta, "progressToken", c->id)))
		goto fail;
	return params;
fail:
	cJSON_Delete(params);
	return NULL;
}

void mcpx_up_call_send(struct mcpx_upstream_call *c)
{
	struct mcpx_upc_target t;
	uint64_t now = mcpx_now_us();
	char *body = NULL;
	cJSON *params;

	if (c->deadline_us <= now) {
		mcpx_up_call_fail(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "timeout",
		                  "%s.%s: no time left for the call", c->up->name, c->tool);
		return;
	}
	c->id = c->mod->next_id++;
	if ((params = call_params(c)))
		body = mcpx_up_message(c->id, "tools/call", params);
	mcpx_up_target(c->up, c->conf, (c->deadline_us - now + 999u) / 1000u, &t);
	t.on_message = call_message;
	t.message_arg = c;
	c->sent = true;
	if (!body || mcpx_upc_post(c->mod->http, &t, body, c->id, call_done, c, &c->req) < 0) {
		free(body);
		mcpx_up_call_fail(c, MCPX_UPSTREAM_TOOL_ERROR, NULL, "failed", "out of memory");
		return;
	}
	free(body);
	c->next = c->mod->sent;
	c->mod->sent = c;
}

const struct mcpx_upstream_conf *mcpx_upstream_of(const struct mcpx_policy *policy,
                                                  const char *name, const char **tool)
{
	const char *dot = strchr(name, '.');
	const struct mcpx_upstream_conf *conf;

	if (!dot || !dot[1])
		return NULL;
	conf = mcpx_policy_upstream(policy, name, (size_t)(dot - name));
	if (conf && tool)
		*tool = dot + 1;
	return conf;
}

/* The name of who's profile under the policy its call is judged by, for
 * the audit line; "" for none. */
static const char *profile_of(const struct mcpx_upstream_caller *who)
{
	const struct mcpx_profile *pr = mcpx_policy_profile_for(who->policy, who->caller);

	return pr ? pr->name : "";
}

static void copy_caller(struct mcpx_upstream_call *c, const struct mcpx_upstream_caller *who)
{
	snprintf(c->run_id, sizeof(c->run_id), "%s", who->run_id ? who->run_id : "");
	snprintf(c->request_id, sizeof(c->request_id), "%s",
	         who->request_id ? who->request_id : "");
	snprintf(c->caller, sizeof(c->caller), "%s", who->caller ? who->caller : "");
	snprintf(c->profile, sizeof(c->profile), "%s", profile_of(who));
	c->gateway = who->run_id == NULL;
	c->progress = who->progress;
	c->progress_arg = who->progress_arg;
}

void mcpx_upstream_audit_denied(const struct mcpx_upstream_caller *who, const char *upstream,
                                const char *tool, const char *reason)
{
	struct mcpx_audit_upstream a = {0};

	a.run_id = who->run_id;
	a.request_id = who->request_id;
	a.caller = who->caller;
	a.profile = profile_of(who)[0] ? profile_of(who) : NULL;
	a.upstream = upstream;
	a.tool = tool;
	a.allowed = false;
	a.reason = reason;
	mcpx_audit_upstream_log(&a);
	mcpx_metrics_upstream_call(upstream, "denied", -1);
}

/* The checks before anything is sent: NULL when c may go, else the
 * reason with msg set. */
static const char *refusal(const struct mcpx_upstream_caller *who,
                           const struct mcpx_upstream_conf *conf, const struct upstream *up,
                           const char *tool, char *msg, size_t msglen)
{
	if (who->grant ? !mcpx_egress_grant_has_upstream(who->grant, conf) : !conf->expose) {
		snprintf(msg, msglen, "upstream %s is not one this %s may call", conf->name,
		         who->grant ? "run" : "client");
		return "not_allowed";
	}
	if (!mcpx_upstream_tool_allowed(conf, tool)) {
		snprintf(msg, msglen, "%s.%s is not allowed by the policy (tools of upstream %s)",
		         conf->name, mcpx_shown_name(tool, 128), conf->name);
		return "not_allowed";
	}
	if (!up || strcmp(up->conf->url, conf->url) != 0) {
		snprintf(msg, msglen, "upstream %s was changed by a policy reload; call again",
		         conf->name);
		return "upstream_down";
	}
	if (up->state == UP_DOWN) {
		snprintf(msg, msglen, "upstream %s is down: %s", conf->name, up->down_why);
		return "upstream_down";
	}
	if (up->tools && !mcpx_up_catalog_has(up->tools, tool)) {
		snprintf(msg, msglen, "upstream %s has no tool named %s", conf->name, mcpx_shown_name(tool, 128));
		return "no_tool";
	}
	if (who->deadline_us && who->deadline_us <= mcpx_now_us()) {
		snprintf(msg, msglen, "the calling run has no time left");
		return "deadline";
	}
	return NULL;
}

int mcpx_upstream_call_start(struct mcpx_upstreams *u, const struct mcpx_upstream_caller *who,
                             const char *name, const cJSON *args, mcpx_upstream_done_fn done,
                             void *arg, struct mcpx_upstream_call **out, const char **reason,
                             char *msg, size_t msglen)
{
	const char *tool = NULL;
	const struct mcpx_upstream_conf *conf = mcpx_upstream_of(who->policy, name, &tool);
	struct upstream *up;
	struct mcpx_upstream_call *c;
	uint64_t deadline;

	*out = NULL;
	if (!conf)
		return -ENOENT;
	up = mcpx_up_find(u, conf->name);
	*reason = refusal(who, conf, up, tool, msg, msglen);
	if (*reason) {
		mcpx_upstream_audit_denied(who, conf->name, tool, *reason);
		return -EACCES;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->args = args ? cJSON_Duplicate(args, true) : cJSON_CreateObject())) {
		free(c);
		return -ENOMEM;
	}
	c->mod = u;
	c->up = up;
	up->refs++;
	c->policy = mcpx_policy_ref(who->policy);
	c->conf = conf;
	snprintf(c->tool, sizeof(c->tool), "%s", tool);
	copy_caller(c, who);
	c->done = done;
	c->arg = arg;
	c->started_us = mcpx_now_us();
	deadline = c->started_us + (uint64_t)conf->timeout_s * 1000000u;
	c->deadline_us =
	    who->deadline_us && who->deadline_us < deadline ? who->deadline_us : deadline;
	*out = c;
	if (up->state == UP_READY) {
		mcpx_up_call_send(c);
	} else {
		c->next = up->waiting;
		up->waiting = c;
	}
	return 0;
}

void mcpx_upstream_call_cancel(struct mcpx_upstream_call *c)
{
	if (!c)
		return;
	if (c->req) {
		mcpx_upc_cancel(c->req);
		c->req = NULL;
		mcpx_up_send_cancelled(c->up, c->conf, c->id, "the caller went away");
	}
	audit_call(c, "cancelled", true, NULL);
	mcpx_up_call_free(c);
}

/*
 * audit.c - renders the per-execution and per-egress-request audit records
 * as one JSON line each.
 *
 * Only the fields of the two record structs exist here, and none of them can
 * hold code, stdin, output, a query string, a header value or a body;
 * request ids, caller names and paths are escaped and bounded because the
 * client (or run code) chooses them.
 */
#include "audit.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "caller.h"
#include "log.h"
#include "utf8.h"

static void add_cut_string(cJSON *o, const char *name, const char *s, size_t max)
{
	char buf[MCPX_CALLER_MAX], *clean;
	size_t n;

	if (!s) {
		cJSON_AddNullToObject(o, name);
		return;
	}
	if (max >= sizeof(buf))
		max = sizeof(buf) - 1;
	/* Client-chosen strings are cut so one request cannot flood the log,
	 * and kept valid UTF-8 (a cut may split a character). */
	strncpy(buf, s, max);
	buf[max] = '\0';
	clean = mcpx_utf8_sanitize(buf, strlen(buf), &n);
	cJSON_AddStringToObject(o, name, clean ? clean : "");
	free(clean);
}

static void add_bounded_string(cJSON *o, const char *name, const char *s)
{
	add_cut_string(o, name, s, 128);
}

/* A record's common head: time, level, message and kind. */
static cJSON *record(const char *msg, const char *kind)
{
	char ts[40];
	struct timespec now;
	struct tm tm;
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(o, "ts", ts);
	cJSON_AddStringToObject(o, "level", "info");
	cJSON_AddStringToObject(o, "msg", msg);
	cJSON_AddStringToObject(o, "audit", kind);
	return o;
}

static void emit(cJSON *o)
{
	char *line = cJSON_PrintUnformatted(o);

	if (line) {
		mcpx_log_raw_line(line, strlen(line));
		free(line);
	}
	cJSON_Delete(o);
}

static void add_exec(cJSON *o, const struct mcpx_audit_rec *r)
{
	cJSON_AddStringToObject(o, "tool", "exec");
	cJSON_AddStringToObject(o, "code_sha256", r->code_sha256);
	cJSON_AddNumberToObject(o, "code_bytes", (double)r->code_bytes);
	cJSON_AddNumberToObject(o, "stdin_bytes", (double)r->stdin_bytes);
	cJSON_AddStringToObject(o, "language", r->language ? r->language : "python");
}

/* The function's name comes from the policy, the rest from the server. */
static void add_function(cJSON *o, const struct mcpx_audit_rec *r)
{
	add_bounded_string(o, "tool", r->tool);
	add_bounded_string(o, "arguments_sha256", r->args_sha256);
	cJSON_AddNumberToObject(o, "arguments_bytes", (double)r->args_bytes);
	add_bounded_string(o, "source_sha256", r->source_sha256);
	cJSON_AddNumberToObject(o, "depth", r->depth);
	add_bounded_string(o, "parent_run_id", r->parent_run_id);
}

struct mcpx_audit_line {
	cJSON *o;
};

struct mcpx_audit_line *mcpx_audit_prepare(const struct mcpx_audit_rec *r)
{
	struct mcpx_audit_line *l = calloc(1, sizeof(*l));
	cJSON *o = record("execution", "exec");

	if (!l || !o) {
		free(l);
		cJSON_Delete(o);
		return NULL;
	}
	l->o = o;
	if (r->run_id)
		cJSON_AddStringToObject(o, "run_id", r->run_id);
	add_bounded_string(o, "request_id", r->request_id);
	if (r->task_id)
		add_bounded_string(o, "task_id", r->task_id);
	add_cut_string(o, "caller", r->caller, MCPX_CALLER_MAX); /* a ServiceAccount name is long */
	add_bounded_string(o, "profile", r->profile);
	if (r->client)
		add_bounded_string(o, "client", r->client);
	if (r->tool)
		add_function(o, r);
	else
		add_exec(o, r);
	cJSON_AddStringToObject(o, "status", r->status ? r->status : "unknown");
	cJSON_AddNumberToObject(o, "exit_code", r->exit_code);
	if (r->signal)
		cJSON_AddNumberToObject(o, "signal", r->signal);
	else
		cJSON_AddNullToObject(o, "signal");
	add_bounded_string(o, "limit", r->limit);
	cJSON_AddNumberToObject(o, "wall_ms", (double)r->wall_ms);
	cJSON_AddNumberToObject(o, "cpu_ms", (double)r->cpu_ms);
	cJSON_AddNumberToObject(o, "max_rss_kb", (double)r->max_rss_kb);
	cJSON_AddNumberToObject(o, "queue_wait_ms", (double)r->queue_wait_ms);
	cJSON_AddNumberToObject(o, "output_bytes", (double)r->output_bytes);
	cJSON_AddBoolToObject(o, "truncated", r->truncated);
	cJSON_AddBoolToObject(o, "warm", r->warm);
	return l;
}

void mcpx_audit_line_workspace(struct mcpx_audit_line *l, const struct mcpx_audit_workspace *w)
{
	if (!l || !w || !w->name)
		return;
	add_bounded_string(l->o, "workspace", w->name);
	cJSON_AddBoolToObject(l->o, "workspace_restored", w->restored);
	cJSON_AddNumberToObject(l->o, "workspace_restored_bytes", (double)w->restored_bytes);
	cJSON_AddBoolToObject(l->o, "workspace_saved", w->saved);
	cJSON_AddNumberToObject(l->o, "workspace_saved_bytes", (double)w->saved_bytes);
	if (w->error)
		add_cut_string(l->o, "workspace_error", w->error, 256);
}

void mcpx_audit_line_emit(struct mcpx_audit_line *l)
{
	if (!l)
		return;
	emit(l->o);
	free(l);
}

void mcpx_audit_log(const struct mcpx_audit_rec *r)
{
	mcpx_audit_line_emit(mcpx_audit_prepare(r));
}

void mcpx_audit_egress_log(const struct mcpx_audit_egress *r)
{
	cJSON *o = record("egress request", "egress");

	if (!o)
		return;
	add_bounded_string(o, "run_id", r->run_id);
	add_bounded_string(o, "request_id", r->request_id);
	add_cut_string(o, "caller", r->caller, MCPX_CALLER_MAX); /* a ServiceAccount name is long */
	add_bounded_string(o, "profile", r->profile);
	add_bounded_string(o, "rule", r->rule);
	add_bounded_string(o, "method", r->method);
	add_cut_string(o, "origin", r->origin, 256);
	add_cut_string(o, "path", r->path, 256);
	cJSON_AddNumberToObject(o, "hop", r->hop);
	if (r->status)
		cJSON_AddNumberToObject(o, "status", r->status);
	else
		cJSON_AddNullToObject(o, "status");
	cJSON_AddNumberToObject(o, "bytes_out", (double)r->bytes_out);
	cJSON_AddNumberToObject(o, "bytes_in", (double)r->bytes_in);
	cJSON_AddNumberToObject(o, "ms", (double)r->ms);
	cJSON_AddStringToObject(o, "decision", r->allowed ? "allowed" : "denied");
	add_bounded_string(o, "reason", r->reason);
	add_bounded_string(o, "result", r->result);
	emit(o);
}

void mcpx_audit_upstream_log(const struct mcpx_audit_upstream *r)
{
	cJSON *o = record("upstream call", "upstream");

	if (!o)
		return;
	add_bounded_string(o, "run_id", r->run_id);
	add_bounded_string(o, "request_id", r->request_id);
	add_cut_string(o, "caller", r->caller, MCPX_CALLER_MAX); /* a ServiceAccount name is long */
	add_bounded_string(o, "profile", r->profile);
	add_bounded_string(o, "upstream", r->upstream);
	add_cut_string(o, "tool", r->tool, 128);
	add_bounded_string(o, "status", r->status);
	cJSON_AddNumberToObject(o, "bytes_out", (double)r->bytes_out);
	cJSON_AddNumberToObject(o, "bytes_in", (double)r->bytes_in);
	cJSON_AddNumberToObject(o, "ms", (double)r->ms);
	cJSON_AddStringToObject(o, "decision", r->allowed ? "allowed" : "denied");
	add_bounded_string(o, "reason", r->reason);
	emit(o);
}

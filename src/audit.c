/*
 * audit.c - renders the per-execution audit record as one JSON line.
 *
 * Only the fields of struct mcpx_audit_rec exist here, and none of them can
 * hold code, stdin or output; request ids and caller names are escaped and
 * bounded because the client chooses them.
 */
#include "audit.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static void add_bounded_string(cJSON *o, const char *name, const char *s)
{
	char buf[129];
	if (!s) {
		cJSON_AddNullToObject(o, name);
		return;
	}
	/* Client-chosen strings are cut so one request cannot flood the log. */
	strncpy(buf, s, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = '\0';
	cJSON_AddStringToObject(o, name, buf);
}

void mcpx_audit_log(const struct mcpx_audit_rec *r)
{
	char ts[40];
	struct timespec now;
	struct tm tm;
	cJSON *o = cJSON_CreateObject();
	char *line;

	if (!o)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(o, "ts", ts);
	cJSON_AddStringToObject(o, "level", "info");
	cJSON_AddStringToObject(o, "msg", "execution");
	cJSON_AddStringToObject(o, "audit", "exec");
	add_bounded_string(o, "request_id", r->request_id);
	add_bounded_string(o, "caller", r->caller);
	cJSON_AddStringToObject(o, "code_sha256", r->code_sha256);
	cJSON_AddNumberToObject(o, "code_bytes", (double)r->code_bytes);
	cJSON_AddNumberToObject(o, "stdin_bytes", (double)r->stdin_bytes);
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
	line = cJSON_PrintUnformatted(o);
	if (line) {
		mcpx_log_raw_line(line, strlen(line));
		free(line);
	}
	cJSON_Delete(o);
}

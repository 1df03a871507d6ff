/*
 * metrics.h - the process's Prometheus metrics, rendered as text.
 *
 * One registry per process (metrics are process-wide by nature). Modules
 * report events; /metrics renders them. Counters are plain integers: the
 * process is single-threaded.
 */
#ifndef MCPX_METRICS_H
#define MCPX_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* outcome: "ok", "error_exit", "timeout", "killed", "cancelled", "failed",
 * "expired", "shutdown", "busy". limit may be NULL. */
void mcpx_metrics_execution(const char *outcome, const char *limit, double duration_s,
                            double queue_wait_s);
/* One tools/call (or mcpx.call) of tool ("exec" or a function's name):
 * outcome "ok", "invalid_arguments", "raised" (the function raised),
 * "bad_result" (its result broke its output schema), "failed" (a limit, a
 * crash, the server), "busy" (refused: queue full or draining) or
 * "cancelled". */
void mcpx_metrics_tool_call(const char *tool, const char *outcome);
/* One run (or refusal) of a caller whose profile is profile (NULL or "":
 * none), by outcome: mcpx_metrics_execution's, or "rate_limited". Counted
 * by profile, never by caller, so the series stay as few as the profiles
 * (at most 64 in a policy; names beyond the table count as "other"). */
void mcpx_metrics_profile_run(const char *profile, const char *outcome);
void mcpx_metrics_http_response(int status);
/* One egress request (broker.h): rule (NULL when none matched), outcome
 * "ok", "failed", "cancelled" or "denied", and for "denied" the reason. */
void mcpx_metrics_egress(const char *rule, const char *outcome, const char *reason);
/* One call of an upstream's tool: outcome "ok", "tool_error", "denied",
 * "timeout", "failed" or "cancelled"; seconds < 0 for a call never sent. */
void mcpx_metrics_upstream_call(const char *upstream, const char *outcome, double seconds);
/* The up gauge of an upstream: 1 up, 0 down, -1 gone from the policy. */
void mcpx_metrics_upstream_up(const char *upstream, int up);
/* The server closed a connection early. reason: "header_timeout",
 * "body_timeout", "evicted", "refused", "peer_closed", "pipelined",
 * "bad_head", "head_too_large". */
void mcpx_metrics_http_conn_closed(const char *reason);
/* A ServiceAccount token that needed the API server: admitted, refused,
 * unavailable (reviews sent), not_jwt, limited_address, limited_total,
 * limited_in_flight (not sent). */
void mcpx_metrics_tokenreview(const char *outcome);
/* Open HTTP connections (a gauge the server keeps current). */
void mcpx_metrics_http_connections(unsigned long long open);
void mcpx_metrics_set_layer(const char *layer, int active);
void mcpx_metrics_set_info(const char *key, const char *value); /* e.g. warm mode */
/* The fork server's current zygote (0: none), and one replaced, with why:
 * "runs", "age" or "died" (others count as "other"). */
void mcpx_metrics_set_zygote(long pid);
void mcpx_metrics_zygote_replaced(const char *reason);

/* The workspace and task store (store.h): one operation on store ("dir" or
 * "redis"), op (get, put, delete, list, record_get, record_put,
 * record_delete, lease_acquire, lease_renew, lease_release, lease_peek),
 * outcome (ok, not_found, conflict, too_large, quota, timeout,
 * unavailable, shutdown, error), how long it took, and the blob bytes a
 * get or put moved. */
void mcpx_metrics_store_op(const char *store, const char *op, const char *outcome, double seconds,
                           uint64_t bytes);
/* What the store holds now: unexpired objects and their bytes. */
void mcpx_metrics_store_stored(const char *store, uint64_t objects, uint64_t bytes);
/* 1 while the store answers, 0 while it is unreachable. */
void mcpx_metrics_store_up(const char *store, int up);
struct mcpx_buf;
/* Appends the store's series (metrics_store.c); nothing before a store
 * reported anything. Returns 0 or the buffer's error. */
int mcpx_metrics_store_render(struct mcpx_buf *b);

/* Appends the calls' series (metrics_calls.c: tools, profiles, egress,
 * upstreams) where metrics.c's render puts them. */
struct mcpx_prom_buf;
void mcpx_metrics_calls_render(struct mcpx_prom_buf *b);

/* exec's workspace calls (exec_workspace.h, metrics_workspace.c): how one
 * call's restore ended ("restored", "new", "busy": the lease wait ran out,
 * "refused": the archive or its size, "error": the store), with how long it
 * waited for the lease (< 0: not counted); and how its save ended ("saved",
 * "deleted": left empty, "too_large", "quota", "lease_lost", "error",
 * "not_run"). */
void mcpx_metrics_workspace_restore(const char *outcome, double lease_wait_s);
void mcpx_metrics_workspace_save(const char *outcome);
int mcpx_metrics_workspace_render(struct mcpx_buf *b);

/* Gauges read at render time. */
struct mcpx_metrics_gauges {
	size_t queue_depth;
	int running;
	size_t active_sessions;
	size_t sse_streams;
	int ready;
	int draining;
};

/* Renders the text exposition format into a malloc'd string (caller frees). */
char *mcpx_metrics_render(const struct mcpx_metrics_gauges *g, size_t *len);

/* The same for a scrape of /metrics: with the event loop's own series
 * (loop_guard.h), whose longest stall starts a new window with each
 * scrape. */
char *mcpx_metrics_render_scrape(const struct mcpx_metrics_gauges *g, size_t *len);

#endif

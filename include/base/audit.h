/*
 * audit.h - one JSON line per execution, and one per egress request, on
 * stderr, metadata only.
 *
 * The record carries who asked (request id, caller), what was run only as a
 * SHA-256 and a size, and how it ended. Code, stdin, output and header values
 * never reach it: the struct has no field that could carry them. A
 * function's run (functions.h) is named by its tool, its arguments by
 * their SHA-256 and size, its code by its source's SHA-256.
 */
#ifndef MCPX_AUDIT_H
#define MCPX_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mcpx_audit_rec {
	const char *request_id;
	const char *task_id; /* the MCP task the run is for (tasks.h); NULL: a direct call */
	const char *caller;  /* who (caller.h) */
	const char *profile; /* the caller's profile; NULL: none */
	const char *client;  /* the transport's view: a session hash and address; may be NULL */
	char code_sha256[65];
	size_t code_bytes;
	size_t stdin_bytes;
	const char *language; /* exec's: "python", "bash", "javascript"; NULL: python */
	const char
	    *status; /* "ok", "timeout", "killed", "cancelled", "failed", "expired", "shutdown" */
	int exit_code;
	int signal;
	const char *limit;
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t max_rss_kb;
	uint64_t queue_wait_ms;
	size_t output_bytes;
	bool truncated;
	bool warm;
	const char *run_id; /* joins the run's egress lines; NULL when unknown */
	/* A function's run: tool is its name (NULL: exec, whose code the
	 * code_* fields describe). */
	const char *tool;
	const char *args_sha256;
	size_t args_bytes;
	const char *source_sha256;
	unsigned depth;            /* 0 for a tools/call, 1.. for mcpx.call */
	const char *parent_run_id; /* a nested call: its caller's run */
};

void mcpx_audit_log(const struct mcpx_audit_rec *rec);

/* A call with a workspace logs its execution line once the workspace is
 * saved (or not): the record is rendered when the run ends (prepare copies
 * everything it needs), the workspace's part added, then it is logged and
 * freed (emit). NULL (out of memory) is accepted and logs nothing. */
struct mcpx_audit_line;
struct mcpx_audit_workspace {
	const char *name;
	bool restored; /* the run started with the workspace's saved version */
	uint64_t restored_bytes;
	bool saved; /* the run's version is the workspace's now */
	uint64_t saved_bytes;
	const char *error; /* why it was not saved; NULL when saved */
};
struct mcpx_audit_line *mcpx_audit_prepare(const struct mcpx_audit_rec *rec);
void mcpx_audit_line_workspace(struct mcpx_audit_line *l, const struct mcpx_audit_workspace *w);
void mcpx_audit_line_emit(struct mcpx_audit_line *l);

/* One request of a run through the egress broker (broker.h): where it
 * went (origin and path only: never the query, a header value or a body),
 * what was decided and how it ended. */
struct mcpx_audit_egress {
	const char *run_id;
	const char *request_id;
	const char *caller;
	const char *profile; /* NULL: none */
	const char *rule;    /* NULL when no rule matched */
	const char *method;
	const char *origin; /* "scheme://host:port", or NULL for an unparsable URL */
	const char *path;   /* without the query */
	unsigned hop;       /* 0, or the redirect this request followed */
	int status;         /* HTTP status, 0 when there was no response */
	uint64_t bytes_out; /* request body sent */
	uint64_t bytes_in;  /* response body received */
	uint64_t ms;
	bool allowed;
	const char *reason; /* denied: why (broker.h); allowed: NULL */
	const char *result; /* allowed: "ok", "failed", "cancelled" */
};

void mcpx_audit_egress_log(const struct mcpx_audit_egress *rec);

/* One call of an upstream MCP server's tool (upstream.h), from a run or
 * through the gateway: never its arguments or its result. status: "ok",
 * "tool_error", "timeout", "failed", "cancelled"; NULL when denied. */
struct mcpx_audit_upstream {
	const char *run_id; /* NULL for a gateway call */
	const char *request_id;
	const char *caller;
	const char *profile; /* the caller's profile, NULL for none */
	const char *upstream;
	const char *tool;
	const char *status;
	uint64_t bytes_out; /* the arguments sent */
	uint64_t bytes_in;  /* the answer received */
	uint64_t ms;
	bool allowed;
	const char *reason; /* denied: why; else NULL */
};

void mcpx_audit_upstream_log(const struct mcpx_audit_upstream *rec);

#endif

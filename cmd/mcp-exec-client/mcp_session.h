/*
 * mcp_session.h - one MCP session over Streamable HTTP, as the exec tool's
 * caller needs it: initialize, run code with the `exec` tool, end.
 *
 * It turns HTTP statuses, JSON-RPC errors and tool errors into the client's
 * error classes (below) with a one-line message, and decodes the exec
 * result. It does not print, choose exit codes or read files; the commands
 * do.
 *
 * Errors (negative errno, message in the caller's struct mcpx_err):
 *   -ECONNREFUSED, -ECONNRESET, -ETIMEDOUT, -EINVAL  transport (http_client.h)
 *   -EACCES     the server refused our credentials (401, 403)
 *   -EBUSY      try again later: the tool said busy or shutting down, or 503
 *   -EREMOTEIO  the tool or the server rejected the call (e.g. bad input)
 *   -E2BIG      the request is larger than the server accepts (413)
 *   -EPROTO     the server did not speak MCP as expected
 *   -ENOMEM
 */
#ifndef MCPX_CLIENT_MCP_SESSION_H
#define MCPX_CLIENT_MCP_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "http_client.h"

#define MCP_CLIENT_PROTOCOL "2025-11-25"

struct mcp_session {
	struct hc *http;  /* borrowed */
	const char *url;  /* borrowed: the /mcp endpoint */
	char id[256];     /* Mcp-Session-Id; "" when the server assigned none */
	char version[32]; /* negotiated protocol version */
	long next_id;
};

struct mcp_exec_req {
	const char *code;       /* UTF-8 without NUL bytes */
	const char *stdin_data; /* likewise, or NULL for no stdin */
	unsigned timeout_s;     /* 0: the server's default */
	const char *language;   /* exec's `language`, or NULL (Python) */
	long http_timeout_s;    /* how long to wait for the reply */
	bool progress;          /* ask for progress: the reply streams as SSE */
	hc_notify_fn on_notify; /* optional: notifications while it runs */
	void *arg;
};

/* The decoded structuredContent of a finished run. */
struct mcp_exec_result {
	char *out; /* exact bytes (may hold NULs); freed by mcp_exec_result_free */
	size_t out_len;
	char *err;
	size_t err_len;
	int exit_code;        /* -1 when timed out or killed by a signal */
	char signal_name[16]; /* "SIGKILL", or "" */
	bool timed_out;
	bool truncated;
	char limit[16]; /* the limit that ended or marked the run, or "" */
	double duration_ms;
};

/* Initializes a session on url through http and sends
 * notifications/initialized. */
int mcp_session_open(struct mcp_session *s, struct hc *http, const char *url, struct mcpx_err *err);

/* logging/setLevel, so the server relays "queued" / "started" messages. */
int mcp_session_set_log_level(struct mcp_session *s, const char *level, struct mcpx_err *err);

/* Runs code with the exec tool. A run that finished, whatever its exit code,
 * returns 0 and fills res; tool errors return -EBUSY or -EREMOTEIO. A session
 * the server no longer knows (404) is re-initialized once. */
int mcp_session_exec(struct mcp_session *s, const struct mcp_exec_req *req,
                     struct mcp_exec_result *res, struct mcpx_err *err);

/* Calls any tool with args (copied; NULL for none) and hands back the exact
 * bytes of the result's first text block ("" when it has none) in *text,
 * which the caller frees. For load generation against other MCP servers;
 * tool errors return -EBUSY or -EREMOTEIO as for exec. */
int mcp_session_call_tool(struct mcp_session *s, const char *name, const cJSON *args,
                          long http_timeout_s, char **text, size_t *text_len, struct mcpx_err *err);

/* Ends the session with DELETE; best effort, errors are ignored because the
 * server expires sessions anyway. */
void mcp_session_close(struct mcp_session *s);

void mcp_exec_result_free(struct mcp_exec_result *res);

/* Server text as one line for a message: control characters, which could
 * drive the user's terminal, become spaces; cut to cap - 1 bytes. */
void mcp_printable(const char *in, char *out, size_t cap);

#endif
